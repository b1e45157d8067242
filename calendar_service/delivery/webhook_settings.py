"""The owner's webhook: its endpoint, signing secret and deliveries (the settings side).

One endpoint per owner (``key_id`` NULL in ``webhook_endpoints``, whose other rows are keys'
subscriptions: ``subscriptions``). Every function is keyword-only and starts from ``user_id``;
none sends anything (the ``webhooks`` package does) and none resolves DNS. ``set_endpoint``
takes only a URL that passed the target rules (a ``webhook_targets.Target``, from
``check_endpoint_url``), checked before the transaction because resolving the host takes the
network.

Secrets are ``whsec_`` + base64 of 32 random bytes (the Standard Webhooks format). They are
returned once, by ``set_endpoint`` and ``rotate_secret``, and never by any read function. After a
rotation the previous secret keeps signing beside the new one for ``ROTATION_OVERLAP``.

States: endpoint ``active`` ⇄ ``disabled``; delivery ``pending`` → ``succeeded``, or
``retrying`` → ``failed``. ``redeliver`` puts a delivery back to ``pending``;
``send_test_event`` queues a ``webhook.test`` delivery.
"""

from __future__ import annotations

import base64
import secrets as secrets_lib
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, or_, select, update

from calendar_service.delivery.triggers import kinds
from calendar_service.delivery.webhook_targets import Target, check_url_shape
from calendar_service.journal.webhook_outbox import enqueue, notify_committed
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed, WebhookDisabled
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.webhooks import attempts_t, deliveries_t, endpoints_t
from calendar_service.platform.timeutil import format_utc

ROTATION_OVERLAP = timedelta(hours=24)
DELIVERY_STATUSES = ("pending", "retrying", "succeeded", "failed", "skipped")
"""``skipped``: a time trigger missed by more than ``CALENDAR_TRIGGER_GRACE`` (never sent)."""
OPEN_STATUSES = ("pending", "retrying")


def new_secret() -> str:
    """A fresh signing secret: ``whsec_`` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets_lib.token_bytes(32)).decode()


def endpoint_public(row: Any) -> dict[str, Any]:
    """The endpoint as shown to its owner: never a secret."""
    offsets, ended = kinds.wanted_triggers(row)
    return {
        "id": row.id,
        "url": row.url,
        "status": row.status,
        "disabledReason": row.disabled_reason,
        "failingSince": _fmt(row.failing_since),
        "previousSecretExpiresAt": _fmt(row.previous_secret_expires_at),
        "createdAt": format_utc(row.created_at),
        "updatedAt": format_utc(row.updated_at),
        "events": kinds.events_of(row),
        "minutesBefore": offsets or None,
        "ended": ended,
    }


def signing_secrets(row: Any, *, now: datetime) -> list[str]:
    """The secrets that sign a delivery made at ``now``: the current one, then the previous one
    while its overlap lasts."""
    found = [row.secret]
    expires = row.previous_secret_expires_at
    if row.previous_secret and expires is not None and expires > now:
        found.append(row.previous_secret)
    return found


def _owner_endpoint(user_id: str) -> Any:
    return select(endpoints_t).where(
        endpoints_t.c.user_id == user_id, endpoints_t.c.key_id.is_(None)
    )


def _endpoint_row(conn: Connection, *, user_id: str) -> Any:
    row = conn.execute(_owner_endpoint(user_id)).first()
    if row is None:
        raise NotFound("No webhook is set for this owner.")
    return row


def get_endpoint(conn: Connection, *, user_id: str) -> dict[str, Any]:
    """The owner's webhook endpoint (NotFound when none is set)."""
    return endpoint_public(_endpoint_row(conn, user_id=user_id))


def find_endpoint(conn: Connection, *, user_id: str) -> dict[str, Any] | None:
    """The owner's webhook endpoint, or None when none is set."""
    row = conn.execute(_owner_endpoint(user_id)).first()
    return None if row is None else endpoint_public(row)


