"""A connected calendar shown in full (``visibility: details``, docs/connections.md): a
calendar of the owner that mirrors it, read-only, whose events are ordinary event rows, so the
list, search, sync, feeds and CalDAV show them with no code of their own.

- The mirror is a row of ``calendars`` with ``connection_id`` (and ``connection_kind``) set:
  ``calendars.check_writable`` refuses every write of a key or app to it (409
  ``read_only_calendar``). It is made when a connection gets ``details`` (``make_mirror``);
  when it gets ``busy`` again or is removed, it is detached at once and deleted in steps
  (``connection_removals``).
- The poller writes its events in the poll's transaction (``write_mirror``), from what the
  iCalendar import reads (``interop.ical.desired``: the same titles, descriptions, locations,
  times, rules and changed occurrences an import stores). ``connection_events`` maps each
  source object (``href``; ``""`` for an ``ics`` file) and UID to the event it became, with a
  digest of what it was: an unchanged event is not written again, so a sync sees only what
  changed at the source.
- These writes are not the owner's nor a key's: no change log, no rules, no
  ``calendar.event.*`` webhooks (as a subscribed calendar's changes notify no one elsewhere).
  Sync tokens and CalDAV's ``sync-collection`` see them (the ``events`` triggers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, and_, delete, insert, select, update

from calendar_service.calendar.calendars import NAME_MAX, CalendarRow
from calendar_service.calendar.events.queries import INSERT, bump_longest
from calendar_service.calendar.events.series import CONFIRMED, recurrence_columns
from calendar_service.calendar.recurrence import occurrence_id
from calendar_service.interop.ical.desired import Desired
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import to_db
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.connections import connection_events_t
from calendar_service.platform.models.events import events_t
from calendar_service.platform.timeutil import zone

Details = Sequence[Desired]
"""What one source object (or a whole ``ics`` file) gives, as the import reads it."""


def mirror_of(conn: Connection, connection_id: str) -> CalendarRow | None:
    """The connection's mirror calendar, if it has one."""
    row = conn.execute(
        select(
            calendars_t.c.id,
            calendars_t.c.name,
            calendars_t.c.time_zone,
            calendars_t.c.is_default,
            calendars_t.c.max_event_seconds,
        ).where(calendars_t.c.connection_id == connection_id)
    ).first()
    if row is None:
        return None
    return CalendarRow(row[0], row[1], row[2], False, row[4], connection_id=connection_id)


def make_mirror(conn: Connection, *, connection: Any, now: datetime) -> str:
    """The mirror calendar of ``connection`` (a ``connections`` row), made if it has none: in
    the zone of the owner's default calendar (where the poller reads floating times), named as
    the connection (a number added if the owner has a calendar of that name)."""
    found = mirror_of(conn, connection.id)
    if found is not None:
        return found.id
    time_zone = (
        conn.execute(
            select(calendars_t.c.time_zone).where(
                calendars_t.c.user_id == connection.user_id, calendars_t.c.is_default.is_(True)
            )
        ).scalar()
        or "UTC"
    )
    taken = set(
        conn.execute(
            select(calendars_t.c.name).where(calendars_t.c.user_id == connection.user_id)
        ).scalars()
    )
    name, n = connection.name[:NAME_MAX], 2
    while name in taken:
        suffix = f" ({n})"
        name, n = connection.name[: NAME_MAX - len(suffix)] + suffix, n + 1
    calendar_id = new_id("cal")
    conn.execute(
        insert(calendars_t).values(
            id=calendar_id,
            user_id=connection.user_id,
            name=name,
            time_zone=time_zone,
            is_default=False,
            max_event_seconds=0,
            series_version=0,
            created_at=now,
            connection_id=connection.id,
            connection_kind=connection.kind,
        )
    )
    return calendar_id


