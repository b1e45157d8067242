"""Availability over a real server: free/busy merged across overlapping, adjacent, all-day and
recurring events, transparent events free, free slots on DST-change days in Europe/Berlin, two
calendars intersected, the ``freebusy`` key's reach, ``ifFree`` bookings, and every bad input
answered with a 400 naming its field."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.rest.recurrence_support import Cal, calendar_in, create, watch
from tests.support import Factory, RunningServer, bearer, queued

FREE_BUSY = "/api/v1/calendar/freeBusy"
FREE_TIME = "/api/v1/calendar/freeTime"


def free_busy(api: httpx.Client, cal: Cal, **body: Any) -> dict[str, Any]:
    response = api.post(FREE_BUSY, json=body, headers=cal.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def free_time(api: httpx.Client, cal: Cal, **body: Any) -> dict[str, Any]:
    response = api.post(FREE_TIME, json=body, headers=cal.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def busy_of(answer: dict[str, Any], index: int = 0) -> list[tuple[str, str]]:
    return [(b["startsAt"], b["endsAt"]) for b in answer["calendars"][index]["busy"]]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def test_busy_intervals_merge_overlapping_adjacent_all_day_and_series_occurrences(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    # Monday 2 March: 09:00-10:00 and 09:30-11:00 overlap, 11:00-12:00 touches them.
    create(api, cal, title="a", startsAt="2026-03-02T09:00", endsAt="2026-03-02T10:00")
    create(api, cal, title="b", startsAt="2026-03-02T09:30", endsAt="2026-03-02T11:00")
    create(api, cal, title="c", startsAt="2026-03-02T11:00", endsAt="2026-03-02T12:00")
    # A zero-length event takes no time.
    create(api, cal, title="z", startsAt="2026-03-02T15:00", endsAt="2026-03-02T15:00")
    # Wednesday 4 March, all day: its local day in Berlin.
    create(api, cal, title="all day", startsAt="2026-03-04", endsAt="2026-03-04", allDay=True)
    # Daily at 13:00 for 30 minutes, from Monday; Tuesday's occurrence cancelled and
    # Thursday's moved to 16:00.
    series = create(
        api,
        cal,
        title="daily",
        startsAt="2026-03-02T13:00",
        endsAt="2026-03-02T13:30",
        recurrence=["RRULE:FREQ=DAILY;COUNT=5"],
    )
    tuesday = f"{series['id']}_20260303T120000Z"
    assert api.delete(f"{EVENTS}/{tuesday}", headers=cal.headers).status_code == 204
    thursday = f"{series['id']}_20260305T120000Z"
    moved = api.patch(
        f"{EVENTS}/{thursday}",
        json={"startsAt": "2026-03-05T16:00", "endsAt": "2026-03-05T16:30"},
        headers=cal.headers,
    )
    assert moved.status_code == 200, moved.text

    answer = free_busy(api, cal, timeMin="2026-03-02T00:00", timeMax="2026-03-07T00:00")

    assert answer["timeMin"] == "2026-03-02T00:00:00+01:00"
    assert answer["calendars"][0]["id"] == cal.id
    assert busy_of(answer) == [
        ("2026-03-02T09:00:00+01:00", "2026-03-02T12:00:00+01:00"),
        ("2026-03-02T13:00:00+01:00", "2026-03-02T13:30:00+01:00"),
        ("2026-03-04T00:00:00+01:00", "2026-03-05T00:00:00+01:00"),  # 13:00 inside it
        ("2026-03-05T16:00:00+01:00", "2026-03-05T16:30:00+01:00"),
        ("2026-03-06T13:00:00+01:00", "2026-03-06T13:30:00+01:00"),
    ]


def test_busy_intervals_are_clipped_to_the_window(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    create(api, cal, title="long", startsAt="2026-03-01T20:00Z", endsAt="2026-03-02T10:00Z")
    create(api, cal, title="late", startsAt="2026-03-02T11:30Z", endsAt="2026-03-02T14:00Z")
    answer = free_busy(api, cal, timeMin="2026-03-02T08:00Z", timeMax="2026-03-02T12:00Z")
    assert busy_of(answer) == [
        ("2026-03-02T08:00:00Z", "2026-03-02T10:00:00Z"),
        ("2026-03-02T11:30:00Z", "2026-03-02T12:00:00Z"),
    ]


def test_a_transparent_event_leaves_its_time_free(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    shown = create(
        api,
        cal,
        title="focus (free)",
        startsAt="2026-03-02T09:00Z",
        endsAt="2026-03-02T12:00Z",
        transparency="transparent",
    )
    assert shown["transparency"] == "transparent"
    create(
        api,
        cal,
        title="weekly free",
        startsAt="2026-03-02T14:00Z",
        endsAt="2026-03-02T15:00Z",
        recurrence=["RRULE:FREQ=WEEKLY"],
        transparency="transparent",
    )
    opaque = create(
        api, cal, title="busy", startsAt="2026-03-02T16:00Z", endsAt="2026-03-02T17:00Z"
    )
    assert opaque["transparency"] == "opaque"
    window = {"timeMin": "2026-03-02T00:00Z", "timeMax": "2026-03-03T00:00Z"}
    assert busy_of(free_busy(api, cal, **window)) == [
        ("2026-03-02T16:00:00Z", "2026-03-02T17:00:00Z")
    ]
    # Listed and read with its transparency; made opaque, it is busy.
    listed = api.get(EVENTS, params=window, headers=cal.headers).json()["events"]
    assert {e["title"]: e["transparency"] for e in listed} == {
        "focus (free)": "transparent",
        "weekly free": "transparent",
        "busy": "opaque",
    }
    changed = api.patch(
        f"{EVENTS}/{shown['id']}", json={"transparency": "opaque"}, headers=cal.headers
    )
    assert changed.json()["transparency"] == "opaque"
    assert busy_of(free_busy(api, cal, **window))[0] == (
        "2026-03-02T09:00:00Z",
        "2026-03-02T12:00:00Z",
    )


def test_slots_avoid_busy_time_and_keep_working_hours_on_both_dst_days_in_berlin(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    # Sunday 29 March 2026 (clocks go 02:00 -> 03:00) and Sunday 25 October (03:00 -> 02:00):
    # working hours every day 09:00-12:00, one meeting 10:00-11:00 each of those days.
    for day in ("2026-03-29", "2026-10-25"):
        create(api, cal, title="meeting", startsAt=f"{day}T10:00", endsAt=f"{day}T11:00")
    hours = {"start": "09:00", "end": "12:00", "days": ["SA", "SU"]}
    for day, offset in (("2026-03-29", "+02:00"), ("2026-10-25", "+01:00")):
        answer = free_time(
            api,
            cal,
            timeMin=f"{day}T00:00",
            timeMax=f"{day}T23:59",
            durationMinutes=30,
            workingHours=hours,
            limit=100,
        )
        assert answer["timeZone"] == "Europe/Berlin"
        starts = [s["startsAt"] for s in answer["slots"]]
        assert starts == [
            f"{day}T09:00:00{offset}",
            f"{day}T09:15:00{offset}",
            f"{day}T09:30:00{offset}",
            f"{day}T11:00:00{offset}",
            f"{day}T11:15:00{offset}",
            f"{day}T11:30:00{offset}",
        ]
        for slot in answer["slots"]:
            assert utc(slot["endsAt"]) - utc(slot["startsAt"]) == timedelta(minutes=30)


def test_slots_run_through_the_night_of_the_dst_change_without_working_hours(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    answer = free_time(
        api,
        cal,
        timeMin="2026-03-29T01:00",
        timeMax="2026-03-29T04:00",
        durationMinutes=60,
        limit=100,
    )
    starts = [s["startsAt"] for s in answer["slots"]]
    # 01:00 to 04:00 local is two hours of real time on that day (02:00-03:00 does not exist).
    assert starts[0] == "2026-03-29T01:00:00+01:00"
    assert starts[-1] == "2026-03-29T03:00:00+02:00"
    assert len(starts) == 5  # 01:00 01:15 01:30 01:45 (+01:00), 03:00 (+02:00)


def test_two_calendars_free_time_is_intersected_and_the_limit_applies(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    a = factory.calendar(owner, name="A", time_zone="UTC")
    b = factory.calendar(owner, name="B", time_zone="Europe/Berlin")
    cal = Cal(owner, a, bearer(factory.key(owner)[1]))
    create(api, cal, calendarId=a, startsAt="2026-03-02T09:00Z", endsAt="2026-03-02T10:00Z")
    create(api, cal, calendarId=b, startsAt="2026-03-02T10:30Z", endsAt="2026-03-02T11:00Z")
    body = {
        "timeMin": "2026-03-02T09:00Z",
        "timeMax": "2026-03-02T12:00Z",
        "durationMinutes": 45,
        "calendarIds": [a, b],
    }
    answer = free_time(api, cal, **body)
    assert answer["timeZone"] == "UTC"  # the first calendar's
    assert [s["startsAt"] for s in answer["slots"]] == [
        "2026-03-02T11:00:00Z",
        "2026-03-02T11:15:00Z",
    ]
    # Each calendar alone has more room; the default zone is the first listed calendar's.
    only_b = free_time(api, cal, **{**body, "calendarIds": [b]})
    assert only_b["timeZone"] == "Europe/Berlin"
    assert only_b["slots"][0]["startsAt"] == "2026-03-02T10:00:00+01:00"
    limited = free_time(api, cal, **{**body, "calendarIds": [b], "limit": 2})
    assert len(limited["slots"]) == 2
    shown = free_time(api, cal, **{**body, "timeZone": "America/New_York", "limit": 1})
    assert shown["slots"] == [
        {"startsAt": "2026-03-02T06:00:00-05:00", "endsAt": "2026-03-02T06:45:00-05:00"}
    ]
    both = free_busy(api, cal, timeMin="2026-03-02T00:00Z", timeMax="2026-03-03T00:00Z")
    by_id = {c["id"]: c for c in both["calendars"]}
    assert by_id[b]["busy"] == [
        {"startsAt": "2026-03-02T11:30:00+01:00", "endsAt": "2026-03-02T12:00:00+01:00"}
    ]
    assert by_id[owner.default_calendar_id]["busy"] == []


def test_a_short_duration_sets_the_grid(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    create(api, cal, startsAt="2026-03-02T09:05Z", endsAt="2026-03-02T09:20Z")
    answer = free_time(
        api, cal, timeMin="2026-03-02T09:00Z", timeMax="2026-03-02T09:40Z", durationMinutes=10
    )
    assert [s["startsAt"] for s in answer["slots"]] == [
        "2026-03-02T09:20:00Z",
        "2026-03-02T09:30:00Z",
    ]


def test_a_freebusy_key_gets_busy_times_but_is_refused_everything_else(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    made = create(
        api, cal, title="secret", startsAt="2026-03-02T09:00Z", endsAt="2026-03-02T10:00Z"
    )
    _, secret = factory.key(cal.owner, permission="freebusy")
    headers = bearer(secret)
    window = {"timeMin": "2026-03-02T00:00Z", "timeMax": "2026-03-03T00:00Z"}
    answer = api.post(FREE_BUSY, json=window, headers=headers)
    assert answer.status_code == 200, answer.text
    assert "secret" not in answer.text and made["id"] not in answer.text
    by_id = {c["id"]: c["busy"] for c in answer.json()["calendars"]}
    assert by_id[cal.id] == [{"startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"}]
    slots = api.post(FREE_TIME, json={**window, "durationMinutes": 60}, headers=headers)
    assert slots.status_code == 200, slots.text
    refused = [
        api.get(EVENTS, params=window, headers=headers),
        api.get(f"{EVENTS}/{made['id']}", headers=headers),
        api.post(EVENTS, json={"title": "x", **{"startsAt": "2026-03-02T12:00Z"}}, headers=headers),
        api.patch(f"{EVENTS}/{made['id']}", json={"title": "y"}, headers=headers),
        api.delete(f"{EVENTS}/{made['id']}", headers=headers),
    ]
    for response in refused:
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "insufficient_scope"
        assert 'error="insufficient_scope"' in response.headers["WWW-Authenticate"]
        assert "secret" not in response.text
    # Read and write keys may call both operations too.
    _, reader = factory.key(cal.owner, permission="read")
    assert api.post(FREE_BUSY, json=window, headers=bearer(reader)).status_code == 200
    assert api.post(
        FREE_TIME, json={**window, "durationMinutes": 5}, headers=cal.headers
    ).is_success


def test_a_one_calendar_key_is_refused_other_calendars(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    other = factory.calendar(cal.owner, name="Other")
    window = {"timeMin": "2026-03-02T00:00Z", "timeMax": "2026-03-03T00:00Z"}
    for path in (FREE_BUSY, FREE_TIME):
        body = {**window, "calendarIds": [other], "durationMinutes": 30}
        if path == FREE_BUSY:
            del body["durationMinutes"]
        response = api.post(path, json=body, headers=cal.headers)
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "insufficient_scope"
    # Without calendarIds it sees its own calendar alone.
    answer = free_busy(api, cal, **window)
    assert [c["id"] for c in answer["calendars"]] == [cal.id]


_WINDOW = {"timeMin": "2026-03-02T00:00Z", "timeMax": "2026-03-03T00:00Z"}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (FREE_BUSY, {"timeMax": "2026-03-03T00:00Z"}, "timeMin"),
        (FREE_BUSY, {"timeMin": "2026-03-02T00:00Z"}, "timeMax"),
        (FREE_BUSY, {"timeMin": "2026-03-03T00:00Z", "timeMax": "2026-03-02T00:00Z"}, "timeMax"),
        (FREE_BUSY, {"timeMin": "2026-03-02T00:00Z", "timeMax": "2026-03-02T00:00Z"}, "timeMax"),
        (FREE_BUSY, {"timeMin": "2026-01-01T00:00Z", "timeMax": "2026-04-03T00:01Z"}, "timeMax"),
        (FREE_BUSY, {"timeMin": "yesterday", "timeMax": "2026-03-02T00:00Z"}, "timeMin"),
        (FREE_BUSY, {**_WINDOW, "calendarIds": ["cal_unknown"]}, "calendarIds"),
        (FREE_BUSY, {**_WINDOW, "calendarIds": []}, "calendarIds"),
        (FREE_BUSY, {**_WINDOW, "calendarIds": "cal_x"}, "calendarIds"),
        (FREE_BUSY, {**_WINDOW, "extra": 1}, "extra"),
        (FREE_TIME, {**_WINDOW}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 0}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 1441}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": "30"}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 30.5}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": True}, "durationMinutes"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 30, "limit": 0}, "limit"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 30, "limit": 101}, "limit"),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 30, "timeZone": "Mars/Base"}, "timeZone"),
        (
            FREE_TIME,
            {**_WINDOW, "durationMinutes": 30, "workingHours": {"start": "9am", "end": "17:00"}},
            "workingHours.start",
        ),
        (
            FREE_TIME,
            {**_WINDOW, "durationMinutes": 30, "workingHours": {"start": "09:00", "end": "25:00"}},
            "workingHours.end",
        ),
        (
            FREE_TIME,
            {**_WINDOW, "durationMinutes": 30, "workingHours": {"start": "17:00", "end": "09:00"}},
            "workingHours.end",
        ),
        (
            FREE_TIME,
            {
                **_WINDOW,
                "durationMinutes": 30,
                "workingHours": {"start": "09:00", "end": "17:00", "days": ["MON"]},
            },
            "workingHours.days",
        ),
        (
            FREE_TIME,
            {
                **_WINDOW,
                "durationMinutes": 30,
                "workingHours": {"start": "09:00", "end": "17:00", "days": []},
            },
            "workingHours.days",
        ),
        (FREE_TIME, {**_WINDOW, "durationMinutes": 30, "workingHours": "9-5"}, "workingHours"),
        (
            FREE_TIME,
            {
                **_WINDOW,
                "durationMinutes": 30,
                "workingHours": {"start": "09:00", "end": "17:00", "days": ["FR", "FR"]},
            },
            "workingHours.days",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    api: httpx.Client, factory: Factory, path: str, body: dict[str, Any], field: str
) -> None:
    cal = calendar_in(factory, "UTC")
    owner_key = bearer(factory.key(cal.owner)[1])  # all calendars: unknown ids are a 400
    response = api.post(path, json=body, headers=owner_key)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "validation_error"
    assert field in [e["field"] for e in problem["errors"]], problem


def test_a_body_that_is_not_an_object_is_a_400(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    for path in (FREE_BUSY, FREE_TIME):
        response = api.post(
            path, content=b"[1]", headers={**cal.headers, "Content-Type": "application/json"}
        )
        assert response.status_code == 400, response.text
        assert response.json()["errors"][0]["field"] == "body"


def test_if_free_creates_only_into_free_time(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "UTC")
    taken = create(
        api, cal, title="taken", startsAt="2026-03-02T09:00Z", endsAt="2026-03-02T10:00Z"
    )
    create(
        api,
        cal,
        title="free anyway",
        startsAt="2026-03-02T10:00Z",
        endsAt="2026-03-02T11:00Z",
        transparency="transparent",
    )
    clash = api.post(
        EVENTS,
        json={
            "title": "new",
            "startsAt": "2026-03-02T09:30Z",
            "endsAt": "2026-03-02T10:30Z",
            "ifFree": True,
        },
        headers=cal.headers,
    )
    assert clash.status_code == 409, clash.text
    problem = clash.json()
    assert problem["code"] == "conflict"
    assert problem["conflicts"] == [
        {
            "startsAt": "2026-03-02T09:00:00Z",
            "endsAt": "2026-03-02T10:00:00Z",
            "id": taken["id"],
            "title": "taken",
        }
    ]
    # Adjacent and over transparent time: free.
    made = api.post(
        EVENTS,
        json={
            "title": "new",
            "startsAt": "2026-03-02T10:00Z",
            "endsAt": "2026-03-02T11:00Z",
            "ifFree": True,
        },
        headers=cal.headers,
    )
    assert made.status_code == 201, made.text
    # ifFree with a series is refused (its occurrences are not checked).
    series = api.post(
        EVENTS,
        json={
            "title": "s",
            "startsAt": "2026-03-09T09:00Z",
            "endsAt": "2026-03-09T10:00Z",
            "recurrence": ["RRULE:FREQ=DAILY"],
            "ifFree": True,
        },
        headers=cal.headers,
    )
    assert series.status_code == 400
    assert series.json()["errors"][0]["field"] == "ifFree"


def test_if_free_sees_series_occurrences(api: httpx.Client, factory: Factory) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    create(
        api,
        cal,
        title="standup",
        startsAt="2026-03-02T09:30",
        endsAt="2026-03-02T09:45",
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO,WE"],
    )
    clash = api.post(
        EVENTS,
        json={
            "title": "x",
            "startsAt": "2026-04-01T09:00",
            "endsAt": "2026-04-01T10:00",
            "ifFree": True,
        },
        headers=cal.headers,
    )
    assert clash.status_code == 409, clash.text
    assert clash.json()["conflicts"][0]["startsAt"] == "2026-04-01T09:30:00+02:00"


def test_two_racing_if_free_bookings_of_one_slot_one_wins(
    server: RunningServer, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    body = {
        "title": "slot",
        "startsAt": "2026-05-04T14:00Z",
        "endsAt": "2026-05-04T15:00Z",
        "ifFree": True,
    }
    statuses: list[int] = []
    start = threading.Barrier(2)

    def book() -> None:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            start.wait(timeout=10)
            statuses.append(client.post(EVENTS, json=body, headers=cal.headers).status_code)

    for _ in range(5):  # five rounds, each on a slot of its own
        statuses.clear()
        threads = [threading.Thread(target=book) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(statuses) == [201, 409]
        start.reset()
        moved = datetime.fromisoformat(str(body["startsAt"])) + timedelta(days=1)
        body = {
            **body,
            "startsAt": moved.isoformat(),
            "endsAt": (moved + timedelta(hours=1)).isoformat(),
        }


def test_webhooks_carry_the_events_transparency(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    cal = calendar_in(factory, "UTC")
    watch(db, cal.owner)
    made = create(
        api,
        cal,
        title="hold",
        startsAt="2026-03-02T09:00Z",
        endsAt="2026-03-02T10:00Z",
        transparency="transparent",
    )
    changed = api.patch(
        f"{EVENTS}/{made['id']}", json={"transparency": "opaque"}, headers=cal.headers
    )
    assert changed.status_code == 200
    sent = queued(db, cal.owner)
    assert [(kind, event["transparency"]) for kind, event in sent] == [
        ("calendar.event.created", "transparent"),
        ("calendar.event.updated", "opaque"),
    ]
    bad = api.patch(f"{EVENTS}/{made['id']}", json={"transparency": "busy"}, headers=cal.headers)
    assert bad.status_code == 400
    assert bad.json()["errors"] == [
        {
            "field": "transparency",
            "message": "must be 'opaque' (busy, the default) or 'transparent' (free)",
        }
    ]
    null = api.patch(f"{EVENTS}/{made['id']}", json={"transparency": None}, headers=cal.headers)
    assert null.status_code == 400


def test_no_slot_overlaps_busy_time_or_leaves_working_hours_across_the_spring_change(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    a = factory.calendar(owner, name="A", time_zone="Europe/Berlin")
    b = factory.calendar(owner, name="B", time_zone="America/New_York")
    cal = Cal(owner, a, bearer(factory.key(owner)[1]))
    for body in (
        {"calendarId": a, "startsAt": "2026-03-27T08:10", "endsAt": "2026-03-27T09:20"},
        {"calendarId": a, "startsAt": "2026-03-27T09:00", "endsAt": "2026-03-27T11:05"},
        {"calendarId": a, "startsAt": "2026-03-28", "endsAt": "2026-03-28", "allDay": True},
        {
            "calendarId": a,
            "startsAt": "2026-03-27T12:00",
            "endsAt": "2026-03-27T13:00",
            "recurrence": ["RRULE:FREQ=DAILY"],
        },
        # New York times: Sunday 29 March 11:00-15:30 and 01:00-10:40 in Berlin (CEST).
        {"calendarId": b, "startsAt": "2026-03-29T05:00", "endsAt": "2026-03-29T09:30"},
        {"calendarId": b, "startsAt": "2026-03-28T20:00", "endsAt": "2026-03-29T04:40"},
    ):
        create(api, cal, **body)
    window = {"timeMin": "2026-03-27", "timeMax": "2026-04-01", "calendarIds": [a, b]}
    answer = free_time(
        api,
        cal,
        **window,
        durationMinutes=45,
        workingHours={
            "start": "08:00",
            "end": "18:00",
            "days": ["MO", "TU", "WE", "TH", "FR", "SA", "SU"],
        },
        limit=100,
    )
    busy = [
        (utc(i["startsAt"]), utc(i["endsAt"]))
        for c in free_busy(api, cal, **window)["calendars"]
        for i in c["busy"]
    ]
    assert 0 < len(answer["slots"]) < 100  # every slot of the window, not cut by limit
    berlin = ZoneInfo("Europe/Berlin")
    for slot in answer["slots"]:
        start, end = utc(slot["startsAt"]), utc(slot["endsAt"])
        assert end - start == timedelta(minutes=45)
        assert all(end <= s or start >= e for s, e in busy), slot
        local_start, local_end = start.astimezone(berlin), end.astimezone(berlin)
        assert local_start.minute % 15 == 0
        assert (local_start.hour, local_start.minute) >= (8, 0)
        assert (local_end.hour, local_end.minute) <= (
            18,
            0,
        ) and local_end.date() == local_start.date()
        assert slot["startsAt"] == local_start.isoformat()
    starts = [utc(s["startsAt"]) for s in answer["slots"]]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    days = {s.astimezone(berlin).day for s in starts}
    assert 28 not in days  # taken all day in Berlin
    assert {27, 29, 30} <= days  # before, on and after the change
    sunday = [
        s.astimezone(berlin).strftime("%H:%M") for s in starts if s.astimezone(berlin).day == 29
    ]
    assert sunday[0] == "15:30"  # free from 10:40 but for the series at 12 and B until 15:30


def test_find_free_time_counts_attendees_who_share_their_free_busy_and_names_the_others(
    api: httpx.Client, factory: Factory
) -> None:
    from calendar_service.calendar import sharing
    from calendar_service.platform.timeutil import utcnow

    asking, ana, bob = factory.owner(), factory.owner(), factory.owner()
    factory.db.call(sharing.share, user_id=ana.id, email=asking.email.upper(), now=utcnow())
    _, mine = factory.key(asking, permission="freebusy")
    _, anas = factory.key(ana)
    _, bobs = factory.key(bob)
    for secret, title, extra in (
        (anas, "Ana's dentist", {"recurrence": ["RRULE:FREQ=DAILY;COUNT=3"]}),  # expanded
        (bobs, "Bob's lunch", {}),
    ):
        made = api.post(
            EVENTS,
            json={
                "title": title,
                "startsAt": "2027-05-03T09:00:00Z",
                "endsAt": "2027-05-03T10:00:00Z",
                **extra,
            },
            headers=bearer(secret),
        )
        assert made.status_code == 201, made.text
    body = {
        "timeMin": "2027-05-03T09:00:00Z",
        "timeMax": "2027-05-03T12:00:00Z",
        "durationMinutes": 60,
        "timeZone": "UTC",
        "limit": 1,
        "attendees": [ana.email, bob.email, "nobody@example.org"],
    }
    found = api.post(FREE_TIME, json=body, headers=bearer(mine))
    assert found.status_code == 200, found.text
    answer = found.json()
    assert answer["slots"][0]["startsAt"] == "2027-05-03T10:00:00Z"  # Ana's hour is busy
    assert answer["attendeesConsidered"] == [ana.email]
    assert answer["attendeesUnknown"] == [bob.email, "nobody@example.org"]
    assert "dentist" not in found.text
    alone = api.post(FREE_TIME, json={**body, "attendees": None}, headers=bearer(mine)).json()
    assert alone["slots"][0]["startsAt"] == "2027-05-03T09:00:00Z"
    assert "attendeesConsidered" not in alone
    factory.db.call(sharing.stop_sharing, user_id=ana.id, email=asking.email)
    again = api.post(FREE_TIME, json=body, headers=bearer(mine)).json()
    assert again["attendeesConsidered"] == [] and again["slots"][0]["startsAt"].endswith(
        "09:00:00Z"
    )
