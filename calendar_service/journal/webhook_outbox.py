"""The webhook outbox: a change to an event writes its delivery row in the same transaction.

No change without its notification, and no notification for a change that was rolled back.
The ``webhooks`` package drains this table; the core only ever inserts into it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import (
    Connection,
    String,
    and_,
    bindparam,
    case,
    func,
    insert,
    literal_column,
    or_,
    select,
)

from calendar_service.platform.db import Statement
from calendar_service.platform.db.channels import OUTBOX_DIRTY
from calendar_service.platform.db.dialects import position_in
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.columns import UTCDateTime, to_db
from calendar_service.platform.models.keys import keys_t
from calendar_service.platform.models.webhooks import deliveries_t, endpoints_t
from calendar_service.platform.timeutil import format_utc

# Every change writes these; run straight from the driver (see db.Statement).
_INSERT_DELIVERY = Statement(
    insert(deliveries_t).values({c.name: bindparam(c.name) for c in deliveries_t.c})
)
_DATE_TIMES = tuple(c.name for c in deliveries_t.c if isinstance(c.type, UTCDateTime))
DISABLED_ERROR = "webhook disabled when the change was made"

# A change's deliveries, queued in one statement: the owner's endpoint and the keys'
# subscriptions (``subscriptions``) that take the change's type and reach its calendar, read
# and their delivery rows written together (due now; already failed when the endpoint is not
# active), or nothing when there is none. A subscription's row is the owner's message id, a dot
# and 13 characters of its own id (at most 40 in all), its payload the same but that id; a
# subscription whose key was revoked or expired gets nothing from the moment that committed.
# Its row count says whether anything was queued. Not ``RETURNING``: on SQLite it cost this
# statement, run by every change, about 50,000 instructions more (40 % of it).
_e, _k = endpoints_t.c, keys_t.c


# Not ``LIKE`` (``position_in``): a bound pattern makes SQLite prepare the statement again at
# every run (its LIKE optimization depends on the pattern).
def _contains(column: Any, name: str) -> Any:
    """Whether a JSON list of strings holds the (quoted) string bound as ``name``."""
    return position_in(column, bindparam(name, type_=String())) > 0


_active = _e.status == literal_column("'active'")
_at: Any = bindparam("now", type_=deliveries_t.c.created_at.type)
_message: Any = bindparam("id", type_=deliveries_t.c.id.type)
_delivery_id = case(
    (_e.key_id.is_(None), _message),
    else_=_message + literal_column("'.'") + func.substr(_e.id, 5, 13),
)
_QUEUE_CHANGE = Statement(
    insert(deliveries_t).from_select(
        [
            "id",
            "user_id",
            "endpoint_id",
            "event_type",
            "payload",
            "status",
            "attempts",
            "next_attempt_at",
            "last_error",
            "created_at",
            "completed_at",
        ],
        select(
            _delivery_id,
            _e.user_id,
            _e.id,
            bindparam("event_type", type_=deliveries_t.c.event_type.type),
            literal_column('\'{"id":"\'')
            + _delivery_id
            + bindparam("rest", type_=deliveries_t.c.payload.type),
            case((_active, literal_column("'pending'")), else_=literal_column("'failed'")),
            literal_column("0"),
            _at,
            case((_active, None), else_=bindparam("error", type_=deliveries_t.c.last_error.type)),
            _at,
            case((_active, None), else_=_at),
        )
        .select_from(endpoints_t.outerjoin(keys_t, _k.id == _e.key_id))
        .where(
            _e.user_id == bindparam("user_id", type_=endpoints_t.c.user_id.type),
            or_(_e.events.is_(None), _contains(_e.events, "type_quoted")),
            or_(
                _e.key_id.is_(None),
                and_(
                    _e.status != literal_column("'deleted'"),
                    _k.revoked_at.is_(None),
                    _k.expires_at > _at,
                    or_(
                        _k.calendar_id.is_(None),
                        _k.calendar_id == bindparam("calendar_id", type_=String()),
                    ),
                    or_(_e.calendar_ids.is_(None), _contains(_e.calendar_ids, "calendar_quoted")),
                ),
            ),
        ),
    )
)


def _insert_delivery(conn: Connection, values: dict[str, Any]) -> None:
    row: dict[str, Any] = dict.fromkeys(c.name for c in deliveries_t.c)
    row.update(values)
    dialect = conn.dialect.name
    for name in _DATE_TIMES:
        if row[name] is not None:
            row[name] = to_db(row[name], dialect)
    _INSERT_DELIVERY.run(conn, **row)


# The webhook event types, one per kind of change (docs/webhooks.md, "What is sent").
CREATED = "calendar.event.created"
UPDATED = "calendar.event.updated"
DELETED = "calendar.event.deleted"
BOOKING_CREATED = "calendar.booking.created"  # a guest booked through a scheduling link


def build_payload(*, message_id: str, event_type: str, now: datetime, data: dict[str, Any]) -> str:
    """The exact body that will be signed and sent (kept byte for byte in the outbox)."""
    return orjson.dumps(
        {"id": message_id, "type": event_type, "createdAt": format_utc(now), "data": data}
    ).decode()


def record_change(
    conn: Connection,
    *,
    user_id: str,
    event_type: str,
    event: dict[str, Any],
    now: datetime,
) -> str | None:
    """Queue a ``calendar.event.*`` notification for the owner's webhook, if one is set, and
    for each key's subscription that takes ``event_type`` and reaches the event's calendar.

    Returns the message id (the owner's delivery id, ``evt_…``), or None when nothing was
    queued. While an endpoint is disabled its delivery is recorded as failed at once, so that
    it can be re-sent after enabling it again."""
    message_id = new_id("evt")
    payload = build_payload(
        message_id=message_id, event_type=event_type, now=now, data={"event": event}
    )
    calendar_id = str(event.get("calendarId", ""))
    queued = _QUEUE_CHANGE.run(
        conn,
        id=message_id,
        user_id=user_id,
        event_type=event_type,
        rest=payload[_ID_AT + len(message_id) :],
        now=to_db(now, conn.dialect.name),
        error=DISABLED_ERROR,
        type_quoted=f'"{event_type}"',
        calendar_id=calendar_id,
        calendar_quoted=f'"{calendar_id}"',
    )
    if not queued:
        return None
    # The dispatcher is woken after the commit, even when every row queued was failed at once
    # (a disabled endpoint): it then finds nothing due.
    notify_committed(conn)
    return message_id


def record_notification(
    conn: Connection,
    *,
    user_id: str,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
) -> str | None:
    """Queue a notification of ``event_type`` carrying ``data`` for the owner's own webhook
    only, never a key's subscription (``calendar.proposal.created``: ``{proposal}``). Returns
    the delivery id, or None when the owner has no webhook."""
    found = conn.execute(
        select(endpoints_t.c.id, endpoints_t.c.status).where(
            endpoints_t.c.user_id == user_id, endpoints_t.c.key_id.is_(None)
        )
    ).first()
    if found is None:
        return None
    return enqueue(
        conn,
        user_id=user_id,
        endpoint_id=found.id,
        event_type=event_type,
        data=data,
        now=now,
        active=found.status == "active",
    )


_ID_AT = len('{"id":"')  # where a payload's message id starts (``build_payload``)


def enqueue(
    conn: Connection,
    *,
    user_id: str,
    endpoint_id: str,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
    active: bool = True,
) -> str:
    """Insert one delivery row (due now; already failed when the endpoint is not active)."""
    message_id = new_id("evt")
    _insert_delivery(
        conn,
        dict(
            id=message_id,
            user_id=user_id,
            endpoint_id=endpoint_id,
            event_type=event_type,
            payload=build_payload(message_id=message_id, event_type=event_type, now=now, data=data),
            status="pending" if active else "failed",
            attempts=0,
            next_attempt_at=now,
            last_error=None if active else DISABLED_ERROR,
            created_at=now,
            completed_at=None if active else now,
        ),
    )
    if active:
        notify_committed(conn)
    return message_id


def notify_committed(conn: Connection) -> None:
    """Ask for the dispatcher to be woken once this transaction commits.

    The flag (``db.channels.OUTBOX_DIRTY``) rides on the connection's ``info``; ``Database``
    reads it after commit and calls the wake-up hook the app registered (the core knows nothing
    of schedulers)."""
    conn.info[OUTBOX_DIRTY] = True
