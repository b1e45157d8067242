"""Hostile rules, fuzzed (issue 24, G): any rule validation accepts, listed ten at a time over
any window up to the whole accepted range, costs no more work than ``docs/recurrence.md``
says: the instances computed and the expansion steps (periods) that the core counts
(``recurrence.measured``), never the clock. Each page also moves on.

Deterministic (``derandomize``) and bounded: a few seconds in all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.recurrence import READ_MOST_INSTANCES, READ_MOST_PERIODS, measured
from calendar_service.platform.db import Database
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import EARLIEST, LATEST, utcnow
from tests.support import Factory

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
KEY = b"test page-token key"
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Kiritimati"]
DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def _values(least: int, greatest: int, negative: bool, most: int) -> st.SearchStrategy[str]:
    number = st.integers(least, greatest)
    if negative:
        number = st.one_of(number, number.map(lambda n: -n))
    return st.lists(number, min_size=1, max_size=most, unique=True).map(
        lambda ns: ",".join(map(str, ns))
    )


@st.composite
def rules(draw: st.DrawFn) -> str:
    """An RRULE line made of the parts validation knows, in the ranges it accepts (it may
    still refuse the combination: such examples are left out)."""
    freq = draw(st.sampled_from(["DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    parts = [f"FREQ={freq}"]
    if draw(st.booleans()):
        parts.append(f"INTERVAL={draw(st.sampled_from([1, 2, 3, 7, 53, 400, 10000]))}")
    end = draw(st.sampled_from(["", "", "COUNT", "UNTIL"]))  # endless rules are the worst
    if end == "COUNT":
        parts.append(f"COUNT={draw(st.sampled_from([1, 2, 10, 1000, 100000, 1000000]))}")
    elif end == "UNTIL":
        parts.append(f"UNTIL={draw(st.integers(1901, 2199))}0101T000000Z")
    by = []
    if draw(st.booleans()):
        by.append(f"BYMONTH={draw(_values(1, 12, False, 12))}")
    if freq != "WEEKLY" and draw(st.booleans()):
        by.append(f"BYMONTHDAY={draw(_values(1, 31, True, 31))}")
    weekno = freq == "YEARLY" and draw(st.booleans())
    if weekno:
        by.append(f"BYWEEKNO={draw(_values(1, 53, True, 53))}")
    if freq == "YEARLY" and draw(st.booleans()):
        by.append(f"BYYEARDAY={draw(_values(1, 366, True, 120))}")
    if draw(st.booleans()):
        numbered = freq in ("MONTHLY", "YEARLY") and not weekno and draw(st.booleans())
        # Within the month (MONTHLY, or YEARLY with BYMONTH) validation takes at most the fifth.
        most = 5 if freq == "MONTHLY" or any(p.startswith("BYMONTH=") for p in by) else 53
        day = st.sampled_from(DAYS)
        if numbered:
            day = st.tuples(st.integers(-most, most).filter(bool), day).map(
                lambda nd: f"{nd[0]}{nd[1]}"
            )
        found = draw(st.lists(day, min_size=1, max_size=7, unique=True))
        by.append("BYDAY=" + ",".join(found))
    if by and draw(st.booleans()):
        by.append(f"BYSETPOS={draw(_values(1, 366, True, 180))}")
    # Times of a day (BYHOUR x BYMINUTE x BYSECOND at most): up to 96, the most accepted.
    times = draw(st.sampled_from([(1, 1, 1), (24, 4, 1), (24, 4, 1), (4, 4, 6), (1, 1, 60)]))
    for name, count, greatest in zip(
        ("BYHOUR", "BYMINUTE", "BYSECOND"), times, (23, 59, 59), strict=True
    ):
        if count > 1 or draw(st.booleans()):
            picked = draw(
                st.lists(st.integers(0, greatest), min_size=1, max_size=count, unique=True)
            )
            by.append(f"{name}={','.join(map(str, picked))}")
    if draw(st.booleans()):
        by.append(f"WKST={draw(st.sampled_from(DAYS))}")
    return "RRULE:" + ";".join(parts + by)


instants = st.datetimes(
    min_value=EARLIEST.replace(tzinfo=None), max_value=LATEST.replace(tzinfo=None)
).map(lambda d: d.replace(tzinfo=UTC))


@st.composite
def windows(draw: st.DrawFn) -> tuple[str | None, str | None]:
    """Up to the whole accepted range, either side may be left open."""
    whole = draw(st.booleans())
    low = EARLIEST if whole else draw(st.one_of(st.none(), instants))
    high = LATEST - timedelta(days=1) if whole else draw(st.one_of(st.none(), instants))
    if low is not None and high is not None and high < low:
        low, high = high, low
    return (
        None if low is None else low.isoformat(),
        None if high is None else high.isoformat(),
    )


@pytest.mark.long
def test_a_page_of_any_accepted_rule_over_any_window_stays_within_the_work_bound(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)

    @FUZZ
    @given(
        rule=rules(),
        zone=st.sampled_from(ZONES),
        start=st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2150, 1, 1)),
        window=windows(),
    )
    def page(rule: str, zone: str, start: datetime, window: tuple[str | None, str | None]) -> None:
        calendar_id = factory.calendar(owner, time_zone=zone)
        principal = Principal(key_id, owner.id, "write", calendar_id, utcnow())
        body: dict[str, Any] = {
            "title": "fuzzed",
            "startsAt": start.isoformat(),
            "endsAt": (start + timedelta(minutes=10)).isoformat(),
            "recurrence": [rule],
        }
        try:
            db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())
        except ValidationFailed:
            assume(False)  # refused when written: nothing to list
        time_min, time_max = window
        token = None
        for _ in range(2):  # a page, and the next: each within the bound, each moving on
            with measured() as work:
                listed = db.call(
                    events.list_events,
                    principal=principal,
                    time_min=time_min,
                    time_max=time_max,
                    limit=10,
                    page_token=token,
                    token_key=KEY,
                )
            assert work.instances <= READ_MOST_INSTANCES, rule
            assert work.periods <= READ_MOST_PERIODS, rule
            following = listed.get("nextPageToken")
            if following is None:
                break
            assert following != token  # every page moves on
            token = following

    page()
