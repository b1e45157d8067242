"""Incremental sync in the core (``events.sync``): the last page of a list carries a sync token;
given back, it returns exactly the changes made since, once, in the key's calendars only."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, text, update

from calendar_service.access.keys import Principal
from calendar_service.calendar import events
from calendar_service.calendar.events import sync
from calendar_service.interop.ical import importing
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database, atomic
from calendar_service.platform.errors import SyncTokenExpired, ValidationFailed
from calendar_service.platform.models import event_sync_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

KEY = b"test page-token key"
WEEKLY = {
    "title": "Weekly",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T10:00:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY"],
}


def _event(title: str, day: int = 3) -> dict[str, Any]:
    return {
        "title": title,
        "startsAt": f"2026-03-{day:02d}T09:00:00Z",
        "endsAt": f"2026-03-{day:02d}T10:00:00Z",
    }


def _principal(factory: Factory, *, one_calendar: bool = True) -> Principal:
    owner = factory.owner()
    calendar_id = owner.default_calendar_id if one_calendar else None
    key_id, _ = factory.key(owner, calendar_id=calendar_id)
    return Principal(key_id, owner.id, "write", calendar_id, utcnow())


def _all_pages(db: Database, principal: Principal, **options: Any) -> dict[str, Any]:
    """Every page of a list (``options``: a sync token, ``singleEvents``...): the last page's
    answer with all the events."""
    found: list[dict[str, Any]] = []
    page_token = None
    while True:
        page = db.call(
            events.list_events,
            principal=principal,
            token_key=KEY,
            page_token=page_token,
            **options,
        )
        found.extend(page["events"])
        page_token = page.get("nextPageToken")
        if page_token is None:
            return {**page, "events": found}
        assert "nextSyncToken" not in page


def _full_list(db: Database, principal: Principal, **options: Any) -> dict[str, Any]:
    """Every page of a list of series (``singleEvents=false``)."""
    return _all_pages(db, principal, single_events=False, **options)


def _sync(db: Database, principal: Principal, token: str, **options: Any) -> dict[str, Any]:
    """Every page of a sync from ``token``: all the changes, and the new token."""
    return _all_pages(db, principal, sync_token=token, **options)


def _ids(page: dict[str, Any]) -> list[str]:
    return [e["id"] for e in page["events"]]


def _change(db: Database, fn: Any, principal: Principal, **arguments: Any) -> Any:
    return db.call(fn, principal=principal, now=utcnow(), **arguments)


def test_every_backend_has_the_sync_triggers_at_head(db: Database) -> None:
    """A later migration that rebuilds ``events`` on SQLite drops its triggers: this fails."""
    if db.engine.dialect.name == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'"
        wanted = {"events_sync_insert", "events_sync_update", "events_sync_delete"}
    else:
        query = "SELECT tgname FROM pg_trigger WHERE tgrelid = 'events'::regclass"
        wanted = {"events_sync"}
    found = set(db.call(lambda conn: conn.execute(text(query)).scalars().all()))
    assert wanted <= found, found


def test_only_the_last_page_of_a_list_carries_a_sync_token(db: Database, factory: Factory) -> None:
    principal = _principal(factory)
    for day in (3, 4, 5):
        _change(db, events.create_event_from_input, principal, body=_event(f"d{day}", day))
    first = db.call(events.list_events, principal=principal, token_key=KEY, limit=2)
    assert "nextPageToken" in first and "nextSyncToken" not in first
    last = db.call(
        events.list_events,
        principal=principal,
        token_key=KEY,
        limit=2,
        page_token=first["nextPageToken"],
    )
    assert "nextPageToken" not in last and last["nextSyncToken"]
    assert _sync(db, principal, last["nextSyncToken"])["events"] == []


def test_each_sync_returns_exactly_the_changes_since_once(db: Database, factory: Factory) -> None:
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]

    def step() -> list[dict[str, Any]]:
        nonlocal token
        page = _sync(db, principal, token)
        token = page["nextSyncToken"]
        again = _sync(db, principal, token)
        assert again["events"] == [], "a change is returned once"
        token = again["nextSyncToken"]
        return list(page["events"])

    single, _ = _change(db, events.create_event_from_input, principal, body=_event("One"))
    assert step() == [single]
    changed = _change(
        db, events.update_event, principal, event_id=single["id"], body={"title": "2"}
    )
    assert step() == [changed]
    series, _ = _change(db, events.create_event_from_input, principal, body=WEEKLY)
    assert step() == [series]

    cancelled = f"{series['id']}_20260316T090000Z"
    _change(db, events.delete_event, principal, event_id=cancelled)
    assert step() == [
        {
            "id": cancelled,
            "status": "cancelled",
            "recurringEventId": series["id"],
            "originalStartsAt": "2026-03-16T09:00:00Z",
        }
    ]
    moved_id = f"{series['id']}_20260309T090000Z"
    moved = _change(db, events.update_event, principal, event_id=moved_id, body={"title": "M"})
    assert step() == [moved]
    assert moved["recurringEventId"] == series["id"]

    _change(db, events.delete_event, principal, event_id=series["id"])
    gone = step()
    assert sorted(gone, key=lambda e: e["id"]) == sorted(
        [{"id": i, "status": "cancelled"} for i in (series["id"], cancelled, moved_id)],
        key=lambda e: e["id"],
    )
    _change(db, events.delete_event, principal, event_id=single["id"])
    assert step() == [{"id": single["id"], "status": "cancelled"}]


def test_a_copy_kept_by_syncs_equals_a_fresh_list(db: Database, factory: Factory) -> None:
    principal = _principal(factory, one_calendar=False)
    first = _full_list(db, principal)
    copy = {e["id"]: e for e in first["events"]}
    token = first["nextSyncToken"]
    keep, _ = _change(db, events.create_event_from_input, principal, body=_event("keep"))
    series, _ = _change(db, events.create_event_from_input, principal, body=WEEKLY)
    _change(
        db,
        events.update_event,
        principal,
        event_id=f"{series['id']}_20260323T090000Z",
        scope="following",
        body={"title": "Later"},
    )
    _change(db, events.delete_event, principal, event_id=f"{series['id']}_20260302T090000Z")
    for page in (_sync(db, principal, token, limit=1),):
        for event in page["events"]:
            if event.get("status") == "cancelled":
                copy.pop(event["id"], None)
            else:
                copy[event["id"]] = event
    assert copy == {e["id"]: e for e in _full_list(db, principal)["events"]}
    assert keep["id"] in copy


def test_a_change_made_while_a_list_is_paged_is_in_the_next_sync(
    db: Database, factory: Factory
) -> None:
    principal = _principal(factory)
    for day in (3, 4):
        _change(db, events.create_event_from_input, principal, body=_event(f"d{day}", day))
    first = db.call(events.list_events, principal=principal, token_key=KEY, limit=1)
    early, _ = _change(db, events.create_event_from_input, principal, body=_event("early", 1))
    last = db.call(
        events.list_events,
        principal=principal,
        token_key=KEY,
        limit=5,
        page_token=first["nextPageToken"],
    )
    assert early["id"] not in _ids(first) + _ids(last)  # it sorts before the page read
    assert _ids(_sync(db, principal, last["nextSyncToken"])) == [early["id"]]


def test_a_sync_is_paged_and_returns_each_change_once(db: Database, factory: Factory) -> None:
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]
    made = [
        _change(db, events.create_event_from_input, principal, body=_event(f"e{i}"))[0]["id"]
        for i in range(5)
    ]
    pages = []
    page = db.call(
        events.list_events, principal=principal, token_key=KEY, sync_token=token, limit=2
    )
    pages.append(page)
    while "nextPageToken" in page:
        page = db.call(
            events.list_events,
            principal=principal,
            token_key=KEY,
            page_token=page["nextPageToken"],  # a sync's page token alone carries on
            limit=2,
        )
        pages.append(page)
    assert [len(p["events"]) for p in pages] == [2, 2, 1]
    assert [i for p in pages for i in _ids(p)] == made  # in the order they were made


def test_a_one_calendar_key_never_sees_another_calendars_changes(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    other = factory.calendar(owner)
    key_id, _ = factory.key(owner, calendar_id=owner.default_calendar_id)
    narrow = Principal(key_id, owner.id, "write", owner.default_calendar_id, utcnow())
    wide_id, _ = factory.key(owner)
    wide = Principal(wide_id, owner.id, "write", None, utcnow())
    narrow_token = _full_list(db, narrow)["nextSyncToken"]
    wide_token = _full_list(db, wide)["nextSyncToken"]
    mine, _ = _change(db, events.create_event_from_input, narrow, body=_event("mine"))
    theirs, _ = _change(
        db, events.create_event_from_input, wide, body={**_event("theirs"), "calendarId": other}
    )
    _change(db, events.delete_event, wide, event_id=theirs["id"])
    assert _ids(_sync(db, narrow, narrow_token)) == [mine["id"]]
    assert sorted(_ids(_sync(db, wide, wide_token))) == sorted([mine["id"], theirs["id"]])
    with pytest.raises(ValidationFailed):  # a token of the wide key's reach is not the narrow's
        _sync(db, narrow, wide_token)


def test_a_token_holds_the_minute_it_was_taken_so_a_minute_of_lists_shares_one(
    db: Database, factory: Factory
) -> None:
    """A position is taken to the minute (made once a minute, not once a second, per reach and
    position: docs/sync.md): its token may read up to a minute older than it is."""
    principal = _principal(factory)
    before = int(utcnow().timestamp())
    token = _full_list(db, principal)["nextSyncToken"]
    after = int(utcnow().timestamp())
    position = sync.decode_sync_token(KEY, principal, token)
    assert position.at % 60 == 0 and before // 60 * 60 <= position.at <= after


def test_an_old_token_is_refused_as_expired(db: Database, factory: Factory) -> None:
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]
    later = utcnow() + timedelta(days=30, minutes=1)
    with pytest.raises(SyncTokenExpired) as caught:
        db.call(sync.sync_events, principal=principal, sync_token=token, token_key=KEY, now=later)
    assert caught.value.status == 410 and caught.value.code == "sync_token_expired"
    fine = db.call(
        sync.sync_events,
        principal=principal,
        sync_token=token,
        token_key=KEY,
        now=utcnow() + timedelta(days=29),
    )
    assert fine["events"] == []


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-2] + ("AA" if t[-2:] != "AA" else "BB"),
        lambda t: "A" + t[1:] if t[0] != "A" else "B" + t[1:],
        lambda t: "not a token",
        lambda t: "~" + t,
        lambda t: t * 400,
    ],
)
def test_a_tampered_token_is_a_validation_error(
    db: Database, factory: Factory, mangle: Any
) -> None:
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]
    with pytest.raises(ValidationFailed) as caught:
        _sync(db, principal, mangle(token))
    assert caught.value.errors[0]["field"] in {"syncToken", "pageToken"}


def test_a_window_with_a_sync_token_is_refused(db: Database, factory: Factory) -> None:
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]
    with pytest.raises(ValidationFailed) as caught:
        _sync(db, principal, token, time_min="2026-03-01T00:00:00Z")
    assert caught.value.errors[0]["field"] == "timeMin"


def test_the_maintenance_job_forgets_changes_no_token_can_ask_for(
    db: Database, factory: Factory
) -> None:
    principal = _principal(factory)
    old, _ = _change(db, events.create_event_from_input, principal, body=_event("old"))
    new, _ = _change(db, events.create_event_from_input, principal, body=_event("new"))

    def age(conn: Connection) -> None:
        conn.execute(
            update(event_sync_t)
            .where(event_sync_t.c.event_id == old["id"])
            .values(changed_at=utcnow() - timedelta(days=32))
        )

    db.call(age)
    purged = db.call(purge_expired, now=utcnow(), call_history_days=90, sync_retention_days=30)
    assert purged["syncChanges"] >= 1
    kept = db.call(
        lambda conn: set(
            conn.execute(
                text("SELECT event_id FROM event_sync WHERE event_id IN (:a, :b)"),
                {"a": old["id"], "b": new["id"]},
            ).scalars()
        )
    )
    assert kept == {new["id"]}


@pytest.mark.sqlite  # group commit
@pytest.mark.parametrize("rolled_back", [False, True])
async def test_a_token_read_inside_a_group_commit_is_exact(
    config: Config, db: Database, factory: Factory, rolled_back: bool
) -> None:
    """A list grouped with writes (one transaction, ``Database.run_grouped``) counts the writes
    made before it in the group and not those after; so it does when the group is rolled back
    and its calls run again one by one."""
    grouped = Database(config)
    assert grouped.group_commit
    principal = _principal(factory)
    start = _full_list(db, principal)["nextSyncToken"]

    def write(conn: Connection, title: str, fail: bool = False) -> dict[str, Any]:
        with atomic(conn):
            event, _ = events.create_event_from_input(
                conn, principal=principal, body=_event(title), now=utcnow()
            )
            if fail:
                raise ValueError("fails after writing: the group is rolled back")
        return event  # type: ignore[no-any-return]

    def listing(conn: Connection) -> dict[str, Any]:
        with atomic(conn):
            return events.list_events(conn, principal=principal, token_key=KEY)

    try:
        calls = [
            grouped.run_grouped(write, "before"),
            grouped.run_grouped(listing),
            grouped.run_grouped(write, "after"),
        ]
        if rolled_back:
            calls.append(grouped.run_grouped(write, "failing", fail=True))
        done = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        grouped.close()
    before, page, after = done[:3]
    assert not isinstance(page, BaseException)
    assert [e["id"] for e in page["events"]] == [before["id"]]
    assert _ids(_sync(db, principal, page["nextSyncToken"])) == [after["id"]]
    assert _ids(_sync(db, principal, start)) == [before["id"], after["id"]]
    if rolled_back:
        assert isinstance(done[3], ValueError)


ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
    "UID:sync-import@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "DTSTART:20260305T090000Z\r\nDTEND:20260305T100000Z\r\n"
    "SUMMARY:Imported\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def test_an_import_is_in_the_next_sync_like_any_write(db: Database, factory: Factory) -> None:
    """The change log is kept by triggers on ``events``: a write path that knows nothing of
    sync (the iCalendar import) is in it too."""
    principal = _principal(factory)
    token = _full_list(db, principal)["nextSyncToken"]
    report = db.call(importing.import_events, principal=principal, data=ICS.encode(), now=utcnow())
    assert report["created"] == 1
    found = _sync(db, principal, token)["events"]
    assert [e["title"] for e in found] == ["Imported"]
    assert found == _full_list(db, principal)["events"]