def set_endpoint(
    conn: Connection, *, user_id: str, target: Target, now: datetime
) -> tuple[dict[str, Any], str]:
    """Set the owner's webhook URL with a fresh secret; returns (endpoint, secret shown once).

    ``target`` is the URL as ``webhook_targets.check_endpoint_url`` checked it. Setting it
    again changes the URL, re-activates the endpoint and issues a new secret; the old one keeps
    signing beside it for 24 hours, as after ``rotate_secret``."""
    url = check_url_shape(target.url)  # a Target from check_target alone skipped the shape
    secret = new_secret()
    current = conn.execute(_owner_endpoint(user_id)).first()
    if current is None:
        conn.execute(
            insert(endpoints_t).values(
                id=new_id("whe"),
                user_id=user_id,
                url=url,
                secret=secret,
                status="active",
                created_at=now,
                updated_at=now,
            )
        )
    else:
        conn.execute(
            update(endpoints_t)
            .where(endpoints_t.c.id == current.id)
            .values(
                url=url,
                status="active",
                disabled_reason=None,
                failing_since=None,
                updated_at=now,
                **_rotated(current, secret, now),
            )
        )
    return get_endpoint(conn, user_id=user_id), secret


def set_time_triggers(
    conn: Connection,
    *,
    user_id: str,
    minutes_before: Any,
    ended: bool,
    now: datetime,
) -> dict[str, Any]:
    """Give the owner's endpoint time triggers: ``calendar.event.starting`` at each of
    ``minutes_before`` (a list of 0 to 10080, at most 10; empty or None: none) and
    ``calendar.event.ended`` when ``ended``. The change types it always takes. Returns the
    endpoint."""
    row = _endpoint_row(conn, user_id=user_id)
    errors: list[FieldError] = []
    offsets = kinds.check_minutes_before(minutes_before or None, errors)
    if errors:
        raise ValidationFailed(errors)
    chosen = list(kinds.CHANGE_TYPES)
    if offsets:
        chosen.append(kinds.STARTING)
    if ended:
        chosen.append(kinds.ENDED)
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == row.id)
        .values(
            events=kinds.dumped(chosen) if len(chosen) > len(kinds.CHANGE_TYPES) else None,
            minutes_before=kinds.dumped(offsets),
            updated_at=now,
        )
    )
    return get_endpoint(conn, user_id=user_id)


def rotate_secret(conn: Connection, *, user_id: str, now: datetime) -> tuple[dict[str, Any], str]:
    """Issue a new secret; the current one keeps signing beside it for 24 hours.

    Returns (endpoint, new secret shown once). Rotating again within the overlap retires the
    oldest secret at once: at most two secrets sign at any time."""
    row = _endpoint_row(conn, user_id=user_id)
    secret = new_secret()
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == row.id)
        .values(updated_at=now, **_rotated(row, secret, now))
    )
    return get_endpoint(conn, user_id=user_id), secret


def _rotated(row: Any, secret: str, now: datetime) -> dict[str, Any]:
    return {
        "secret": secret,
        "previous_secret": row.secret,
        "previous_secret_expires_at": now + ROTATION_OVERLAP,
    }


def enable_endpoint(
    conn: Connection, *, user_id: str, now: datetime, redeliver_failed: bool = False
) -> dict[str, Any]:
    """Re-activate a disabled endpoint; with ``redeliver_failed`` also re-send its failed
    deliveries. Returns the endpoint plus ``redelivered`` (how many were re-queued)."""
    row = _endpoint_row(conn, user_id=user_id)
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == row.id)
        .values(status="active", disabled_reason=None, failing_since=None, updated_at=now)
    )
    count = redeliver_all_failed(conn, user_id=user_id, now=now) if redeliver_failed else 0
    return {**get_endpoint(conn, user_id=user_id), "redelivered": count}


