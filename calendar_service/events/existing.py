"""One existing event, by id: get it, change some of its fields, delete it.

Each loads the event within the key's reach first (``queries.load_in_scope``): an event
outside it is answered 404, exactly as one that does not exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, update

from calendar_service.errors import FieldError, ValidationFailed
from calendar_service.events.parsing import (
    camel,
    check_title,
    current_times,
    parse_untrusted,
    resolve_times,
)
from calendar_service.events.queries import events_t, load_in_scope
from calendar_service.events.shapes import Row, event_public
from calendar_service.events.writes import after_write
from calendar_service.keys import Principal
from calendar_service.models import EventUpdate
from calendar_service.outbox import DELETED, UPDATED
from calendar_service.timeutil import zone


def get_event(conn: Connection, *, principal: Principal, event_id: str) -> dict[str, Any]:
    row, calendar = load_in_scope(conn, principal=principal, event_id=event_id)
    return event_public(row, calendar_name=calendar.name, tz=zone(calendar.time_zone))


def update_event(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    data: EventUpdate,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
) -> dict[str, Any]:
    """Change the fields sent (PATCH semantics; ``null`` clears description or location)."""
    row, calendar = load_in_scope(conn, principal=principal, event_id=event_id)
    tz = zone(calendar.time_zone)
    sent = data.model_fields_set
    errors: list[FieldError] = list(prior_errors)
    bad = {e["field"] for e in prior_errors}
    for name in ("title", "starts_at", "ends_at", "all_day"):
        if name in sent and getattr(data, name) is None and camel(name) not in bad:
            errors.append(FieldError(camel(name), "must not be null"))
    values: dict[str, Any] = {}
    if "title" in sent and data.title is not None:
        values["title"] = check_title(data.title, errors)
    all_day = data.all_day if data.all_day is not None else bool(row.all_day)
    if {"starts_at", "ends_at", "all_day"} & sent:
        current = current_times(row, tz, all_day)
        start, end = resolve_times(
            starts=data.starts_at if data.starts_at is not None else current[0],
            ends=data.ends_at if data.ends_at is not None else current[1],
            all_day=all_day,
            tz=tz,
            errors=errors,
        )
        values.update(starts_at=start, ends_at=end, all_day=all_day)
    for name in ("description", "location"):
        if name in sent:
            values[name] = getattr(data, name)
    if errors:
        raise ValidationFailed(errors)
    if not values:
        return event_public(row, calendar_name=calendar.name, tz=tz)
    values["updated_at"] = now
    conn.execute(update(events_t).where(events_t.c.id == row.id).values(**values))
    return after_write(
        conn,
        principal=principal,
        calendar=calendar,
        tz=tz,
        row=Row({**row._asdict(), **values}),
        span=(values["starts_at"], values["ends_at"]) if "starts_at" in values else None,
        change=UPDATED,
        now=now,
    )


def update_event_from_input(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    body: Any,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
) -> dict[str, Any]:
    """The fronts' way in for a change: decoded, untrusted JSON, with every bad field, of type
    or of value, reported at once."""
    data, errors = parse_untrusted(EventUpdate, body, prior_errors)
    return update_event(
        conn, principal=principal, event_id=event_id, data=data, now=now, prior_errors=errors
    )


def delete_event(
    conn: Connection, *, principal: Principal, event_id: str, now: datetime
) -> dict[str, Any]:
    """Delete an event; the ``deleted`` webhook carries it as it was."""
    row, calendar = load_in_scope(conn, principal=principal, event_id=event_id)
    conn.execute(delete(events_t).where(events_t.c.id == row.id))
    return after_write(
        conn,
        principal=principal,
        calendar=calendar,
        tz=zone(calendar.time_zone),
        row=row,
        span=None,
        change=DELETED,
        now=now,
    )
