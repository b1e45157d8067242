"""POST /api/v1/calendar/events: the 201, calendar choice, time zones, all-day, validation."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, text

from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.rest.conftest import EVENTS, create_event, event_body, with_work
from tests.support import Factory, bearer, wait_for


@pytest.fixture
def secret(factory: Factory) -> str:
    """A write key of a new owner."""
    return factory.key(factory.owner())[1]


def _errors(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "validation_error"
    return {e["field"]: e["message"] for e in body["errors"]}


def test_create_returns_201_the_event_and_its_location(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    body = event_body(description="Bring notes", location="Room 4")
    response = api.post(EVENTS, json=body, headers=bearer(secret))
    assert response.status_code == 201
    event = response.json()
    assert event["id"].startswith("ev_")
    assert response.headers["location"].endswith(f"{EVENTS}/{event['id']}")
    assert event["calendarId"] == owner.default_calendar_id
    assert event["calendar"] == "Личное"
    assert event["startsAt"] == "2026-03-02T09:00:00Z"
    assert event["endsAt"] == "2026-03-02T10:00:00Z"
    assert (event["allDay"], event["description"], event["location"]) == (
        False,
        "Bring notes",
        "Room 4",
    )
    fetched = api.get(response.headers["location"], headers=bearer(secret))
    assert fetched.json() == event


def test_times_without_an_offset_are_read_in_the_calendars_time_zone(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    body = event_body(startsAt="2026-03-02T09:00", endsAt="2026-07-02T09:00:00Z")
    event = api.post(EVENTS, json=body, headers=bearer(secret)).json()
    assert event["startsAt"] == "2026-03-02T09:00:00+01:00"
    assert event["endsAt"] == "2026-07-02T11:00:00+02:00"


def test_a_local_time_inside_a_dst_gap_moves_forward(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    body = event_body(startsAt="2026-03-29T02:30", endsAt="2026-03-29T04:00")
    event = api.post(EVENTS, json=body, headers=bearer(secret)).json()
    assert event["startsAt"] == "2026-03-29T03:30:00+02:00"


def test_all_day_events_run_midnight_to_midnight_in_the_calendars_zone(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner(time_zone="America/New_York")
    _, secret = factory.key(owner)
    one_day = create_event(api, secret, allDay=True, startsAt="2026-03-02", endsAt="2026-03-02")
    assert (one_day["startsAt"], one_day["endsAt"]) == (
        "2026-03-02T00:00:00-05:00",
        "2026-03-03T00:00:00-05:00",
    )
    two_days = create_event(
        api, secret, allDay=True, startsAt="2026-03-07T00:00:00", endsAt="2026-03-09"
    )
    # Across the DST change: midnight to midnight, 47 hours.
    assert (two_days["startsAt"], two_days["endsAt"]) == (
        "2026-03-07T00:00:00-05:00",
        "2026-03-09T00:00:00-04:00",
    )
    assert two_days["allDay"] is True


def test_all_day_events_refuse_times_that_are_not_midnight(api: httpx.Client, secret: str) -> None:
    response = api.post(
        EVENTS,
        json=event_body(allDay=True, startsAt="2026-03-02T09:00:00Z"),
        headers=bearer(secret),
    )
    assert "midnight" in _errors(response)["startsAt"]


def test_a_title_of_300_characters_is_accepted_and_301_refused(
    api: httpx.Client, secret: str
) -> None:
    ok = api.post(EVENTS, json=event_body(title="я" * 300), headers=bearer(secret))
    assert ok.status_code == 201
    assert ok.json()["title"] == "я" * 300
    too_long = api.post(EVENTS, json=event_body(title="я" * 301), headers=bearer(secret))
    assert "300" in _errors(too_long)["title"]


def test_titles_are_trimmed_and_must_not_be_blank(api: httpx.Client, secret: str) -> None:
    trimmed = api.post(EVENTS, json=event_body(title="  Standup  "), headers=bearer(secret))
    assert trimmed.json()["title"] == "Standup"
    assert (
        "empty"
        in _errors(api.post(EVENTS, json=event_body(title="   "), headers=bearer(secret)))["title"]
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("startsAt", "tomorrow at nine"),
        ("startsAt", "2026-02-30T09:00:00Z"),
        ("startsAt", "2026-03-02T25:00:00Z"),
        ("endsAt", "2026-03-02"),
        ("endsAt", ""),
    ],
)
def test_unparseable_date_times_are_refused_naming_the_field(
    api: httpx.Client, secret: str, field: str, value: str
) -> None:
    response = api.post(EVENTS, json=event_body(**{field: value}), headers=bearer(secret))
    assert field in _errors(response)


def test_an_end_before_the_start_is_refused_and_equal_is_accepted(
    api: httpx.Client, secret: str
) -> None:
    backwards = event_body(startsAt="2026-03-02T10:00:00Z", endsAt="2026-03-02T09:59:59Z")
    assert "before" in _errors(api.post(EVENTS, json=backwards, headers=bearer(secret)))["endsAt"]
    instant = event_body(startsAt="2026-03-02T10:00:00Z", endsAt="2026-03-02T11:00:00+01:00")
    assert api.post(EVENTS, json=instant, headers=bearer(secret)).status_code == 201


def test_wrong_types_missing_and_unknown_fields_are_all_listed_at_once(
    api: httpx.Client, secret: str
) -> None:
    body = {
        "title": 5,
        "startsAt": 1772442000,
        "allDay": "yes",
        "location": ["x"],
        "startAt": "2026-03-02T09:00:00Z",
    }
    errors = _errors(api.post(EVENTS, json=body, headers=bearer(secret)))
    assert errors == {
        "title": "must be a string",
        "startsAt": "must be a string",
        "endsAt": "is required",
        "allDay": "must be true or false",
        "location": "must be a string",
        "startAt": "is not a known field",
    }


def test_type_errors_and_value_errors_are_reported_together(api: httpx.Client, secret: str) -> None:
    body = {"title": "   ", "startsAt": "garbage", "endsAt": 7}
    assert set(_errors(api.post(EVENTS, json=body, headers=bearer(secret)))) == {
        "title",
        "startsAt",
        "endsAt",
    }


@pytest.mark.parametrize(
    "content", [b"[1, 2]", b'"a string"', b"42", b"null", b"{not json", b"", b"\xff\xfe"]
)
def test_bodies_that_are_not_json_objects_are_refused(
    api: httpx.Client, secret: str, content: bytes
) -> None:
    response = api.post(
        EVENTS,
        content=content,
        headers={**bearer(secret), "Content-Type": "application/json"},
    )
    assert "body" in _errors(response)


def test_a_body_over_one_mebibyte_is_refused_with_413(api: httpx.Client, secret: str) -> None:
    body = event_body(description="x" * (1024 * 1024))
    response = api.post(EVENTS, json=body, headers=bearer(secret))
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    listed = api.get(EVENTS, headers=bearer(secret)).json()
    assert listed["events"] == []


def test_a_chunked_body_over_one_mebibyte_is_refused_with_413(
    api: httpx.Client, secret: str
) -> None:

    def chunks() -> Any:
        for _ in range(20):
            yield b"x" * 65536

    response = api.post(
        EVENTS,
        content=chunks(),
        headers={**bearer(secret), "Content-Type": "application/json"},
    )
    assert response.status_code == 413


def test_a_body_that_is_not_sent_as_json_is_refused_with_415(
    api: httpx.Client, secret: str
) -> None:
    response = api.post(EVENTS, data={"title": "x"}, headers=bearer(secret))
    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]


def test_calendar_id_and_name_must_agree_when_both_are_sent(
    api: httpx.Client, factory: Factory
) -> None:
    _, work, secret = with_work(factory)
    agreeing = api.post(
        EVENTS, json=event_body(calendarId=work, calendar="Work"), headers=bearer(secret)
    )
    assert agreeing.json()["calendarId"] == work
    clash = api.post(
        EVENTS, json=event_body(calendarId=work, calendar="Личное"), headers=bearer(secret)
    )
    # A key for all the calendars hears which calendars the pair names (a one-calendar key
    # does not: test_scope_messages.py).
    assert "calendarId" in _errors(clash)["calendar"]
    assert clash.json()["errors"] == [
        {
            "field": "calendar",
            "message": f"calendarId {work!r} is calendar 'Work', not 'Личное'; send one of "
            "them, or both naming the same calendar",
        }
    ]


def test_an_unknown_calendar_name_is_refused_and_never_created(
    api: httpx.Client, secret: str
) -> None:
    response = api.post(EVENTS, json=event_body(calendar="Holidays"), headers=bearer(secret))
    assert "Holidays" in _errors(response)["calendar"]
    calendars = api.get(EVENTS, headers=bearer(secret)).json()["calendars"]
    assert [c["name"] for c in calendars] == ["Личное"]


def test_an_event_goes_to_the_named_calendar(api: httpx.Client, factory: Factory) -> None:
    _, work, secret = with_work(factory, time_zone="Asia/Tokyo")
    event = api.post(
        EVENTS,
        json=event_body(calendar="Work", startsAt="2026-03-02T09:00"),
        headers=bearer(secret),
    ).json()
    assert (event["calendarId"], event["calendar"]) == (work, "Work")
    assert event["startsAt"] == "2026-03-02T09:00:00+09:00"


@pytest.mark.parametrize("one_calendar", [False, True], ids=["all-calendars", "one-calendar"])
def test_an_event_created_while_the_last_step_of_its_calendars_deletion_runs_gets_a_4xx(
    api: httpx.Client, factory: Factory, one_calendar: bool
) -> None:
    """The race of a create with a deletion, made deterministic: the deletion's last step is
    held open (its transaction holds the calendar's row, or SQLite's write lock), the create
    is sent and (PostgreSQL) seen waiting for the row, then the deletion commits. The create
    is refused as for a calendar that does not exist (or, on SQLite, where it can only run
    after the deletion, for the key that the deletion revoked): never a foreign key's 500."""
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner, calendar_id=work if one_calendar else None)
    body = event_body() if one_calendar else event_body(calendarId=work)
    db = factory.db
    answers: list[httpx.Response] = []
    with db.engine.connect() as deleting:
        held = deleting.begin()
        step = calendar_changes.delete_calendar_step(
            deleting, user_id=owner.id, calendar_id=work, now=utcnow()
        )
        assert step["done"]
        sender = threading.Thread(
            target=lambda: answers.append(api.post(EVENTS, json=body, headers=bearer(secret)))
        )
        sender.start()
        if db.engine.dialect.name == "postgresql":
            wait_for(lambda: _waiting_for_a_lock(db), what="the create waiting for the row")
        held.commit()
    sender.join(timeout=120)
    [answer] = answers
    if answer.status_code == 401:  # SQLite: the create ran after the deletion, as one
        assert one_calendar and answer.json()["code"] == "revoked_api_key"
        return
    field = "calendar" if one_calendar else "calendarId"
    assert _errors(answer) == {field: f"no calendar with id {work!r}"}


def _waiting_for_a_lock(db: Database) -> bool:
    def waiting(conn: Connection) -> int:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar_one()
        )

    return db.call(waiting) > 0
