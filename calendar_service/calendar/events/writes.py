"""What every change to an event does once its SQL ran: keep the calendar's longest event up to
date, format the public event from what was stored, and queue its webhook delivery in the same
transaction (``outbox.record_change``)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from sqlalchemy import Connection

from calendar_service.access.keys import Principal
from calendar_service.calendar.events.queries import bump_longest
from calendar_service.calendar.events.shapes import event_public
from calendar_service.journal.webhook_outbox import record_change


def after_write(
    conn: Connection,
    *,
    principal: Principal,
    calendar: Any,
    tz: tzinfo,
    row: Any,
    span: tuple[datetime, datetime] | None,
    change: str,
    now: datetime,
) -> dict[str, Any]:
    """The public event for ``row`` (as stored, or as it was for a deletion), once ``change``
    is queued for the owner's webhook. ``span``: the event's new (start, end), if they were
    written."""
    if span is not None:
        bump_longest(conn, calendar, *span)
    event = event_public(row, calendar_name=calendar.name, tz=tz)
    record_change(conn, user_id=principal.user_id, event_type=change, event=event, now=now)
    return event
