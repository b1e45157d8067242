"""The webhook outbox: a change to an event writes its delivery row in the same transaction.

No change without its notification, and no notification for a change that was rolled back.
The ``webhooks`` package drains this table; the core only ever inserts into it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select

from calendar_service.ids import new_id
from calendar_service.models import WebhookDelivery, WebhookEndpoint
from calendar_service.timeutil import format_utc

endpoints_t = WebhookEndpoint.__table__  # type: ignore[attr-defined]
deliveries_t = WebhookDelivery.__table__  # type: ignore[attr-defined]

EVENT_TYPES = ("calendar.event.created", "calendar.event.updated", "calendar.event.deleted")


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

    Returns the delivery id (the ``evt_…`` message id), or None when no webhook is set.
    """
    endpoint = conn.execute(
        select(endpoints_t.c.id, endpoints_t.c.status).where(endpoints_t.c.user_id == user_id)
    ).first()
    if endpoint is None:
        return None
    return enqueue(
        conn,
        user_id=user_id,
        endpoint_id=endpoint.id,
        event_type=event_type,
        data={"event": event},
        now=now,
    )


def enqueue(
    conn: Connection,
    *,
    user_id: str,
    endpoint_id: str,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
) -> str:
    message_id = new_id("evt")
    conn.execute(
        insert(deliveries_t).values(
            id=message_id,
            user_id=user_id,
            endpoint_id=endpoint_id,
            event_type=event_type,
            payload=build_payload(message_id=message_id, event_type=event_type, now=now, data=data),
            status="pending",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )
    notify_committed(conn)
    return message_id


def notify_committed(conn: Connection) -> None:
    """Ask for the dispatcher to be woken once this transaction commits.

    The flag rides on the connection's ``info``; ``Database`` reads it after commit and calls
    the wake-up hook the app registered (the core knows nothing of schedulers)."""
    conn.info["outbox_dirty"] = True
