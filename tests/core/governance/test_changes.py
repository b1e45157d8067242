"""The change log in the core: ids, a write that fails leaving none, an import's changes and
their undo, a dry run's savepoint, the retention purge (docs/changes.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from calendar_service.access import keys
from calendar_service.calendar import events
from calendar_service.governance.change_list import get_change, list_changes
from calendar_service.governance.undo import undo_change
from calendar_service.interop.ical.importing import import_events
from calendar_service.journal.change_record import Via, instant_of, new_change_id
from calendar_service.journal.change_table import changes_t
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.db import Database, rolled_back
from calendar_service.platform.db.channels import OUTBOX_DIRTY
from calendar_service.platform.errors import ChangedSince, NotFound
from calendar_service.platform.models import EventCreate, events_t, keys_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

SERIES_FILE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\n"
    "BEGIN:VEVENT\r\nUID:yoga@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "DTSTART:20260303T180000Z\r\nDTEND:20260303T190000Z\r\n"
    "RRULE:FREQ=WEEKLY;COUNT=4\r\nSUMMARY:{title}\r\nEND:VEVENT\r\n"
    "BEGIN:VEVENT\r\nUID:yoga@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "RECURRENCE-ID:20260310T180000Z\r\nDTSTART:20260310T190000Z\r\nDTEND:20260310T200000Z\r\n"
    "SUMMARY:{title} (late)\r\nEND:VEVENT\r\n"
    "BEGIN:VEVENT\r\nUID:walk@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "DTSTART:20260304T080000Z\r\nDTEND:20260304T090000Z\r\nSUMMARY:Walk\r\nEND:VEVENT\r\n"
    "END:VCALENDAR\r\n"
)


def _rows(conn: Connection, calendar_id: str) -> list[tuple[Any, ...]]:
    """Every event row of a calendar, as stored, but when each was last written."""
    found = conn.execute(
        select(events_t).where(events_t.c.calendar_id == calendar_id).order_by(events_t.c.id)
    )
    return [tuple(v for k, v in r._mapping.items() if k != "updated_at") for r in found]


def test_a_change_id_carries_its_time_and_nothing_else_reads_as_one() -> None:
    for at in (utcnow(), datetime(1970, 1, 1, tzinfo=UTC), datetime(2200, 12, 31, tzinfo=UTC)):
        change_id = new_change_id(at)
        assert change_id.startswith("chg_") and len(change_id) == 34
        assert instant_of(change_id) == at
    assert new_change_id(utcnow()) != new_change_id(utcnow())
    others = (
        "chg_",
        "ev_066133a21e8c4d5f3b2a1c0d9e8f7a6b",
        "chg_066133a21e8c4d5f3b2a1c0d9e8f7a6B",  # not hexadecimal
        "chg_066133a21e8c4d5f3b2a1c0d9e8f7a6",  # too short
        "chg_ffffffffffffffff0000000000000000",  # past the year 9999
    )
    for other in others:
        assert instant_of(other) is None, other


def test_a_write_that_fails_after_writing_leaves_no_change(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    principal = keys.owner_principal(owner.id)
    data = EventCreate(title="Lost", starts_at="2026-03-02T09:00Z", ends_at="2026-03-02T10:00Z")

    def create_then_fail(conn: Connection) -> None:
        events.create_event(conn, principal=principal, data=data, now=utcnow())
        assert list_changes(conn, principal=principal)["changes"]
        raise NotFound("after the write")

    with pytest.raises(NotFound):
        db.call(create_then_fail)
    assert db.call(list_changes, principal=principal) == {"changes": []}


def test_a_dry_run_savepoint_keeps_nothing_of_the_block_and_its_wake_up(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = keys.owner_principal(owner.id)
    data = EventCreate(title="Maybe", starts_at="2026-03-02T09:00Z", ends_at="2026-03-02T10:00Z")

    def try_it(conn: Connection) -> int:
        with rolled_back(conn):
            events.create_event(conn, principal=principal, data=data, now=utcnow())
            conn.info[OUTBOX_DIRTY] = True
        assert OUTBOX_DIRTY not in conn.info
        with pytest.raises(NotFound), rolled_back(conn):
            events.create_event(conn, principal=principal, data=data, now=utcnow())
            raise NotFound("inside")
        return int(conn.execute(select(func.count()).select_from(changes_t)
                                .where(changes_t.c.user_id == owner.id)).scalar_one())  # fmt: skip

    assert db.call(try_it) == 0
    assert db.call(events.list_events, principal=principal, token_key=b"k")["events"] == []


def test_an_import_is_one_change_an_event_and_each_undoes_whole(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = keys.owner_principal(owner.id)
    calendar = owner.default_calendar_id

    def imported(title: str) -> dict[str, Any]:
        report: dict[str, Any] = db.call(
            import_events,
            principal=principal,
            data=SERIES_FILE.format(title=title).encode(),
            now=utcnow(),
        )
        return report

    empty = db.call(_rows, calendar)
    assert imported("Yoga")["created"] == 2
    first = db.call(_rows, calendar)
    made = db.call(list_changes, principal=principal)["changes"]
    assert [(c["kind"], c["transport"], c["actor"]["type"]) for c in made] == [
        ("created", "import", "owner")
    ] * 2
    assert imported("Yoga")["skipped"] == 2  # the same file: no change
    assert len(db.call(list_changes, principal=principal)["changes"]) == 2
    assert imported("Pilates")["updated"] == 1  # the walk is the same: skipped
    changed = db.call(list_changes, principal=principal)["changes"][:1]
    assert {c["kind"] for c in changed} == {"updated"}
    series = changed[0]
    assert series["after"]["recurrence"]
    assert series["before"]["title"] == "Yoga" and series["after"]["title"] == "Pilates"
    now = utcnow()
    for change in changed:  # back to the first import: the series with its late occurrence
        db.call(undo_change, principal=principal, change_id=change["id"], now=now)
    assert db.call(_rows, calendar) == first
    for change in made:
        db.call(undo_change, principal=principal, change_id=change["id"], now=now)
    assert db.call(_rows, calendar) == empty


def test_an_undo_names_the_later_changes_or_a_deleted_calendar(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    principal = keys.owner_principal(owner.id)
    body = {"title": "T", "startsAt": "2026-03-02T09:00Z", "endsAt": "2026-03-02T10:00Z"}
    made, _ = db.call(
        events.create_event_from_input,
        principal=principal,
        body={**body, "calendarId": work},
        now=utcnow(),
    )
    for title in ("A", "B"):
        db.call(
            events.update_event,
            principal=principal,
            event_id=made["id"],
            body={"title": title},
            now=utcnow(),
        )
    first, *_ = reversed(db.call(list_changes, principal=principal)["changes"])
    with pytest.raises(ChangedSince) as refused:
        db.call(undo_change, principal=principal, change_id=first["id"], now=utcnow())
    assert [c["kind"] for c in refused.value.changes] == ["updated", "updated"]
    assert refused.value.to_dict()["code"] == "conflict"
    from calendar_service.calendar import calendar_edits as calendar_changes

    while not db.call(
        calendar_changes.delete_calendar_step, user_id=owner.id, calendar_id=work, now=utcnow()
    )["done"]:
        pass
    with pytest.raises(ChangedSince, match="its calendar was deleted"):
        db.call(undo_change, principal=principal, change_id=first["id"], now=utcnow(), force=True)
    listed = db.call(get_change, principal=principal, change_id=first["id"])
    assert listed["calendarId"] == work  # still in the log, with the calendar's id


def test_changes_are_kept_as_long_as_the_call_history_then_purged(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    principal = keys.owner_principal(owner.id)
    now = utcnow()
    for age in (0, 89, 91):
        db.call(
            events.create_event,
            principal=principal,
            data=EventCreate(
                title=f"{age} days", starts_at="2026-03-02T09:00Z", ends_at="2026-03-02T10:00Z"
            ),
            now=now - timedelta(days=age),
        )
    purged = db.call(purge_expired, now=now, call_history_days=90)
    assert purged["changes"] >= 1
    kept = db.call(list_changes, principal=principal)["changes"]
    assert [c["after"]["title"] for c in kept] == ["0 days", "89 days"]


def test_a_connected_apps_change_names_it_as_an_app(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner, name="Claude")
    db.call(lambda conn: conn.execute(keys_t.update().where(keys_t.c.id == key_id)
                                      .values(kind="app")))  # fmt: skip
    principal = keys.authorize(db.call(keys.key_row_by_id, key_id=key_id), now=utcnow())
    data = EventCreate(title="Booked", starts_at="2026-03-02T09:00Z", ends_at="2026-03-02T10:00Z")
    db.call(
        events.create_event, principal=principal, data=data, now=utcnow(),
        via=Via.of(principal, "mcp", "req_1"),
    )  # fmt: skip
    [change] = db.call(list_changes, principal=keys.owner_principal(owner.id))["changes"]
    assert change["actor"] == {"type": "app", "id": key_id, "name": "Claude"}
    assert (change["transport"], change["requestId"]) == ("mcp", "req_1")
