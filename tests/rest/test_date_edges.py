"""Date edges over the real server: every one is a 400 naming its field, never a 500, and every
time the API writes is RFC 3339 that it would itself accept for the same instant."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime

import httpx
import pytest

from tests.rest.conftest import EVENTS, create_event, event_body
from tests.rest.recurrence_support import calendar_in, create, listed
from tests.support import Factory, bearer

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")

# Found by fuzzing: far years with offsets that push them past what a datetime holds, offsets
# beyond ±18:00 or with minutes past 59, and the first and last instants just outside the range.
EDGE_TIMES = [
    "0001-01-01T00:00:00+23:59",
    "0001-01-01T00:00:00-23:59",
    "9999-12-31T23:59:59+23:59",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999Z",
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59",
    "1899-12-31T23:59:59Z",
    "2201-01-01T00:00:00.000001Z",
    "1900-01-01T00:00:00+00:01",
    "2026-03-02T09:00:00+18:01",
    "2026-03-02T09:00:00-23:59",
    "2026-03-02T09:00:00+05:75",
]
EDGE_DAYS = ["0001-01-01", "9999-12-31", "1899-12-30", "2201-01-02"]
# Each edge date-time in a zone east and a zone west of UTC (ids: "<text>-<zone>").
EDGE_TIMES_IN_ZONES = list(itertools.product(EDGE_TIMES, ["Europe/Berlin", "America/New_York"]))


def _writer(factory: Factory, time_zone: str) -> str:
    """A read-and-write key for one calendar in ``time_zone``."""
    owner = factory.owner()
    calendar_id = factory.calendar(owner, time_zone=time_zone)
    return factory.key(owner, calendar_id=calendar_id)[1]


def _fields(response: httpx.Response) -> set[str]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "validation_error"
    return {e["field"] for e in body["errors"]}


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@pytest.mark.parametrize(
    ("text", "time_zone"), EDGE_TIMES_IN_ZONES + [(day, "Europe/Berlin") for day in EDGE_DAYS]
)
def test_an_edge_date_time_or_date_in_a_list_bound_is_a_400_naming_the_bound(
    api: httpx.Client, factory: Factory, text: str, time_zone: str
) -> None:
    secret = _writer(factory, time_zone)
    for name in ("timeMin", "timeMax"):
        response = api.get(EVENTS, params={name: text}, headers=bearer(secret))
        assert _fields(response) == {name}


@pytest.mark.parametrize(("text", "time_zone"), EDGE_TIMES_IN_ZONES)
def test_an_edge_date_time_in_a_new_event_is_a_400_naming_the_field(
    api: httpx.Client, factory: Factory, text: str, time_zone: str
) -> None:
    secret = _writer(factory, time_zone)
    starts = api.post(EVENTS, json=event_body(startsAt=text), headers=bearer(secret))
    assert _fields(starts) == {"startsAt"}
    ends = api.post(EVENTS, json=event_body(endsAt=text), headers=bearer(secret))
    assert "endsAt" in _fields(ends)


@pytest.mark.parametrize(("text", "time_zone"), EDGE_TIMES_IN_ZONES)
def test_an_edge_date_time_in_a_change_is_a_400_naming_the_field_and_changes_nothing(
    api: httpx.Client, factory: Factory, text: str, time_zone: str
) -> None:
    secret = _writer(factory, time_zone)
    event = create_event(api, secret)
    url = f"{EVENTS}/{event['id']}"
    assert "startsAt" in _fields(api.patch(url, json={"startsAt": text}, headers=bearer(secret)))
    assert "endsAt" in _fields(api.patch(url, json={"endsAt": text}, headers=bearer(secret)))
    assert api.get(url, headers=bearer(secret)).json() == event


@pytest.mark.parametrize("text", EDGE_DAYS)
def test_an_edge_all_day_date_is_a_400_naming_the_field(
    api: httpx.Client, factory: Factory, text: str
) -> None:
    secret = _writer(factory, "Europe/Berlin")
    alone = api.post(
        EVENTS, json=event_body(allDay=True, startsAt=text, endsAt=text), headers=bearer(secret)
    )
    assert "startsAt" in _fields(alone)
    ends = api.post(
        EVENTS,
        json=event_body(allDay=True, startsAt="2026-03-02", endsAt=text),
        headers=bearer(secret),
    )
    assert "endsAt" in _fields(ends)
    event = create_event(api, secret, allDay=True, startsAt="2026-03-02", endsAt="2026-03-02")
    changed = api.patch(
        f"{EVENTS}/{event['id']}", json={"startsAt": text, "endsAt": text}, headers=bearer(secret)
    )
    assert "startsAt" in _fields(changed)


def test_the_last_all_day_date_is_refused_when_its_end_is_past_the_range(
    api: httpx.Client, factory: Factory
) -> None:
    secret = _writer(factory, "America/New_York")  # 2200-12-31 ends at 2201-01-01T05:00Z
    response = api.post(
        EVENTS,
        json=event_body(allDay=True, startsAt="2200-12-31", endsAt="2200-12-31"),
        headers=bearer(secret),
    )
    assert _fields(response) == {"endsAt"}
    assert "1900-01-01T00:00:00Z to 2201-01-01T00:00:00Z" in response.json()["errors"][0]["message"]


def test_a_naive_first_day_in_berlin_and_a_change_to_year_one_in_new_york_are_400s(
    api: httpx.Client, factory: Factory
) -> None:
    berlin = _writer(factory, "Europe/Berlin")
    naive = api.post(
        EVENTS,
        json=event_body(startsAt="0001-01-01T00:00:00", endsAt="0001-01-01T01:00:00"),
        headers=bearer(berlin),
    )
    assert _fields(naive) == {"startsAt", "endsAt"}
    new_york = _writer(factory, "America/New_York")
    event = create_event(api, new_york)
    changed = api.patch(
        f"{EVENTS}/{event['id']}",
        json={"startsAt": "0001-01-01T00:00:00Z"},
        headers=bearer(new_york),
    )
    assert _fields(changed) == {"startsAt"}


def test_the_first_and_last_instants_of_the_range_are_accepted(
    api: httpx.Client, factory: Factory
) -> None:
    secret = _writer(factory, "UTC")
    first = create_event(
        api, secret, startsAt="1900-01-01T00:00:00Z", endsAt="1900-01-01T00:00:00Z"
    )
    assert first["startsAt"] == "1900-01-01T00:00:00Z"
    last = create_event(
        api, secret, startsAt="2201-01-01T18:00:00+18:00", endsAt="2201-01-01T00:00Z"
    )
    assert last["startsAt"] == last["endsAt"] == "2201-01-01T00:00:00Z"
    day = create_event(api, secret, allDay=True, startsAt="2200-12-31", endsAt="2200-12-31")
    assert day["endsAt"] == "2201-01-01T00:00:00Z"
    listed = api.get(
        EVENTS,
        params={"timeMin": "1900-01-01", "timeMax": "2201-01-01T00:00:00Z"},
        headers=bearer(secret),
    )
    assert listed.status_code == 200, listed.text
    assert [e["id"] for e in listed.json()["events"]] == [first["id"], day["id"]]


def test_an_empty_bound_means_no_bound_and_a_blank_one_is_a_400(
    api: httpx.Client, factory: Factory
) -> None:
    secret = _writer(factory, "Europe/Berlin")
    event = create_event(api, secret)
    for params in ({"timeMin": ""}, {"timeMax": ""}, {"timeMin": "", "timeMax": ""}):
        response = api.get(EVENTS, params=params, headers=bearer(secret))
        assert response.status_code == 200, response.text
        assert [e["id"] for e in response.json()["events"]] == [event["id"]]
    blank = api.get(EVENTS, params={"timeMin": " "}, headers=bearer(secret))
    assert _fields(blank) == {"timeMin"}


@pytest.mark.parametrize(
    ("time_zone", "start", "shown"),
    [
        # Local mean time, not whole minutes: +00:19:32 until 1937, -00:44:30 until 1972.
        ("Europe/Amsterdam", "1920-06-01T12:00:00Z", "1920-06-01T13:20:00+01:20"),
        ("Africa/Monrovia", "1960-01-01T00:00:00Z", "1959-12-31T23:16:00-00:44"),
        ("Asia/Kolkata", "1900-01-01T00:00:00Z", "1900-01-01T05:22:00+05:22"),
        ("Europe/Amsterdam", "1920-06-01T12:00:00.250000Z", "1920-06-01T13:20:00.250000+01:20"),
    ],
)
def test_times_in_local_mean_time_come_out_as_rfc3339_naming_the_same_instant(
    api: httpx.Client, factory: Factory, time_zone: str, start: str, shown: str
) -> None:
    secret = _writer(factory, time_zone)
    event = create_event(api, secret, startsAt=start, endsAt=start)
    assert event["startsAt"] == shown
    again = create_event(api, secret, startsAt=event["startsAt"], endsAt=event["endsAt"])
    assert again["startsAt"] == shown
    assert _instant(again["startsAt"]) == _instant(start)
    listed = api.get(EVENTS, params={"timeMin": shown}, headers=bearer(secret)).json()["events"]
    assert {e["startsAt"] for e in listed} == {shown}
    fetched = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
    assert fetched["startsAt"] == shown


def test_an_all_day_event_in_local_mean_time_keeps_its_date(
    api: httpx.Client, factory: Factory
) -> None:
    secret = _writer(factory, "Europe/Amsterdam")
    event = create_event(api, secret, allDay=True, startsAt="1920-01-01", endsAt="1920-01-02")
    assert event["startsAt"].startswith("1920-01-01T00:00:")
    assert event["endsAt"].startswith("1920-01-02T00:00:")
    for text in (event["startsAt"], event["endsAt"]):
        assert RFC3339.match(text), text
    moved = api.patch(
        f"{EVENTS}/{event['id']}", json={"endsAt": "1920-01-03"}, headers=bearer(secret)
    )
    assert moved.status_code == 200, moved.text
    assert moved.json()["startsAt"] == event["startsAt"]


def test_a_start_in_the_spring_gap_moves_the_whole_event_by_the_gap_never_reversing_it(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")  # 29 March 2026: 02:00 to 03:00 is skipped
    event = create(api, cal, startsAt="2026-03-29T02:30", endsAt="2026-03-29T03:15")
    assert (event["startsAt"], event["endsAt"]) == (
        "2026-03-29T03:30:00+02:00",  # the whole event an hour on: 45 minutes, as written
        "2026-03-29T04:15:00+02:00",
    )
    inside = create(api, cal, startsAt="2026-03-29T02:10", endsAt="2026-03-29T02:40")
    assert (inside["startsAt"], inside["endsAt"]) == (
        "2026-03-29T03:10:00+02:00",
        "2026-03-29T03:40:00+02:00",
    )
    # An end in the gap alone is read after it: 01:30 to 02:30 is 01:30 to 03:30 (an hour).
    late = create(api, cal, startsAt="2026-03-29T01:30", endsAt="2026-03-29T02:30")
    assert late["endsAt"] == "2026-03-29T03:30:00+02:00"
    # An end with an offset is an instant: a gap start after it is a 400 naming startsAt.
    body = {"title": "x", "calendarId": cal.id, "startsAt": "2026-03-29T02:30",
            "endsAt": "2026-03-29T03:15:00+02:00"}  # fmt: skip
    refused = api.post(EVENTS, json=body, headers=cal.headers)
    assert refused.status_code == 400, refused.text
    (error,) = refused.json()["errors"]
    assert error["field"] == "startsAt" and "does not exist in Europe/Berlin" in error["message"]
    # PATCH: both ends sent move together; a start alone moved into the gap past the stored
    # end is a 400 naming startsAt and changes nothing.
    single = create(api, cal, startsAt="2026-03-29T01:00", endsAt="2026-03-29T03:15")
    url = f"{EVENTS}/{single['id']}"
    moved = api.patch(url, json={"startsAt": "2026-03-29T02:45", "endsAt": "2026-03-29T03:00"},
                      headers=cal.headers)  # fmt: skip
    assert moved.status_code == 200, moved.text
    assert (moved.json()["startsAt"], moved.json()["endsAt"]) == (
        "2026-03-29T03:45:00+02:00",
        "2026-03-29T04:00:00+02:00",
    )
    api.patch(url, json={"startsAt": "2026-03-29T01:00", "endsAt": "2026-03-29T03:15"},
              headers=cal.headers)  # fmt: skip
    alone = api.patch(url, json={"startsAt": "2026-03-29T02:30"}, headers=cal.headers)
    assert alone.status_code == 400, alone.text
    assert [e["field"] for e in alone.json()["errors"]] == ["startsAt"]
    assert api.get(url, headers=cal.headers).json()["startsAt"] == "2026-03-29T01:00:00+01:00"


def test_a_series_occurrence_in_the_spring_gap_keeps_its_length(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    create(api, cal, startsAt="2026-03-28T02:30", endsAt="2026-03-28T03:15",
           recurrence=["RRULE:FREQ=DAILY;COUNT=3"])  # fmt: skip
    events = listed(api, cal, timeMin="2026-03-28", timeMax="2026-04-01")
    assert [(e["startsAt"], e["endsAt"]) for e in events] == [
        ("2026-03-28T02:30:00+01:00", "2026-03-28T03:15:00+01:00"),
        ("2026-03-29T03:30:00+02:00", "2026-03-29T04:15:00+02:00"),
        ("2026-03-30T02:30:00+02:00", "2026-03-30T03:15:00+02:00"),
    ]
