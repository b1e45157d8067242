"""Putting a unit of rows back as they should be: what an undo (``governance.undo``) and an approval
(``governance.approving``) both do once they have decided to.

``restore_rows`` makes the rows a change touched (``journal.change_record.Unit``) what they should
be (an undo: as before the change; an approval: as the write would have made them), each written
row with ``updated_at`` now; ``notify_restored`` queues the webhook that says so, as for any
change; ``shown_event`` reads an event as a get shows it, or ``None``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, update

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.events.existing import get_event
from calendar_service.calendar.events.queries import bump_longest, events_t
from calendar_service.journal.change_record import EVENT_FIELDS, same_content
from calendar_service.journal.webhook_outbox import CREATED, DELETED, UPDATED, record_change
from calendar_service.platform.errors import NotFound
from calendar_service.platform.models import UTCDateTime
from calendar_service.platform.timeutil import from_utc_text

_DATE_TIMES = tuple(c.name for c in events_t.c if isinstance(c.type, UTCDateTime))


def restore_rows(
    conn: Connection,
    calendar: CalendarRow,
    current: list[dict[str, Any]],
    wanted: list[dict[str, Any]],
    now: datetime,
) -> None:
    """Make the unit's rows ``wanted`` (plain rows, ``journal.change_record.plain``) from
    ``current``: rows that were not there go, rows that were come back, rows that differ take
    the wanted values; each written row with ``updated_at`` now."""
    now_rows = {r["id"]: r for r in current}
    old_rows = {r["id"]: r for r in wanted}
    gone = [event_id for event_id in now_rows if event_id not in old_rows]
    if gone:
        conn.execute(delete(events_t).where(events_t.c.id.in_(gone)))
    for event_id, old in old_rows.items():
        present = now_rows.get(event_id)
        if present is not None and same_content([present], [old]):
            continue
        values = stored_values(old)
        values["updated_at"] = now
        if present is None:
            conn.execute(insert(events_t).values(**values))
        else:
            del values["id"]
            conn.execute(update(events_t).where(events_t.c.id == event_id).values(**values))
        bump_longest(conn, calendar, values["starts_at"], values["ends_at"])


def stored_values(row: dict[str, Any]) -> dict[str, Any]:
    """A plain row's values as the table takes them (date-times as datetimes)."""
    values = {name: row.get(name) for name in EVENT_FIELDS}
    for name in _DATE_TIMES:
        text = values[name]
        if text is not None:
            values[name] = from_utc_text(text)
    return values


def notify_restored(
    conn: Connection,
    user_id: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    now: datetime,
) -> None:
    """The webhook of rows restored, as for any change: the event back (created), gone
    (deleted, as it was), or changed (updated); nothing when it was and is not shown."""
    if after is None:
        if before is not None:
            record_change(conn, user_id=user_id, event_type=DELETED, event=before, now=now)
        return
    hook = CREATED if before is None else UPDATED
    record_change(conn, user_id=user_id, event_type=hook, event=after, now=now)


def shown_event(conn: Connection, principal: Principal, event_id: str) -> dict[str, Any] | None:
    """The event ``event_id`` as a get shows it now, or ``None`` (gone, or cancelled)."""
    try:
        return get_event(conn, principal=principal, event_id=event_id)
    except NotFound:
        return None
