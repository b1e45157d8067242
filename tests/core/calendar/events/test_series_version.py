"""``calendars.series_version``: triggers count every change of a calendar's series and their
exceptions, whatever writes them, and the list reads a calendar's series from memory only for
a version it read them at (``events.queries.window_series``)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sqlalchemy import Connection, text, update

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.events import queries
from calendar_service.calendar.events.queries import events_t
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

WINDOW = {"time_min": "2026-03-02T00:00:00Z", "time_max": "2026-03-30T00:00:00Z"}
WEEKLY = {
    "title": "Weekly",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T10:00:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY"],
}


def _version(db: Database, calendar_id: str) -> int:
    return int(
        db.call(
            lambda conn: conn.execute(
                text("SELECT series_version FROM calendars WHERE id = :id"), {"id": calendar_id}
            ).scalar_one()
        )
    )


def _principal(factory: Factory, calendar_id: str | None = None) -> tuple[Principal, Any]:
    owner = factory.owner()
    calendar_id = calendar_id or owner.default_calendar_id
    key_id, _ = factory.key(owner, calendar_id=calendar_id)
    return Principal(key_id, owner.id, "write", calendar_id, utcnow()), owner


def _titles(db: Database, principal: Principal) -> list[tuple[str, str]]:
    page = db.call(
        events.list_events, principal=principal, token_key=b"test page-token key", **WINDOW
    )
    return [(e["id"], e["title"]) for e in page["events"]]


def test_every_backend_has_the_triggers_at_head(db: Database) -> None:
    """A later migration that rebuilds ``events`` on SQLite drops its triggers: this fails."""
    if db.engine.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        wanted = {"events_series_version_insert", "events_series_version_update"}
        wanted.add("events_series_version_delete")
    else:
        query = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass"
        wanted = {"events_series_version"}
    found = set(db.call(lambda conn: conn.execute(text(query)).scalars().all()))
    assert wanted <= found, found


def test_each_change_of_a_series_or_an_occurrence_counts_and_single_events_do_not(
    db: Database, factory: Factory
) -> None:
    principal, _ = _principal(factory)
    calendar = principal.calendar_id
    assert calendar is not None
    seen = [_version(db, calendar)]

    def step(change: Any, **arguments: Any) -> int:
        result = db.call(change, principal=principal, now=utcnow(), **arguments)
        seen.append(_version(db, calendar))
        return result  # type: ignore[no-any-return]

    single, _ = step(
        events.create_event_from_input,
        body={"title": "One", "startsAt": "2026-03-03T09:00:00Z", "endsAt": "2026-03-03T10:00Z"},
    )
    step(events.update_event, event_id=single["id"], body={"title": "Two"})
    step(events.delete_event, event_id=single["id"])
    assert seen == [0, 0, 0, 0], "single events do not count"
    series, _ = step(events.create_event_from_input, body=WEEKLY)
    occurrence = f"{series['id']}_20260309T090000Z"
    step(events.update_event, event_id=occurrence, body={"title": "Moved"})
    step(events.delete_event, event_id=f"{series['id']}_20260316T090000Z")
    step(events.update_event, event_id=series["id"], body={"title": "Renamed"})
    step(events.delete_event, event_id=series["id"])
    counted = seen[4:]
    assert all(b > a for a, b in itertools.pairwise(counted)), seen


def test_the_list_shows_each_change_at_once_however_it_was_written(
    db: Database, factory: Factory
) -> None:
    principal, _ = _principal(factory)
    series, _ = db.call(
        events.create_event_from_input, principal=principal, body=WEEKLY, now=utcnow()
    )
    assert {title for _, title in _titles(db, principal)} == {"Weekly"}  # read and kept
    db.call(
        events.update_event,
        principal=principal,
        event_id=f"{series['id']}_20260309T090000Z",
        body={"title": "Moved"},
        now=utcnow(),
    )
    assert ("Moved" in {title for _, title in _titles(db, principal)}) is True

    # A change by SQL, as another process or a person at a prompt makes it: the trigger counts
    # it, and the list reads the series again (its plans are kept by the row's updated_at).
    def rename(conn: Connection) -> None:
        conn.execute(
            update(events_t)
            .where(events_t.c.id == series["id"])
            .values(title="By hand", updated_at=utcnow())
        )

    db.call(rename)
    assert sorted({title for _, title in _titles(db, principal)}) == ["By hand", "Moved"]

    def remove(conn: Connection) -> None:
        conn.execute(
            text("DELETE FROM events WHERE recurring_event_id = :id"), {"id": series["id"]}
        )
        conn.execute(text("DELETE FROM events WHERE id = :id"), {"id": series["id"]})

    db.call(remove)
    assert _titles(db, principal) == []


def test_a_series_moved_to_another_calendar_leaves_one_list_and_joins_the_other(
    db: Database, factory: Factory
) -> None:
    """The API moves no event between calendars; SQL can, and both calendars count it."""
    principal, owner = _principal(factory)
    other = factory.calendar(owner)
    key_id, _ = factory.key(owner, calendar_id=other)
    other_principal = Principal(key_id, owner.id, "write", other, utcnow())
    series, _ = db.call(
        events.create_event_from_input, principal=principal, body=WEEKLY, now=utcnow()
    )
    assert len(_titles(db, principal)) == 4 and _titles(db, other_principal) == []
    before = _version(db, other)

    def move(conn: Connection) -> None:
        conn.execute(
            text("UPDATE events SET calendar_id = :calendar WHERE id = :id"),
            {"calendar": other, "id": series["id"]},
        )

    db.call(move)
    assert _version(db, other) > before
    assert _titles(db, principal) == [] and len(_titles(db, other_principal)) == 4


def test_a_calendar_with_more_series_than_are_kept_is_asked_for_its_window_each_time(
    db: Database, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queries, "SERIES_KEPT_MOST", 2)
    principal, _ = _principal(factory)
    for n in range(3):
        db.call(
            events.create_event_from_input,
            principal=principal,
            body={**WEEKLY, "title": f"Weekly {n}"},
            now=utcnow(),
        )
    first = _titles(db, principal)
    assert len(first) == 12
    db.call(
        events.create_event_from_input,
        principal=principal,
        body={**WEEKLY, "title": "Weekly 3"},
        now=utcnow(),
    )
    assert len(_titles(db, principal)) == 16