def disable_endpoint(conn: Connection, *, user_id: str, reason: str, now: datetime) -> None:
    """Disable the owner's endpoint and fail its open deliveries (except any being sent right
    now, which fail when their attempt is recorded). Owners re-enable with ``enable_endpoint``."""
    row = _endpoint_row(conn, user_id=user_id)
    disable_endpoint_by_id(conn, endpoint_id=row.id, reason=reason, now=now)


def disable_endpoint_by_id(
    conn: Connection, *, endpoint_id: str, reason: str, now: datetime, status: str = "disabled"
) -> None:
    """``disable_endpoint`` for any endpoint, the owner's or a subscription (``status``
    ``deleted`` for a subscription deleted)."""
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == endpoint_id)
        .values(status=status, disabled_reason=reason[:200], updated_at=now)
    )
    fail_open_deliveries(
        conn, endpoint_id=endpoint_id, error=f"webhook {status}: " + reason[:180], now=now
    )


def fail_open_deliveries(conn: Connection, *, endpoint_id: str, error: str, now: datetime) -> None:
    """Fail the endpoint's open deliveries but those being sent right now."""
    conn.execute(
        update(deliveries_t)
        .where(
            deliveries_t.c.endpoint_id == endpoint_id,
            deliveries_t.c.status.in_(OPEN_STATUSES),
            or_(deliveries_t.c.lease_until.is_(None), deliveries_t.c.lease_until < now),
        )
        .values(status="failed", last_error=error[:500], lease_until=None, completed_at=now)
    )


# ---------------------------------------------------------------------------------------------
# Deliveries


def delivery_public(row: Any) -> dict[str, Any]:
    """A delivery as listed: what was sent and how it went (never the body)."""
    open_ = row.status in OPEN_STATUSES
    return {
        "id": row.id,
        "eventType": row.event_type,
        "status": row.status,
        "attempts": row.attempts,
        "lastStatusCode": row.last_status_code,
        "lastError": row.last_error,
        "createdAt": format_utc(row.created_at),
        "nextAttemptAt": format_utc(row.next_attempt_at) if open_ else None,
        "completedAt": _fmt(row.completed_at),
    }


def list_deliveries(
    conn: Connection,
    *,
    user_id: str,
    status: str | None = None,
    limit: int = 50,
    endpoint_id: str | None = None,
) -> list[dict[str, Any]]:
    """The deliveries of the owner's own endpoint (or of the owner's endpoint ``endpoint_id``,
    a subscription), newest first, optionally of one status."""
    if status is not None and status not in DELIVERY_STATUSES:
        allowed = ", ".join(DELIVERY_STATUSES)
        raise ValidationFailed([FieldError("status", f"must be one of {allowed}")])
    if not 1 <= limit <= 1000:
        raise ValidationFailed([FieldError("limit", "must be a whole number from 1 to 1000")])
    if endpoint_id is None:
        owner = conn.execute(_owner_endpoint(user_id).with_only_columns(endpoints_t.c.id)).first()
        if owner is None:
            return []
        endpoint_id = owner.id
    query = select(deliveries_t).where(
        deliveries_t.c.user_id == user_id, deliveries_t.c.endpoint_id == endpoint_id
    )
    if status is not None:
        query = query.where(deliveries_t.c.status == status)
    query = query.order_by(deliveries_t.c.created_at.desc(), deliveries_t.c.id.desc()).limit(limit)
    return [delivery_public(row) for row in conn.execute(query)]


def get_delivery(conn: Connection, *, user_id: str, delivery_id: str) -> dict[str, Any]:
    """One delivery with every attempt (oldest first) and the payload that was signed."""
    row = _delivery_row(conn, user_id=user_id, delivery_id=delivery_id)
    attempts = conn.execute(
        select(attempts_t)
        .where(attempts_t.c.delivery_id == row.id)
        .order_by(attempts_t.c.at, attempts_t.c.id)
    )
    return {
        **delivery_public(row),
        "payload": row.payload,
        "attemptLog": [
            {
                "at": format_utc(a.at),
                "statusCode": a.status_code,
                "durationMs": a.duration_ms,
                "responseExcerpt": a.response_excerpt,
                "error": a.error,
            }
            for a in attempts
        ],
    }


