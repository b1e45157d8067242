"""Every rule the recurrence rules accept can be computed: a rule part value that dateutil
cannot take (``BYSECOND=60``) is refused on ``recurrence`` when the rule is read, never an
error when it is computed. Hypothesis draws rules from every part's accepted range and just
beyond it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calendar_service.calendar.events.series import recurrence_columns
from calendar_service.platform.errors import FieldError
from calendar_service.platform.timeutil import zone

START = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
BERLIN = zone("Europe/Berlin")

_RANGES = {  # part: values drawn (the accepted range and what lies just beyond)
    "BYSECOND": (-1, 61),
    "BYMINUTE": (-1, 61),
    "BYHOUR": (-1, 25),
    "BYMONTHDAY": (-32, 32),
    "BYYEARDAY": (-367, 367),
    "BYWEEKNO": (-54, 54),
    "BYMONTH": (-1, 13),
    "BYSETPOS": (-367, 367),
}
_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU", "XX")


@st.composite
def _rules(draw: st.DrawFn) -> str:
    # A part or two at a time, with a FREQ they go with: most combinations of many parts are
    # refused for their combination, before their values count.
    names = [draw(st.sampled_from(sorted(_RANGES)))]
    if draw(st.integers(0, 3)) == 0:
        names.append(draw(st.sampled_from(sorted(set(_RANGES) - set(names)))))
    yearly = {"BYWEEKNO", "BYYEARDAY"} & set(names)
    freq = "YEARLY" if yearly else draw(st.sampled_from(("DAILY", "WEEKLY", "MONTHLY", "YEARLY")))
    parts = [f"FREQ={freq}"]
    for name in names:
        low, high = _RANGES[name]
        edges = st.sampled_from(sorted({low, low + 1, -1, 0, 1, high - 1, high}))
        values = [draw(edges if draw(st.booleans()) else st.integers(low, high))]
        if draw(st.integers(0, 3)) == 0:
            values.append(draw(st.integers(low, high)))
        parts.append(f"{name}={','.join(map(str, values))}")
    if draw(st.integers(0, 3)) == 0:
        days = draw(st.lists(st.tuples(st.integers(-54, 54), st.sampled_from(_DAYS)),
                             min_size=1, max_size=3))  # fmt: skip
        parts.append("BYDAY=" + ",".join(f"{n or ''}{d}" for n, d in days))
    if draw(st.integers(0, 3)) == 0:
        parts.append(f"WKST={draw(st.sampled_from(_DAYS))}")
    if draw(st.integers(0, 3)) == 0:
        parts.append(f"INTERVAL={draw(st.integers(-1, 3))}")
    if draw(st.integers(0, 3)) == 0:
        parts.append(f"COUNT={draw(st.integers(-1, 5))}")
    return "RRULE:" + ";".join(parts)


def _check(rule: str, all_day: bool) -> None:
    """``rule`` is refused on ``recurrence`` or computed: nothing else."""
    errors: list[FieldError] = []
    start = START if not all_day else datetime(2026, 3, 2)
    start = start if not all_day else start.replace(tzinfo=BERLIN)
    columns = recurrence_columns(
        [rule],
        start=start,
        end=start + (timedelta(days=1) if all_day else timedelta(hours=1)),
        all_day=all_day,
        tz=BERLIN,
        errors=errors,
    )
    assert all(e["field"] == "recurrence" for e in errors), errors
    assert bool(errors) != bool(columns)


def test_every_part_at_the_edges_of_its_range_is_refused_or_computed() -> None:
    for name, (low, high) in _RANGES.items():
        for value in sorted({low, low + 1, -1, 0, 1, high - 1, high}):
            for freq in ("DAILY", "WEEKLY", "MONTHLY", "YEARLY"):
                for all_day in (False, True):
                    _check(f"RRULE:FREQ={freq};{name}={value}", all_day)
                    _check(f"RRULE:FREQ={freq};BYDAY=MO;{name}={value}", all_day)
    for value in ("XX", "MO", "SU", "mo"):
        _check(f"RRULE:FREQ=WEEKLY;WKST={value}", False)
    for value in (-1, 0, 1, 10_000, 10_001):
        _check(f"RRULE:FREQ=DAILY;INTERVAL={value}", False)
        _check(f"RRULE:FREQ=DAILY;COUNT={value}", False)


@settings(max_examples=600, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(rule=_rules(), all_day=st.sampled_from((False, False, False, True)))
def test_a_rule_the_rules_accept_can_always_be_computed(rule: str, all_day: bool) -> None:
    _check(rule, all_day)


def test_a_leap_second_is_refused_on_recurrence() -> None:
    errors: list[FieldError] = []
    recurrence_columns(
        ["RRULE:FREQ=DAILY;BYSECOND=60"],
        start=START,
        end=START + timedelta(hours=1),
        all_day=False,
        tz=UTC,
        errors=errors,
    )
    assert [e["field"] for e in errors] == ["recurrence"]
    assert "BYSECOND" in errors[0]["message"] and "59" in errors[0]["message"]


def test_a_numbered_weekday_within_a_month_of_a_yearly_rule_is_refused_past_the_fifth() -> None:
    # With BYMONTH, a YEARLY rule's 2MO is the second Monday of that month (RFC 5545 3.3.10):
    # there is no sixth, and dateutil fails (IndexError) on 53MO there; in the whole year it is
    # the 53rd Monday, which may be.
    for n in (6, 53, -6, -53):
        _check(f"RRULE:FREQ=YEARLY;BYMONTH=12;BYDAY={n}MO", False)
        errors: list[FieldError] = []
        recurrence_columns(
            [f"RRULE:FREQ=YEARLY;BYMONTH=12;BYDAY={n}MO"],
            start=START,
            end=START + timedelta(hours=1),
            all_day=False,
            tz=UTC,
            errors=errors,
        )
        assert [e["field"] for e in errors] == ["recurrence"], errors
    for n in (5, -5):
        _check(f"RRULE:FREQ=YEARLY;BYMONTH=12;BYDAY={n}MO", False)
    _check("RRULE:FREQ=YEARLY;BYDAY=53MO", False)
