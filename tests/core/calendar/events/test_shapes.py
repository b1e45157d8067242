"""The list formats its rows on a fast path of its own: its items must stay exactly the
events that create and get return, in UTC and in zoned calendars alike. Its occurrences are
objects kept with their chunks and shared by every list: read-only, and written by ``dumps``
from the JSON kept with them."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import orjson
import pytest

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.events.shapes import Prepared, dumps
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def _listed(db: Database, principal: Principal, time_min: str, time_max: str) -> list[Any]:
    """The events ``events.list_events`` gives in the window."""
    listed = db.call(
        events.list_events,
        principal=principal,
        time_min=time_min,
        time_max=time_max,
        token_key=b"test page-token key",
    )
    events_found: list[Any] = listed["events"]
    return events_found


def test_list_items_equal_the_created_and_fetched_events_in_every_time_zone(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    berlin = factory.calendar(owner, name="Berlin", time_zone="Europe/Berlin")
    principal = events.owner_principal(owner.id)
    # now has microseconds; the second create is a whole second: both forms are formatted
    times = [utcnow(), utcnow().replace(microsecond=0) + timedelta(seconds=1)]
    created = []
    for calendar_id, now in zip((owner.default_calendar_id, berlin), times, strict=True):
        data = EventCreate(
            title="Shape",
            starts_at="2026-07-01T09:30:00",
            ends_at="2026-07-01T14:00:00.250+02:00",
            calendar_id=calendar_id,
            description="d",
        )
        created.append(db.call(events.create_event, principal=principal, data=data, now=now))
    listed = _listed(db, principal, "2026-07-01T00:00:00Z", "2026-07-02T00:00:00Z")
    fetched = [db.call(events.get_event, principal=principal, event_id=e["id"]) for e in created]
    key = {e["id"]: e for e in listed}
    assert [key[e["id"]] for e in created] == created == fetched
    assert created[1]["startsAt"] == "2026-07-01T09:30:00+02:00"
    assert "." not in created[1]["createdAt"] and created[1]["endsAt"].endswith(".250000+02:00")


@pytest.mark.parametrize("time_zone", ["UTC", "Europe/Berlin"])
def test_listed_transparent_events_and_changed_occurrences_equal_their_get(
    db: Database, factory: Factory, time_zone: str
) -> None:
    """The window query packs a row's transparency, series and original start into one column
    (``queries.LIST_EXTRA``): each combination reads back exactly as a get shows it."""
    owner = factory.owner()
    calendar = factory.calendar(owner, name="Packed", time_zone=time_zone)
    principal = events.owner_principal(owner.id)
    made = []
    for transparency in ("opaque", "transparent"):
        body = {
            "title": f"single {transparency}",
            "startsAt": "2026-07-01T08:00:00Z",
            "endsAt": "2026-07-01T09:00:00Z",
            "calendarId": calendar,
            "transparency": transparency,
        }
        made.append(
            db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())[
                0
            ]["id"]
        )
    series = db.call(
        events.create_event_from_input,
        principal=principal,
        body={
            "title": "weekly",
            "startsAt": "2026-06-24T10:00:00Z",
            "endsAt": "2026-06-24T11:00:00Z",
            "calendarId": calendar,
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=3"],
        },
        now=utcnow(),
    )[0]
    occurrences = _listed(db, principal, "2026-06-30T00:00:00Z", "2026-07-09T00:00:00Z")
    changed = [e["id"] for e in occurrences if e.get("recurringEventId") == series["id"]]
    assert len(changed) == 2
    for occurrence, transparency in zip(changed, ("opaque", "transparent"), strict=True):
        db.call(
            events.update_event,
            principal=principal,
            event_id=occurrence,
            body={"title": f"moved {transparency}", "transparency": transparency},
            now=utcnow(),
        )
        made.append(occurrence)
    listed = _listed(db, principal, "2026-06-30T00:00:00Z", "2026-07-09T00:00:00Z")
    fetched = [db.call(events.get_event, principal=principal, event_id=i) for i in made]
    assert sorted(listed, key=lambda e: e["id"]) == sorted(fetched, key=lambda e: e["id"])
    assert {e["transparency"] for e in listed} == {"opaque", "transparent"}
    assert sum("recurringEventId" in e for e in listed) == 2


@pytest.mark.parametrize("time_zone", ["UTC", "Europe/Berlin"])
def test_listed_all_day_and_changed_events_equal_their_get(
    db: Database, factory: Factory, time_zone: str
) -> None:
    """All day comes packed with the transparency (``queries.LIST_EXTRA``), and the last
    change only when it is not the creation (``queries.LIST_UPDATED``): each combination
    reads back exactly as a get shows it."""
    owner = factory.owner()
    calendar = factory.calendar(owner, name="Days", time_zone=time_zone)
    principal = events.owner_principal(owner.id)
    made = []
    for all_day, transparency in itertools.product((False, True), ("opaque", "transparent")):
        body: dict[str, Any] = {
            "title": f"{all_day} {transparency}",
            "calendarId": calendar,
            "transparency": transparency,
            "allDay": all_day,
            "startsAt": "2026-07-01" if all_day else "2026-07-01T08:00:00Z",
            "endsAt": "2026-07-01" if all_day else "2026-07-01T09:00:00Z",
        }
        now = utcnow()
        made.append(
            db.call(events.create_event_from_input, principal=principal, body=body, now=now)[0]
        )
    # one changed later, one at the same instant as its creation (a whole second)
    later = utcnow() + timedelta(seconds=1)
    for event, now in zip(made[:2], (later, later.replace(microsecond=0)), strict=True):
        db.call(
            events.update_event,
            principal=principal,
            event_id=event["id"],
            body={"title": "changed"},
            now=now,
        )
    listed = db.call(
        events.list_events,
        principal=principal,
        time_min="2026-06-30T00:00:00Z",
        time_max="2026-07-03T00:00:00Z",
        token_key=b"test page-token key",
    )["events"]
    fetched = [db.call(events.get_event, principal=principal, event_id=e["id"]) for e in made]
    assert sorted(listed, key=lambda e: e["id"]) == sorted(fetched, key=lambda e: e["id"])
    assert sorted(e["allDay"] for e in listed) == [False, False, True, True]
    assert sum(e["updatedAt"] != e["createdAt"] for e in listed) == 2


def test_listed_occurrences_are_shared_read_only_and_written_as_their_objects(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = events.owner_principal(owner.id)
    body = {
        "title": "Weekly",
        "startsAt": "2026-07-01T09:30:00Z",
        "endsAt": "2026-07-01T10:00:00Z",
        "recurrence": ["RRULE:FREQ=WEEKLY"],
    }
    db.call(events.create_event_from_input, principal=principal, body=body, now=utcnow())
    window = {"time_min": "2026-07-01T00:00:00Z", "time_max": "2026-08-01T00:00:00Z"}
    first, again = (
        db.call(events.list_events, principal=principal, token_key=b"k", **window) for _ in range(2)
    )
    occurrences = first["events"]
    assert len(occurrences) == 5
    assert all(type(e) is Prepared for e in occurrences)
    assert [id(e) for e in again["events"]] == [id(e) for e in occurrences]  # kept, shared
    with pytest.raises(TypeError, match="copy"):
        occurrences[0]["title"] = "changed for everyone"
    with pytest.raises(TypeError):
        occurrences[0].update(title="changed for everyone")
    copy = dict(occurrences[0])
    copy["title"] = "mine"
    assert occurrences[0]["title"] == "Weekly"
    plain = {**first, "events": [dict(e) for e in occurrences]}
    assert dumps(first) == orjson.dumps(plain)


def test_dumps_writes_other_subclasses_as_their_plain_values() -> None:
    class Name(str):
        pass

    class Mapping(dict[str, Any]):
        pass

    prepared = Prepared({"id": "e1"})
    value = {"a": Name("x"), "b": Mapping(c=[prepared]), "d": True}
    assert dumps(value) == orjson.dumps({"a": "x", "b": {"c": [{"id": "e1"}]}, "d": True})