def _delivery_row(conn: Connection, *, user_id: str, delivery_id: str) -> Any:
    row = conn.execute(
        select(deliveries_t).where(
            deliveries_t.c.user_id == user_id, deliveries_t.c.id == delivery_id
        )
    ).first()
    if row is None:
        raise NotFound(f"No webhook delivery {delivery_id!r} for this owner.")
    return row


def redeliver(conn: Connection, *, user_id: str, delivery_id: str, now: datetime) -> dict[str, Any]:
    """Send a delivery again now, with the same ``webhook-id``.

    A delivery whose retry schedule is used up gets one more attempt; one still retrying is
    simply made due now. Refused while the endpoint is disabled."""
    row = _delivery_row(conn, user_id=user_id, delivery_id=delivery_id)
    _require_active_endpoint(conn, endpoint_id=row.endpoint_id)
    conn.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id == row.id, _not_in_flight(now))
        .values(status="pending", next_attempt_at=now, completed_at=None)
    )
    notify_committed(conn)
    return delivery_public(_delivery_row(conn, user_id=user_id, delivery_id=delivery_id))


def redeliver_all_failed(conn: Connection, *, user_id: str, now: datetime) -> int:
    """Re-send every failed delivery of the owner's own endpoint; returns how many were
    re-queued."""
    endpoint = _endpoint_row(conn, user_id=user_id)
    _require_active(conn, user_id=user_id)
    result = conn.execute(
        update(deliveries_t)
        .where(
            deliveries_t.c.user_id == user_id,
            deliveries_t.c.endpoint_id == endpoint.id,
            deliveries_t.c.status == "failed",
        )
        .values(status="pending", next_attempt_at=now, completed_at=None)
    )
    if result.rowcount:
        notify_committed(conn)
    return int(result.rowcount)


TEST_EVENT_TYPE = "webhook.test"


def send_test_event(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    """Queue a ``webhook.test`` delivery to the owner's endpoint, signed and sent like any
    other (so a receiver can check its signature handling). Refused while it is disabled."""
    row = _endpoint_row(conn, user_id=user_id)
    _require_active(conn, user_id=user_id)
    delivery_id = enqueue(
        conn,
        user_id=user_id,
        endpoint_id=row.id,
        event_type=TEST_EVENT_TYPE,
        data={"message": "A test event from the calendar service: your webhook works."},
        now=now,
    )
    return delivery_public(_delivery_row(conn, user_id=user_id, delivery_id=delivery_id))


def _require_active(conn: Connection, *, user_id: str) -> None:
    if _endpoint_row(conn, user_id=user_id).status != "active":
        raise WebhookDisabled(
            "The webhook is disabled; enable it first (its failed deliveries can be re-sent then)."
        )


def _require_active_endpoint(conn: Connection, *, endpoint_id: str) -> None:
    status = conn.execute(
        select(endpoints_t.c.status).where(endpoints_t.c.id == endpoint_id)
    ).scalar()
    if status == "deleted":
        raise WebhookDisabled("The subscription was deleted: its deliveries are not sent.")
    if status != "active":
        raise WebhookDisabled(
            "The webhook is disabled; enable it first (its failed deliveries can be re-sent then)."
        )


def _not_in_flight(now: datetime) -> Any:
    # A delivery being sent right now finishes on its own; an expired lease is a dead worker's.
    return or_(deliveries_t.c.lease_until.is_(None), deliveries_t.c.lease_until < now)


def _fmt(value: datetime | None) -> str | None:
    return None if value is None else format_utc(value)