def write_mirror(
    conn: Connection,
    *,
    connection_id: str,
    changed: dict[str, Details],
    removed: Iterable[str] = (),
    now: datetime,
) -> None:
    """The mirror's events as the source now has them: for each object (``href``) of
    ``changed`` its events made, replaced or left as they are (unchanged), those it no longer
    holds deleted; the events of each of ``removed`` deleted. Nothing without a mirror."""
    mirror = mirror_of(conn, connection_id)
    if mirror is None:
        return
    tz = zone(mirror.time_zone)
    c = connection_events_t.c
    # A new mirror (none of its events written yet) after an earlier one was detached: the
    # mapping left of that one (which its removal deletes in steps) names no event here.
    fresh = (
        conn.execute(
            select(events_t.c.id).where(events_t.c.calendar_id == mirror.id).limit(1)
        ).first()
        is None
    )
    for href in removed:
        _delete_mapped(conn, connection_id, mirror.id, href, None)
    for href, details in changed.items():
        mapped = {
            r.uid_hash: (r.event_id, r.digest)
            for r in conn.execute(
                select(c.uid_hash, c.event_id, c.digest).where(
                    c.connection_id == connection_id, c.href == href
                )
            )
        }
        wanted: dict[str, Desired] = {_hash(d.key): d for d in details}
        gone = [h for h in mapped if h not in wanted]
        if gone:
            _delete_mapped(conn, connection_id, mirror.id, href, gone)
        for uid_hash, desired in wanted.items():
            digest = _digest(desired)
            old = mapped.get(uid_hash)
            if old is not None and old[1] == digest and not fresh:
                continue  # unchanged: not written again
            if old is not None:
                _delete_events(conn, mirror.id, [old[0]])
            now_mapped = {
                "event_id": _insert_event(conn, mirror, tz, desired, now),
                "digest": digest,
            }
            key = {"connection_id": connection_id, "href": href, "uid_hash": uid_hash}
            if old is None:
                conn.execute(insert(connection_events_t).values(key | now_mapped))
            else:
                where = [c[name] == value for name, value in key.items()]
                conn.execute(update(connection_events_t).where(*where).values(now_mapped))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(desired: Desired) -> str:
    """What the event is, so an unchanged one is known without reading it back."""
    shown = [
        desired.title,
        desired.description,
        desired.location,
        desired.all_day,
        desired.start.isoformat(),
        desired.end.isoformat(),
        desired.stored_recurrence,
        desired.transparency,
        desired.time_zone,
        [
            [o.original.isoformat(), o.title, o.description, o.location, o.all_day,
             o.start.isoformat(), o.end.isoformat(), o.transparency]
            for o in desired.overrides
        ],
    ]  # fmt: skip
    return hashlib.sha256(orjson.dumps(shown)).hexdigest()


def _delete_mapped(
    conn: Connection, connection_id: str, calendar_id: str, href: str, hashes: list[str] | None
) -> None:
    c = connection_events_t.c
    where = and_(c.connection_id == connection_id, c.href == href)
    if hashes is not None:
        where = and_(where, c.uid_hash.in_(hashes))
    ids = list(conn.execute(select(c.event_id).where(where)).scalars())
    _delete_events(conn, calendar_id, ids)
    conn.execute(delete(connection_events_t).where(where))


def _delete_events(conn: Connection, calendar_id: str, ids: list[str]) -> None:
    e = events_t.c
    for i in range(0, len(ids), 500):
        chunk = ids[i : i + 500]
        conn.execute(
            delete(events_t).where(e.calendar_id == calendar_id, e.recurring_event_id.in_(chunk))
        )
        conn.execute(delete(events_t).where(e.calendar_id == calendar_id, e.id.in_(chunk)))


def _insert_event(
    conn: Connection, mirror: CalendarRow, tz: Any, desired: Desired, now: datetime
) -> str:
    """One event (or series, with its changed occurrences) as the import stores it."""
    dialect = conn.dialect.name
    local = tz if desired.time_zone is None else zone(desired.time_zone)
    series: dict[str, Any] = {
        "recurrence": None,
        "recurrence_last_start": None,
        "recurrence_ends_at": None,
    }
    if desired.recurrence is not None:
        errors: list[Any] = []
        columns = recurrence_columns(
            desired.recurrence,
            start=desired.start,
            end=desired.end,
            all_day=desired.all_day,
            tz=local,
            errors=errors,
        )
        if columns:
            series = {
                "recurrence": columns["recurrence"],
                "recurrence_last_start": _stored(columns["recurrence_last_start"], dialect),
                "recurrence_ends_at": _stored(columns["recurrence_ends_at"], dialect),
            }
    event_id = new_id("ev")
    INSERT.run(
        conn,
        **_row(mirror.id, desired, now, dialect),
        id=event_id,
        recurring_event_id=None,
        original_starts_at=None,
        time_zone=desired.time_zone if series["recurrence"] is not None else None,
        **series,
    )
    bump_longest(conn, mirror, desired.start, desired.end)
    for o in desired.overrides if series["recurrence"] is not None else ():
        INSERT.run(
            conn,
            **_row(mirror.id, o, now, dialect),
            id=occurrence_id(event_id, o.original, all_day=desired.all_day, tz=tz),
            recurring_event_id=event_id,
            original_starts_at=to_db(o.original, dialect),
            time_zone=None,
            recurrence=None,
            recurrence_last_start=None,
            recurrence_ends_at=None,
        )
        bump_longest(conn, mirror, o.start, o.end)
    return event_id


def _row(calendar_id: str, shown: Any, now: datetime, dialect: str) -> dict[str, Any]:
    """The columns an event (``Desired``) and a changed occurrence (``Occurrence``) share."""
    stored_now = to_db(now, dialect)
    return {
        "calendar_id": calendar_id,
        "title": shown.title,
        "starts_at": to_db(shown.start, dialect),
        "ends_at": to_db(shown.end, dialect),
        "all_day": shown.all_day,
        "description": shown.description,
        "location": shown.location,
        "created_at": stored_now,
        "updated_at": stored_now,
        "status": CONFIRMED,
        "transparency": shown.transparency,
        "attendees": None,
    }


def _stored(value: datetime | None, dialect: str) -> datetime | str | None:
    return None if value is None else to_db(value, dialect)
