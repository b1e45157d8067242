"""A write's check of one meeting (``rule_check._check_event``): ``rule_verdict.keeps_one``
says what ``rule_verdict.passes`` says, and the meetings overlapping ``rule_verdict.reach``
alone (what the check reads) give the same verdict, and the same broken rules and words, as
all of them: hypothesis draws rule sets, meetings near the time asked (across midnight and the
DST days of Berlin too) and the time. Pure: no database."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calendar_service.calendar import calendar_edits
from calendar_service.calendar.events.busy import Busy
from calendar_service.calendar.rule_verdict import Meetings, broken, keeps_one, passes, reach
from calendar_service.calendar.rules import WEEKDAYS, parsed, read_rules
from calendar_service.platform.db import Database
from calendar_service.platform.errors import RuleViolation
from calendar_service.platform.timeutil import utc_text, utcnow
from tests.core.calendar.test_rules import Case, create, local, monday, setup, span
from tests.core.calendar.test_rules_free_time import rule_sets
from tests.core.calendar.test_rules_slot_filter import BERLIN, NOW, QUARTER
from tests.support import Factory

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


def _rules(value: dict[str, Any]) -> Case:
    return Case(
        "",
        value,
        lambda m: [],
        lambda m: span(m, "10:00", "11:00"),
        lambda m: span(m, "10:00", "11:00"),
    )


async def test_a_meeting_longer_than_the_longest_last_read_counts(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, _rules({"bufferMinutes": 15}))
    m = monday()
    assert (await create(s, span(m, "10:00", "11:00"))).status == 201  # the longest: an hour
    s.add((local(m, "12:00", -3), local(m, "09:00", 3)))  # Friday noon to Thursday 9:00, longer
    with pytest.raises(RuleViolation) as refused:
        await create(s, span(m, "10:00", "11:00", days=1))
    assert [e["rule"] for e in refused.value.errors] == ["bufferMinutes"]


async def test_a_calendar_moved_to_another_zone_counts_its_new_local_days(
    db: Database, factory: Factory
) -> None:
    s = setup(db, factory, _rules({"maxMeetingsPerDay": 1}))
    m = monday()
    assert (await create(s, span(m, "10:00", "10:30"))).status == 201  # its zone: Berlin
    s.add(span(m, "09:00", "09:30", days=1))  # Tuesday in Berlin and in Auckland
    db.call(
        calendar_edits.update_calendar,
        user_id=s.owner.id,
        calendar_id=s.calendar,
        now=utcnow(),
        time_zone="Pacific/Auckland",
    )
    with pytest.raises(RuleViolation) as refused:  # Monday 22:00 Berlin: Tuesday in Auckland
        await create(s, span(m, "22:00", "22:15"))
    assert [e["rule"] for e in refused.value.errors] == ["maxMeetingsPerDay"]
