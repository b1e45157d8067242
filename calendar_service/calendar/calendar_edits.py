"""Changing and deleting a calendar: its name, its time zone, and what goes with it.

``calendars`` holds the rules of a calendar's fields (``check_calendar_fields``); this module
changes calendars that hold events, which it reaches through the events core (``calendars``
itself is below the events core and cannot import it). The decisions, written up in
docs/settings.md ("Changing and deleting a calendar"):

- **Rename.** Events carry their calendar's name (``calendar``); nothing keeps it anywhere but
  the calendar's row: every key, list, get, sync and feed reads the new name from the next
  request on. What the list keeps in memory is keyed by the name and zone (``occurrences``).
  A rename is not a change of the events: no webhook, no sync change.
- **Re-zone.** Events keep what they are. A timed event (an exception of a series too) keeps
  its instants: it is shown in the new zone's offset. An all-day event keeps its dates (its
  stored midnights move to the new zone's), and so do an all-day series and its exceptions.
  A timed series that followed the calendar (``events.time_zone`` NULL) takes the old zone as
  its own, so it repeats exactly as before (Google Calendar's choice); one with its own zone
  is not touched. Every row rewritten so is a change: ``calendar.event.updated`` and a sync
  change (cancelled occurrences: the sync change alone). One transaction: the all-day rows
  and the calendar's zone must change together (the settings page runs it off the loop).
- **Delete** (never the default calendar: 409 ``default_calendar``), in steps of at most
  ``DELETE_STEP`` events (series with their exceptions) a transaction, so that a calendar of
  100,000 events never holds a write lock for long; the fronts call ``delete_calendar_step``
  until it answers ``done``. The first step revokes the calendar's one-calendar keys (they
  then answer 401 ``revoked_api_key``; their call history stays, shown on the keys page) and
  its feeds (404 at once). Each step deletes events and queues ``calendar.event.deleted`` for
  each single event and series (a series' exceptions go with it, as when a series is deleted);
  the database's triggers write their sync tombstones, which are filed under the owner
  (``event_sync.calendar_id`` = the owner's id) so that a sync of all the owner's calendars
  still finds them once the calendar is gone. The last step deletes the import UIDs, spends
  unexchanged OAuth codes for the calendar and deletes the calendar. Its keys (``revoked_by``
  ``calendar``) and feeds stay, revoked, with the calendar's id and their histories (no
  foreign key ties them to it, migration 0013): the pages name it "deleted calendar". A
  deletion cut short (a crash, a closed browser) is finished by deleting again.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import orjson
from sqlalchemy import Connection, and_, delete, func, or_, select, update

from calendar_service.access.keys import REVOKED_BY_CALENDAR
from calendar_service.calendar.calendars import (
    CalendarRow,
    calendar_public,
    check_calendar_fields,
    check_color,
    check_writable,
)
from calendar_service.calendar.events.queries import EVENT_COLUMNS, bump_longest
from calendar_service.calendar.events.series import CANCELLED, recurrence_columns
from calendar_service.calendar.events.shapes import Row, event_public
from calendar_service.calendar.recurrence.rules import naive_local, to_utc
from calendar_service.journal.webhook_outbox import DELETED, UPDATED, record_change
from calendar_service.platform.errors import (
    DefaultCalendarKept,
    FieldError,
    NotFound,
    ValidationFailed,
)
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.events import event_sync_t, events_t
from calendar_service.platform.models.ical import feeds_t, ical_uids_t
from calendar_service.platform.models.keys import keys_t
from calendar_service.platform.models.oauth import oauth_authorizations_t
from calendar_service.platform.timeutil import zone

DELETE_STEP = 500
"""Single events and series deleted in one transaction at most (with their webhooks)."""

_CALENDAR = (
    calendars_t.c.id,
    calendars_t.c.name,
    calendars_t.c.time_zone,
    calendars_t.c.is_default,
    calendars_t.c.max_event_seconds,
    calendars_t.c.user_id,
    calendars_t.c.color,
    calendars_t.c.connection_id,
    calendars_t.c.connection_kind,
)


def _calendar(
    conn: Connection, *, user_id: str | None, calendar_id: str, lock: bool = False
) -> tuple[CalendarRow, str]:
    """The calendar and its owner's id; ``user_id``: it must be theirs (``None``: any owner,
    for the operator's CLI). Another owner's is as unknown as one that does not exist.
    ``lock``: held until the transaction ends (PostgreSQL; SQLite has one writer anyway)."""
    query = select(*_CALENDAR).where(calendars_t.c.id == calendar_id)
    if user_id is not None:
        query = query.where(calendars_t.c.user_id == user_id)
    if lock:
        query = query.with_for_update()
    row = conn.execute(query).first()
    if row is None:
        raise NotFound(f"No calendar {calendar_id!r}.")
    found = CalendarRow(row[0], row[1], row[2], bool(row[3]), row[4], None, *row[6:9])
    return found, row[5]


def calendar_contents(conn: Connection, *, user_id: str | None, calendar_id: str) -> dict[str, Any]:
    """The calendar (``CalendarPublic``) with what deleting it takes: ``events`` (single
    events and series, not counting a series' exceptions), ``feeds`` (active: they would be
    revoked) and ``keys`` (active one-calendar keys and connected apps, revoked likewise)."""
    calendar, _ = _calendar(conn, user_id=user_id, calendar_id=calendar_id)
    count = _count(
        conn,
        events_t.c.id,
        events_t.c.calendar_id == calendar.id,
        events_t.c.recurring_event_id.is_(None),
    )
    feeds = _count(
        conn, feeds_t.c.id, feeds_t.c.calendar_id == calendar.id, feeds_t.c.revoked_at.is_(None)
    )
    live = _count(
        conn, keys_t.c.id, keys_t.c.calendar_id == calendar.id, keys_t.c.revoked_at.is_(None)
    )
    return {**calendar_public(calendar), "events": count, "feeds": feeds, "keys": live}


def _count(conn: Connection, column: Any, *where: Any) -> int:
    return int(conn.execute(select(func.count(column)).where(*where)).scalar_one())


# ---------------------------------------------------------------------------------------------
# Name and time zone


def update_calendar(
    conn: Connection,
    *,
    user_id: str | None,
    calendar_id: str,
    now: datetime,
    name: str | None = None,
    time_zone: str | None = None,
    color: str | None = None,
) -> dict[str, Any]:
    """Rename the calendar, move it to another time zone and/or give it another colour
    (``None``: unchanged; an empty colour: none), with the rules of a new calendar's fields;
    returns the calendar (``CalendarPublic``). See the module's docstring for what a re-zone
    does to the events."""
    calendar, owner = _calendar(conn, user_id=user_id, calendar_id=calendar_id, lock=True)
    if time_zone is not None:
        time_zone = time_zone.strip()
    checked, errors = check_calendar_fields(
        conn, user_id=owner, name=name, time_zone=time_zone, calendar_id=calendar.id
    )
    new_color = check_color(color, errors) if color is not None else calendar.color
    if errors:
        raise ValidationFailed(errors)
    values: dict[str, Any] = {}
    if checked is not None and checked != calendar.name:
        values["name"] = checked
    if time_zone is not None and time_zone != calendar.time_zone:
        values["time_zone"] = time_zone
    if new_color != calendar.color:
        values["color"] = new_color
    if not values:
        return calendar_public(calendar)
    conn.execute(update(calendars_t).where(calendars_t.c.id == calendar.id).values(**values))
    changed = calendar._replace(**values)
    if "time_zone" in values:
        _rezone(conn, owner, calendar, changed, now)
    return calendar_public(changed)


def _same_day(value: datetime, old: tzinfo, new: tzinfo) -> datetime:
    """The midnight that starts ``value``'s date in ``old``, the same date in ``new``."""
    return to_utc(naive_local(value, old, True), new)


