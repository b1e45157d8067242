"""A write's check of one meeting (``rule_check._check_event``): ``rule_verdict.keeps_one``
says what ``rule_verdict.passes`` says, and the meetings overlapping ``rule_verdict.reach``
alone (what the check reads) give the same verdict, and the same broken rules and words, as
all of them: hypothesis draws rule sets, meetings near the time asked (across midnight and the
DST days of Berlin too) and the time. Pure: no database."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from calendar_service.calendar.events.busy import Busy
from calendar_service.calendar.rule_verdict import Meetings, broken, keeps_one, passes, reach
from calendar_service.calendar.rules import WEEKDAYS, parsed, read_rules
from calendar_service.platform.timeutil import utc_text
from tests.core.calendar.test_rules_free_time import rule_sets
from tests.core.calendar.test_rules_slot_filter import BERLIN, NOW, QUARTER

ASKED = "asked"


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, list[Busy], datetime, datetime]:
    rules = draw(rule_sets())
    if draw(st.booleans()):  # working hours across midnight, joined with the next day's
        rules["workingHours"] = {
            d: [{"start": "00:00", "end": "02:00"}, {"start": "20:00", "end": "24:00"}]
            for d in draw(st.sets(st.sampled_from(WEEKDAYS), min_size=1))
        }
    start = (
        NOW
        + draw(st.integers(0, 14 * 96)) * QUARTER
        + draw(st.sampled_from([0, 7])) * (QUARTER / 15)
    )
    end = start + draw(st.integers(0, 120)) * QUARTER
    items: list[Busy] = [("c", utc_text(start), utc_text(end), ASKED, "t")]  # the write's own
    for i in range(draw(st.integers(0, 25))):
        at = start + draw(st.integers(-3 * 96, 3 * 96)) * QUARTER
        length = draw(st.integers(0, 40)) * QUARTER
        items.append(("c", utc_text(at), utc_text(at + length), f"m{i}", "t"))
    return parsed(read_rules(rules)), items, start, end


@settings(max_examples=500, deadline=None)
@given(cases())
def test_keeps_one_is_passes(case: tuple[Any, list[Busy], datetime, datetime]) -> None:
    rules, items, start, end = case
    everything = Meetings(items)
    low, high = reach(rules, BERLIN, start, end)
    read = [b for b in items if b[2] > utc_text(low) and b[1] < utc_text(high)]
    verdict = passes(rules, BERLIN, start, end, now=NOW, meetings=everything, skip=ASKED)
    assert keeps_one(rules, BERLIN, start, end, now=NOW, items=items, skip=ASKED) == verdict
    assert keeps_one(rules, BERLIN, start, end, now=NOW, items=read, skip=ASKED) == verdict
    why = broken(rules, BERLIN, start, end, now=NOW, meetings=everything, skip=ASKED)
    assert (not why) == verdict
    assert broken(rules, BERLIN, start, end, now=NOW, meetings=Meetings(read), skip=ASKED) == why


def test_reach_is_the_local_days_and_the_buffer() -> None:
    rules = parsed(read_rules({"bufferMinutes": 30}))
    start = datetime(2026, 3, 28, 23, 45, tzinfo=BERLIN)  # to 01:15 on the spring change's day
    low, high = reach(rules, BERLIN, start, start + timedelta(minutes=90))
    assert low == datetime(2026, 3, 28, tzinfo=BERLIN)
    assert high == datetime(2026, 3, 30, tzinfo=BERLIN)  # a day of 23 hours
    assert high - low == timedelta(hours=47)
