"""Listing series with pages: every occurrence exactly once across pages, an endless series
paged without end, and the rules and values refused with a 400 naming recurrence."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import calendar_in, create, listed
from tests.support import Factory


@pytest.mark.long
def test_pages_across_3_series_and_200_single_events_return_every_occurrence_once(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    rules = {
        "daily": ["RRULE:FREQ=DAILY;COUNT=40"],
        "weekdays": ["RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR"],  # endless
        "monthly": ["RRULE:FREQ=MONTHLY;BYMONTHDAY=1,15", "EXDATE:20260315T080000Z"],
    }
    for title, rule in rules.items():
        create(
            api,
            cal,
            title=title,
            startsAt="2026-03-01T09:00",
            endsAt="2026-03-01T10:00",
            recurrence=rule,
        )
    for i in range(200):
        # Some share a start with an occurrence: the id decides their order.
        hour = 9 if i % 10 == 0 else 7 + i % 12
        create(
            api,
            cal,
            title=f"single {i}",
            startsAt=f"2026-03-{1 + i % 31:02d}T{hour:02d}:00",
            endsAt=f"2026-03-{1 + i % 31:02d}T{hour:02d}:30",
        )
    window = {"timeMin": "2026-03-01", "timeMax": "2026-05-01"}
    whole = listed(api, cal, **window, limit=2500)
    paged = listed(api, cal, **window, limit=7)
    assert paged == whole
    ids = Counter(e["id"] for e in paged)
    assert all(n == 1 for n in ids.values())
    titles = Counter(e["title"] for e in paged)
    assert titles["daily"] == 40
    # The 44 weekdays from 2 March to 30 April, and DTSTART (Sunday 1 March): as RFC 5545 has
    # it, the series' start is its first occurrence whether or not the rule yields it.
    assert titles["weekdays"] == 45
    assert titles["monthly"] == 3  # 1 March, 1 and 15 April (15 March excluded)
    assert sum(1 for t in titles if t.startswith("single")) == 200
    order = [(datetime.fromisoformat(e["startsAt"]).astimezone(UTC), e["id"]) for e in paged]
    assert order == sorted(order)


def test_an_endless_series_without_timemax_pages_on_ten_at_a_time(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    create(
        api,
        cal,
        startsAt="2026-01-01T09:00:00Z",
        endsAt="2026-01-01T09:15:00Z",
        recurrence=["RRULE:FREQ=DAILY"],
    )
    query: dict[str, Any] = {"timeMin": "2100-01-01", "limit": 10}
    seen: list[str] = []
    for _ in range(5):
        body = api.get(EVENTS, params=query, headers=cal.headers).json()
        assert len(body["events"]) == 10
        seen.extend(e["startsAt"] for e in body["events"])
        query["pageToken"] = body["nextPageToken"]
    assert seen[0] == "2100-01-01T09:00:00Z" and seen[-1] == "2100-02-19T09:00:00Z"
    assert len(set(seen)) == 50
    last = api.get(EVENTS, params={"timeMin": "2200-12-25", "limit": 10}, headers=cal.headers)
    assert [e["startsAt"][:10] for e in last.json()["events"]] == [
        f"2200-12-{d}" for d in range(25, 32)
    ]  # the accepted range ends with 2200
    assert "nextPageToken" not in last.json()


def test_a_dense_endless_series_over_the_whole_range_pages_on_ten_at_a_time(
    api: httpx.Client, factory: Factory
) -> None:
    """96 a day without end, listed from 1901 to 2199 (issue 24, B): the first ten, then the
    next ten, each page expanded off the event loop and starting where the series starts."""
    cal = calendar_in(factory, "Europe/Berlin")
    quarters = "BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,15,30,45"
    series = create(
        api,
        cal,
        startsAt="2026-03-02T00:00:00Z",
        endsAt="2026-03-02T00:10:00Z",
        recurrence=[f"RRULE:FREQ=YEARLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;{quarters}"],
    )
    query: dict[str, Any] = {
        "timeMin": "1901-01-01T00:00:00Z",
        "timeMax": "2199-12-31T00:00:00Z",
        "limit": 10,
    }
    seen: list[str] = []
    for _ in range(2):
        body = api.get(EVENTS, params=query, headers=cal.headers).json()
        assert {e["recurringEventId"] for e in body["events"]} == {series["id"]}
        seen.extend(e["startsAt"] for e in body["events"])
        query["pageToken"] = body["nextPageToken"]
    # Local quarter hours from 01:00 in Berlin (00:00Z), twenty of them.
    assert seen == [
        f"2026-03-02T{1 + m // 60:02d}:{m % 60:02d}:00+01:00" for m in range(0, 300, 15)
    ]


BAD_RULES = {
    "unknown FREQ": (["RRULE:FREQ=FORTNIGHTLY"], "FREQ=FORTNIGHTLY is unknown"),
    "HOURLY": (["RRULE:FREQ=HOURLY"], "FREQ=HOURLY is not supported"),
    "MINUTELY": (["RRULE:FREQ=MINUTELY;INTERVAL=15"], "FREQ=MINUTELY is not supported"),
    "both COUNT and UNTIL": (["RRULE:FREQ=DAILY;COUNT=3;UNTIL=20260401"], "both COUNT and UNTIL"),
    "an unknown part": (["RRULE:FREQ=DAILY;BYEASTER=0"], "BYEASTER"),
    "a line over 1,000 characters": (["RRULE:FREQ=DAILY;BYMONTHDAY=" + "1," * 500 + "2"], "1000"),
    "two RRULEs": (["RRULE:FREQ=DAILY", "RRULE:FREQ=WEEKLY"], "exactly one RRULE"),
    "no RRULE": (["EXDATE:20260302T090000Z"], "one RRULE line"),
    "a malformed EXDATE": (["RRULE:FREQ=DAILY", "EXDATE:2026-03-02"], "EXDATE value"),
    "an EXDATE that is no date": (["RRULE:FREQ=DAILY", "EXDATE:20260231T090000Z"], "real date"),
    "a date EXDATE on a timed series": (
        ["RRULE:FREQ=DAILY", "EXDATE;VALUE=DATE:20260302"],
        "a timed series takes date-times",
    ),
    "over 1,000 EXDATE values": (
        ["RRULE:FREQ=DAILY"] + ["EXDATE:" + ",".join(["20260302T090000Z"] * 60)] * 17,
        "at most 1000",
    ),
    "a rule that never occurs": (
        ["RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30"],
        "never produces an occurrence",
    ),
    "a rule that never occurs, by BYSETPOS": (
        ["RRULE:FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6"],
        "never produces an occurrence",
    ),
    "BYDAY with a number in a weekly rule": (["RRULE:FREQ=WEEKLY;BYDAY=2MO"], "FREQ=MONTHLY"),
    "too many times a day": (
        ["RRULE:FREQ=DAILY;BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,10,20,30,40"],
        "at most 96 times a day",
    ),
    "not a list": ("RRULE:FREQ=DAILY", "valid list"),
}


@pytest.mark.parametrize("case", list(BAD_RULES))
def test_a_bad_rule_is_a_400_naming_recurrence_and_what_is_wrong(
    api: httpx.Client, factory: Factory, case: str
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    rule, wanted = BAD_RULES[case]
    response = api.post(
        EVENTS,
        json={
            "title": "x",
            "calendarId": cal.id,
            "startsAt": "2026-03-02T10:00",
            "endsAt": "2026-03-02T11:00",
            "recurrence": rule,
        },
        headers=cal.headers,
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    [error] = body["errors"]
    assert error["field"] == "recurrence"
    assert wanted in error["message"], error["message"]


def test_all_day_series_take_dates_and_timed_ones_date_times(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    day = {"startsAt": "2026-03-02", "endsAt": "2026-03-02", "allDay": True}
    refused = api.post(
        EVENTS,
        json={
            **day,
            "title": "x",
            "calendarId": cal.id,
            "recurrence": ["RRULE:FREQ=DAILY", "EXDATE:20260303T000000Z"],
        },
        headers=cal.headers,
    )
    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {
            "field": "recurrence",
            "message": "EXDATE value '20260303T000000Z' must be a date such as 20260309",
        }
    ]
    series = create(
        api, cal, **day, recurrence=["RRULE:FREQ=DAILY;COUNT=4", "EXDATE;VALUE=DATE:20260303"]
    )
    assert [e["id"] for e in listed(api, cal)] == [
        f"{series['id']}_20260302",
        f"{series['id']}_20260304",
        f"{series['id']}_20260305",
    ]