def _rezone(
    conn: Connection, owner: str, before: CalendarRow, after: CalendarRow, now: datetime
) -> None:
    """Rewrite what a new zone changes: all-day rows (their dates kept) and series (where
    they end, computed in the new zone); each rewritten row is a change with its webhook."""
    old, new = zone(before.time_zone), zone(after.time_zone)
    c = events_t.c
    rows = conn.execute(
        select(*EVENT_COLUMNS)
        .where(
            c.calendar_id == before.id,
            or_(c.all_day.is_(True), and_(c.recurrence.is_not(None), c.time_zone.is_(None))),
        )
        .order_by(c.id)
    ).all()
    for row in rows:
        values: dict[str, Any] = {}
        all_day = bool(row.all_day)
        start, end = row.starts_at, row.ends_at
        if not all_day:
            # A timed series that followed the calendar keeps the old zone as its own: it
            # repeats exactly as before (Google's choice); nothing else of it changes.
            values.update(time_zone=before.time_zone, updated_at=now)
            conn.execute(update(events_t).where(c.id == row.id).values(**values))
            if row.status != CANCELLED:
                changed = Row({**row._asdict(), **values})
                event = event_public(changed, calendar_name=after.name, tz=new)
                record_change(conn, user_id=owner, event_type=UPDATED, event=event, now=now)
            continue
        if all_day:
            start, end = _same_day(start, old, new), _same_day(end, old, new)
            values.update(starts_at=start, ends_at=end)
            if row.original_starts_at is not None:
                values["original_starts_at"] = _same_day(row.original_starts_at, old, new)
        if row.recurrence is not None:
            errors: list[FieldError] = []
            columns = recurrence_columns(
                orjson.loads(row.recurrence),
                start=start,
                end=end,
                all_day=all_day,
                tz=new,
                errors=errors,
            )
            if errors:
                raise ValidationFailed(
                    [
                        FieldError(
                            "timeZone",
                            f"the series {row.id!r} would not occur in {after.time_zone}: "
                            f"{errors[0]['message']}",
                        )
                    ]
                )
            values.update(
                recurrence_last_start=columns["recurrence_last_start"],
                recurrence_ends_at=columns["recurrence_ends_at"],
            )
        if all(getattr(row, name) == value for name, value in values.items()):
            continue  # the same in the new zone (another zone of the same offsets)
        values["updated_at"] = now
        conn.execute(update(events_t).where(c.id == row.id).values(**values))
        bump_longest(conn, after, start, end)
        if row.status != CANCELLED:
            changed = Row({**row._asdict(), **values})
            event = event_public(changed, calendar_name=after.name, tz=new)
            record_change(conn, user_id=owner, event_type=UPDATED, event=event, now=now)


