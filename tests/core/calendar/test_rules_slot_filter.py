"""``rule_verdict.SlotFilter`` (what ``findFreeTime`` keeps under the owner's rules) says what
``rule_verdict.passes`` says of every time, and its ``clip`` keeps what the rules' hours, days,
notice and days ahead allow of free time: hypothesis draws rule sets, meetings (across
midnight and the DST days of Berlin too) and candidate times. Pure: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from calendar_service.calendar.rule_verdict import Meetings, SlotFilter, passes
from calendar_service.calendar.rules import WEEKDAYS, parsed, read_rules
from calendar_service.platform.timeutil import utc_text, zone
from tests.core.calendar.test_rules_free_time import rule_sets

BERLIN = zone("Europe/Berlin")
NOW = datetime(2026, 3, 20, 9, 7, tzinfo=UTC)  # a week before the spring change in Berlin
QUARTER = timedelta(minutes=15)


def _meetings(draw: st.DrawFn) -> Meetings:
    items = []
    for i in range(draw(st.integers(0, 25))):
        start = NOW + draw(st.integers(-96, 20 * 96)) * QUARTER
        length = draw(st.integers(0, 40)) * QUARTER
        items.append(("c", utc_text(start), utc_text(start + length), f"m{i}", "t"))
    return Meetings(items)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, Meetings, list[tuple[datetime, datetime]]]:
    rules = draw(rule_sets())
    if draw(st.booleans()):  # working hours across midnight, joined with the next day's
        rules["workingHours"] = {
            d: [{"start": "00:00", "end": "02:00"}, {"start": "20:00", "end": "24:00"}]
            for d in draw(st.sets(st.sampled_from(WEEKDAYS), min_size=1))
        }
    times = []
    for _ in range(draw(st.integers(1, 30))):
        start = (
            NOW
            + draw(st.integers(0, 18 * 96)) * QUARTER
            + draw(st.sampled_from([0, 7])) * (QUARTER / 15)
        )
        times.append((start, start + draw(st.integers(1, 120)) * QUARTER))
    times.sort()
    return parsed(read_rules(rules)), _meetings(draw), times


@settings(max_examples=300, deadline=None)
@given(cases())
def test_keeps_is_passes(case: tuple[Any, Meetings, list[tuple[datetime, datetime]]]) -> None:
    rules, meetings, times = case
    kept = SlotFilter(rules, BERLIN, NOW, meetings)
    for start, end in times:
        assert kept.keeps(start, end) == passes(
            rules, BERLIN, start, end, now=NOW, meetings=meetings
        ), (start, end)


def _allowed(rules: Any, at: datetime) -> bool:
    """Whether the rules' hours, days, notice and days ahead let a meeting be at ``at``."""
    wall = at.astimezone(BERLIN)
    if wall.weekday() in rules.no_meeting_days:
        return False
    clock = timedelta(hours=wall.hour, minutes=wall.minute)
    if rules.hours is not None and not any(
        a <= clock < b for a, b in rules.hours.get(wall.weekday(), ())
    ):
        return False
    if rules.min_notice is not None and at < NOW + rules.min_notice:
        return False
    ahead = rules.max_days_ahead
    return ahead is None or at < NOW + timedelta(days=ahead + 1)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_clip_keeps_what_the_rules_allow(
    case: tuple[Any, Meetings, list[tuple[datetime, datetime]]],
) -> None:
    rules, meetings, times = case
    free, at = [], NOW
    for start, end in times:  # disjoint, in order
        start = max(start, at)
        if start < end:
            free.append((start, end))
            at = end + QUARTER
    clipped = list(SlotFilter(rules, BERLIN, NOW, meetings).clip(free))
    assert clipped == sorted(clipped) and all(a < b for a, b in clipped)
    minute = timedelta(minutes=1)
    for start, end in free:
        at = start
        while at < end:
            assert any(a <= at < b for a, b in clipped) == _allowed(rules, at), at
            at += minute
