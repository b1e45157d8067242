"""The webhook outbox: a change to an event writes its delivery row in the same transaction.

No change without its notification, and no notification for a change that was rolled back.
The ``webhooks`` package drains this table; the core only ever inserts into it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, case, insert, literal_column, select

from calendar_service.db import Statement
from calendar_service.db.channels import OUTBOX_DIRTY
from calendar_service.ids import new_id
from calendar_service.models import (
    UTCDateTime,
    deliveries_t,
    endpoints_t,
    to_db,
)
from calendar_service.timeutil import format_utc

# Every change writes these; run straight from the driver (see db.Statement).
_INSERT_DELIVERY = Statement(
    insert(deliveries_t).values({c.name: bindparam(c.name) for c in deliveries_t.c})
)
_DATE_TIMES = tuple(c.name for c in deliveries_t.c if isinstance(c.type, UTCDateTime))
DISABLED_ERROR = "webhook disabled when the change was made"

# A change's delivery, queued in one statement: the owner's endpoint read and its delivery row
# written together (due now; already failed when the endpoint is not active), or nothing when
# the owner has no webhook. Returns the row's status.
_active = endpoints_t.c.status == literal_column("'active'")
_at: Any = bindparam("now", type_=deliveries_t.c.created_at.type)
_QUEUE_CHANGE = Statement(
    insert(deliveries_t)
    .from_select(
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
            bindparam("id", type_=deliveries_t.c.id.type),
            endpoints_t.c.user_id,
            endpoints_t.c.id,
            bindparam("event_type", type_=deliveries_t.c.event_type.type),
            bindparam("payload", type_=deliveries_t.c.payload.type),
            case((_active, literal_column("'pending'")), else_=literal_column("'failed'")),
            literal_column("0"),
            _at,
            case((_active, None), else_=bindparam("error", type_=deliveries_t.c.last_error.type)),
            _at,
            case((_active, None), else_=_at),
        ).where(endpoints_t.c.user_id == bindparam("user_id", type_=endpoints_t.c.user_id.type)),
    )
    .returning(deliveries_t.c.status)
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
    """Queue a ``calendar.event.*`` notification for the owner's webhook, if one is set.

    Returns the delivery id (the ``evt_…`` message id), or None when no webhook is set. While
    the endpoint is disabled the delivery is recorded as failed at once, so that the owner can
    re-send it after enabling the webhook again.
    """
    return record_notification(
        conn, user_id=user_id, event_type=event_type, data={"event": event}, now=now
    )


def record_notification(
    conn: Connection,
    *,
    user_id: str,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
) -> str | None:
    """Queue a notification of ``event_type`` carrying ``data`` for the owner's webhook, as
    ``record_change`` does (``calendar.proposal.created``: ``{proposal}``)."""
    message_id = new_id("evt")
    payload = build_payload(message_id=message_id, event_type=event_type, now=now, data=data)
    queued = _QUEUE_CHANGE.all(
        conn,
        id=message_id,
        user_id=user_id,
        event_type=event_type,
        payload=payload,
        now=to_db(now, conn.dialect.name),
        error=DISABLED_ERROR,
    )
    if not queued:
        return None
    if queued[0][0] == "pending":
        notify_committed(conn)
    return message_id


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