# ---------------------------------------------------------------------------------------------
# Delete


def delete_calendar_step(
    conn: Connection,
    *,
    user_id: str | None,
    calendar_id: str,
    now: datetime,
    most: int = DELETE_STEP,
    detached_owner: str | None = None,
) -> dict[str, Any]:
    """One step of deleting a calendar (see the module's docstring): at most ``most`` single
    events and series go, each with its ``calendar.event.deleted`` webhook. Returns
    ``{calendar, deletedEvents, done}``; once ``done``, the calendar is gone.

    ``detached_owner``: the job removing a connection's detached mirror
    (``delivery.connection_removals``; no front passes it), whose tombstones are filed under
    that owner; as the poller's writes into a mirror, its deletions queue no webhooks."""
    calendar, owner = _calendar(conn, user_id=user_id, calendar_id=calendar_id, lock=True)
    if calendar.is_default:
        raise DefaultCalendarKept()
    if detached_owner is None:
        check_writable(calendar)  # a connection's mirror goes with the connection (or ``busy``)
    else:
        owner = detached_owner
    revoke_calendar_access(conn, calendar_id=calendar.id, now=now)
    c = events_t.c
    rows = conn.execute(
        select(*EVENT_COLUMNS)
        .where(c.calendar_id == calendar.id, c.recurring_event_id.is_(None))
        # In the calendar's start index (``ix_events_calendar_start``): a step reads its
        # ``most`` rows, not every event the calendar still holds.
        .order_by(c.starts_at, c.id)
        .limit(most)
    ).all()
    if rows:
        series = [row.id for row in rows if row.recurrence is not None]
        if series:
            conn.execute(delete(events_t).where(c.recurring_event_id.in_(series)))
        conn.execute(delete(events_t).where(c.id.in_([row.id for row in rows])))
        tz = zone(calendar.time_zone)
        for row in rows if detached_owner is None else ():
            event = event_public(row, calendar_name=calendar.name, tz=tz)
            record_change(conn, user_id=owner, event_type=DELETED, event=event, now=now)
    done = len(rows) < most
    if done:
        conn.execute(delete(events_t).where(c.calendar_id == calendar.id))  # strays, if any
    # The triggers filed the tombstones under the calendar: the owner's all-calendars keys
    # look for them under the owner once it is gone (``events.sync``).
    conn.execute(
        update(event_sync_t)
        .where(event_sync_t.c.calendar_id == calendar.id)
        .values(calendar_id=owner)
    )
    if done:
        _delete_calendar_row(conn, calendar, now)
    return {"calendar": calendar_public(calendar), "deletedEvents": len(rows), "done": done}


def revoke_calendar_access(conn: Connection, *, calendar_id: str, now: datetime) -> None:
    """The calendar's one-calendar keys, connected apps and feeds revoked (its deletion)."""
    conn.execute(
        update(keys_t)
        .where(keys_t.c.calendar_id == calendar_id, keys_t.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_by=REVOKED_BY_CALENDAR)
    )
    conn.execute(
        update(feeds_t)
        .where(feeds_t.c.calendar_id == calendar_id, feeds_t.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )


def _delete_calendar_row(conn: Connection, calendar: CalendarRow, now: datetime) -> None:
    """The calendar's last step: what still refers to it goes, then the calendar. Its keys
    and feeds stay, revoked (by this step too: one made since the last step is), with its
    id, their histories and who revoked them."""
    conn.execute(delete(ical_uids_t).where(ical_uids_t.c.calendar_id == calendar.id))
    # An OAuth code the owner approved for this calendar and the app has not exchanged yet
    # can no longer be: it is spent (the exchange answers invalid_grant).
    authorizations = oauth_authorizations_t.c
    conn.execute(
        update(oauth_authorizations_t)
        .where(authorizations.calendar_id == calendar.id, authorizations.used_at.is_(None))
        .values(used_at=now)
    )
    conn.execute(delete(calendars_t).where(calendars_t.c.id == calendar.id))
