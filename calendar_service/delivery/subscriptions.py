"""Webhook subscriptions of API keys (REST hooks): what Zapier's and n8n's instant triggers make.

A key with read or write permission manages its own endpoints (``createSubscription``,
``listSubscriptions``, ``deleteSubscription``, ``testSubscription``); a ``freebusy`` key may
not (401 ``insufficient_scope``, from the operation's ``needs``). A subscription is a row of
``webhook_endpoints`` with its ``key_id``: its deliveries go through the same outbox, retries,
signatures (with its own ``whsec_`` secret, shown once) and SSRF rules as the owner's webhook.

Reach: a subscription receives only what its key reaches (a one-calendar key: that calendar),
narrowed to ``calendarIds`` if given; the change types are queued by ``outbox.record_change``,
the time triggers by ``triggers.firing``, both checking the key in the same statement, so a
revoked or expired key's subscriptions get nothing queued once that committed (and what was
queued before is failed instead of sent: ``delivery.deliveries``). The owner sees and deletes every
subscription (``owner_subscriptions``, the settings page). At most ``MOST_PER_KEY`` a key.
A deleted subscription keeps its row (status ``deleted``, no secret) for its deliveries'
history; it is sent nothing more.
"""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import Field as PydanticField
from pydantic.alias_generators import to_camel
from sqlalchemy import Connection, func, insert, select, update

from calendar_service.access import keys
from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import accessible_calendars
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery.triggers.kinds import (
    CHANGE_TYPES,
    DEFAULT_OFFSETS,
    ENDED,
    EVENT_TYPES,
    MINUTES_MOST,
    OFFSETS_MOST,
    STARTING,
    check_events,
    check_minutes_before,
    dumped,
    events_of,
    loaded,
)
from calendar_service.delivery.webhook_targets import Target, check_url_shape
from calendar_service.journal.webhook_outbox import enqueue
from calendar_service.platform.errors import (
    FieldError,
    NotFound,
    SubscriptionLimit,
    ValidationFailed,
    WebhookDisabled,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.inputs import check_text, parse_partial
from calendar_service.platform.models import deliveries_t, endpoints_t, keys_t
from calendar_service.platform.models.webhooks import ENDPOINT_DELETED as DELETED
from calendar_service.platform.timeutil import format_utc

MOST_PER_KEY = 25
CALENDARS_MOST = 50


class _Input(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


class SubscriptionCreate(_Input):
    """The body of ``POST /api/v1/webhooks/subscriptions`` (``createSubscription``)."""

    url: str = PydanticField(
        description="Where to send the deliveries: https, on a public address (every address "
        "its name resolves to), at most 2048 characters.",
        json_schema_extra={"maxLength": 2048, "minLength": 1},
    )
    events: list[str] | None = PydanticField(
        default=None,
        description="The event types to receive, each once; default: every type. "
        "calendar.event.created, .updated and .deleted when an event changes; "
        "calendar.event.starting minutesBefore each event and occurrence starts; "
        "calendar.event.ended when it ends.",
        json_schema_extra={
            "anyOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"type": "string", "enum": list(EVENT_TYPES)},
                },
                {"type": "null"},
            ]
        },
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description="Only these calendars (ids or names, each one the key reaches; at most "
        f"{CALENDARS_MOST}); default: every calendar the key reaches.",
        json_schema_extra={
            "anyOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": CALENDARS_MOST,
                    "items": {"type": "string", "minLength": 1},
                },
                {"type": "null"},
            ]
        },
    )
    # Any: checked by the core (``kinds.check_minutes_before``) as JSON Schema's integers,
    # which take 15.0 too.
    minutes_before: Any = PydanticField(
        default=None,
        description="For calendar.event.starting: fire this many minutes before each start, "
        f"once for each value (0 to {MINUTES_MOST}, each once, at most {OFFSETS_MOST}); "
        "default [0]: when it starts.",
        json_schema_extra={
            "anyOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": OFFSETS_MOST,
                    "uniqueItems": True,
                    "items": {"type": "integer", "minimum": 0, "maximum": MINUTES_MOST},
                },
                {"type": "null"},
            ]
        },
    )


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


def _secret_schema(schema: dict[str, Any]) -> None:
    """``secret``: a string when present (absent from every answer but the create's)."""
    schema.pop("anyOf", None)
    schema.pop("default", None)
    schema.update(type="string", pattern="^whsec_")


class SubscriptionPublic(_Wire):
    """A subscription: as ``listSubscriptions`` shows it (never its secret), and as
    ``createSubscription`` answers it (with its secret, that once)."""

    id: str = PydanticField(description="sub_… (the endpoint's id).")
    url: str
    events: list[str] = PydanticField(description="The event types it receives.")
    calendar_ids: list[str] | None = PydanticField(
        description="The calendars it is limited to; null: every calendar the key reaches."
    )
    minutes_before: list[int] | None = PydanticField(
        description="calendar.event.starting's offsets in minutes; null when it does not "
        "receive calendar.event.starting."
    )
    status: str = PydanticField(
        description="active, or disabled (its receiver failed through a whole retry "
        "schedule, or answered 410 Gone): the owner enables it again on the settings page.",
        json_schema_extra={"enum": ["active", "disabled"]},
    )
    created_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    secret: str | None = PydanticField(
        default=None,
        description="In createSubscription's answer only: whsec_…, which verifies the "
        "webhook-signature (Standard Webhooks) and x-<service>-signature headers of its "
        "deliveries. Shown that once; keep it.",
        json_schema_extra=_secret_schema,
    )


class SubscriptionList(_Wire):
    subscriptions: list[SubscriptionPublic] = PydanticField(
        description="The key's own subscriptions, oldest first."
    )


def subscription_public(row: Any) -> dict[str, Any]:
    """A subscription as its key sees it: never its secret."""
    events = events_of(row)
    return {
        "id": row.id,
        "url": row.url,
        "events": events,
        "calendarIds": loaded(row.calendar_ids),
        "minutesBefore": (loaded(row.minutes_before) or list(DEFAULT_OFFSETS))
        if STARTING in events
        else None,
        "status": row.status,
        "createdAt": format_utc(row.created_at),
    }


def _checked(
    conn: Connection, *, principal: Principal, body: Any, target: Target | None
) -> dict[str, Any]:
    """The columns of a subscription made of ``body`` (400s naming every bad field)."""
    data, errors = parse_partial(SubscriptionCreate, body)
    fields = body if isinstance(body, dict) else {}
    if isinstance(fields.get("url"), str) and target is None and "url" not in _bad(errors):
        errors.append(FieldError("url", "could not be checked"))
    elif target is not None:
        errors += check_text("url", target.url)
    events = check_events(fields.get("events"), errors) if "events" not in _bad(errors) else []
    offsets = None
    if "minutesBefore" not in _bad(errors):
        offsets = check_minutes_before(fields.get("minutesBefore"), errors)
        if offsets is not None and events and STARTING not in events:
            errors.append(
                FieldError(
                    "minutesBefore", f"applies to {STARTING} only: add it to events, or omit this"
                )
            )
    calendar_ids = None
    if "calendarIds" not in _bad(errors) and fields.get("calendarIds") is not None:
        calendar_ids = _reached(conn, principal, fields["calendarIds"], errors)
    if errors:
        raise ValidationFailed(errors)
    assert target is not None and data is not None
    if STARTING in events and offsets is None:
        offsets = list(DEFAULT_OFFSETS)
    return {
        "url": check_url_shape(target.url),
        "events": dumped(events),
        "calendar_ids": dumped(calendar_ids),
        "minutes_before": dumped(offsets if STARTING in events else None),
    }


def _bad(errors: list[FieldError]) -> set[str]:
    return {e["field"].split(".", 1)[0] for e in errors}


def _reached(
    conn: Connection, principal: Principal, wanted: Any, errors: list[FieldError]
) -> list[str] | None:
    """The ids of the calendars ``wanted`` names (ids or names), each one the key reaches."""
    field = "calendarIds"
    if not isinstance(wanted, list) or not wanted or not all(isinstance(w, str) for w in wanted):
        errors.append(FieldError(field, "must be a non-empty list of calendar ids or names"))
        return None
    if len(wanted) > CALENDARS_MOST:
        errors.append(FieldError(field, f"may name at most {CALENDARS_MOST} calendars"))
        return None
    calendars = accessible_calendars(conn, principal=principal)
    by_id = {c.id: c.id for c in calendars}
    by_name = {c.name: c.id for c in calendars}
    found: list[str] = []
    unknown: list[str] = []
    for name in wanted:
        calendar_id = by_id.get(name.strip()) or by_name.get(name.strip())
        if calendar_id is None:
            unknown.append(name.strip()[:100])
        elif calendar_id not in found:
            found.append(calendar_id)
    if unknown:
        names = ", ".join(repr(n) for n in dict.fromkeys(unknown))
        errors.append(FieldError(field, f"no calendar {names} among this key's calendars"))
        return None
    return found


def create_subscription(
    conn: Connection, *, principal: Principal, body: Any, target: Target | None, now: datetime
) -> dict[str, Any]:
    """``createSubscription``: a new endpoint of the key, with its secret (shown once).

    ``target`` is the body's ``url`` as ``webhook_targets.check_endpoint_url`` checked it,
    before the transaction (resolving its host takes the network)."""
    columns = _checked(conn, principal=principal, body=body, target=target)
    if conn.dialect.name == "postgresql":  # one count at a time per key
        conn.execute(select(keys_t.c.id).where(keys_t.c.id == principal.key_id).with_for_update())
    count = conn.execute(
        select(func.count())
        .select_from(endpoints_t)
        .where(
            endpoints_t.c.user_id == principal.user_id,
            endpoints_t.c.key_id == principal.key_id,
            endpoints_t.c.status != DELETED,
        )
    ).scalar_one()
    if count >= MOST_PER_KEY:
        raise SubscriptionLimit(MOST_PER_KEY)
    secret = webhook_config.new_secret()
    values = {
        "id": new_id("sub"),
        "user_id": principal.user_id,
        "key_id": principal.key_id,
        "secret": secret,
        "status": "active",
        "created_at": now,
        "updated_at": now,
        **columns,
    }
    conn.execute(insert(endpoints_t).values(**values))
    return {**subscription_public(SimpleNamespace(**values)), "secret": secret}


def _own(principal: Principal) -> Any:
    return select(endpoints_t).where(
        endpoints_t.c.user_id == principal.user_id,
        endpoints_t.c.key_id == principal.key_id,
        endpoints_t.c.status != DELETED,
    )


def list_subscriptions(conn: Connection, *, principal: Principal) -> dict[str, Any]:
    """``listSubscriptions``: the key's own subscriptions, oldest first, without secrets."""
    rows = conn.execute(_own(principal).order_by(endpoints_t.c.created_at, endpoints_t.c.id))
    return {"subscriptions": [subscription_public(r) for r in rows]}


def _own_row(conn: Connection, principal: Principal, subscription_id: str) -> Any:
    row = conn.execute(_own(principal).where(endpoints_t.c.id == subscription_id)).first()
    if row is None:
        raise NotFound(f"No subscription {subscription_id[:100]!r} of this key.")
    return row


def delete_subscription(
    conn: Connection, *, principal: Principal, subscription_id: str, now: datetime
) -> None:
    """``deleteSubscription``: one of the key's own (another's, or none: 404)."""
    row = _own_row(conn, principal, subscription_id)
    _delete(conn, row.id, now=now, by="its key")


def _delete(conn: Connection, endpoint_id: str, *, now: datetime, by: str) -> None:
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == endpoint_id)
        .values(secret="", previous_secret=None, previous_secret_expires_at=None)
    )
    webhook_config.disable_endpoint_by_id(
        conn, endpoint_id=endpoint_id, reason=f"deleted by {by}", now=now, status=DELETED
    )


def sample_data(event_type: str, *, now: datetime, offsets: list[int] | None) -> dict[str, Any]:
    """What a delivery of ``event_type`` carries, for an event made up for the test."""
    start = format_utc(now.replace(microsecond=0))
    event = {
        "id": "ev_sample",
        "calendarId": "cal_sample",
        "calendar": "Sample",
        "title": "A sample event (a test delivery)",
        "startsAt": start,
        "endsAt": start,
        "allDay": False,
        "description": None,
        "location": None,
        "createdAt": start,
        "updatedAt": start,
        "transparency": "opaque",
    }
    data: dict[str, Any] = {"event": event, "test": True}
    if event_type in (STARTING, ENDED):
        data.update(minutesBefore=(offsets or [0])[0] if event_type == STARTING else 0)
        data.update(scheduledFor=start, late=0)
    return data


def send_samples(
    conn: Connection, *, principal: Principal, subscription_id: str, now: datetime
) -> dict[str, Any]:
    """``testSubscription``: a signed sample of each type the subscription receives, each a
    delivery like any other (``data.test`` true, a made-up event); refused while it is
    disabled. Returns the deliveries queued."""
    row = _own_row(conn, principal, subscription_id)
    if row.status != "active":
        raise WebhookDisabled(
            "The subscription is disabled; its owner can enable it again on the settings page."
        )
    queued = []
    for event_type in events_of(row):
        delivery_id = enqueue(
            conn,
            user_id=principal.user_id,
            endpoint_id=row.id,
            event_type=event_type,
            data=sample_data(event_type, now=now, offsets=loaded(row.minutes_before)),
            now=now,
        )
        queued.append({"id": delivery_id, "eventType": event_type})
    return {"deliveries": queued}


# ---------------------------------------------------------------------------------------------
# The owner's view (the settings page)


def owner_subscriptions(conn: Connection, *, user_id: str, now: datetime) -> list[dict[str, Any]]:
    """Every subscription of the owner's keys, newest first: which key (its name and state),
    and how its deliveries went (by status)."""
    rows = conn.execute(
        select(
            endpoints_t,
            keys_t.c.name.label("key_name"),
            keys_t.c.revoked_at.label("key_revoked_at"),
            keys_t.c.expires_at.label("key_expires_at"),
        )
        .select_from(endpoints_t.join(keys_t, keys_t.c.id == endpoints_t.c.key_id))
        .where(endpoints_t.c.user_id == user_id, endpoints_t.c.status != DELETED)
        .order_by(endpoints_t.c.created_at.desc(), endpoints_t.c.id)
    ).all()
    counts: dict[str, dict[str, int]] = {}
    if rows:
        for endpoint_id, status, count in conn.execute(
            select(deliveries_t.c.endpoint_id, deliveries_t.c.status, func.count())
            .where(
                deliveries_t.c.user_id == user_id,
                deliveries_t.c.endpoint_id.in_([r.id for r in rows]),
            )
            .group_by(deliveries_t.c.endpoint_id, deliveries_t.c.status)
        ):
            counts.setdefault(endpoint_id, {})[status] = int(count)
    found = []
    for row in rows:
        key_state = keys.state_of(
            revoked_at=row.key_revoked_at, expires_at=row.key_expires_at, now=now
        )
        found.append(
            {
                **subscription_public(row),
                "keyId": row.key_id,
                "keyName": row.key_name,
                "keyState": key_state,
                "disabledReason": row.disabled_reason,
                "deliveries": counts.get(row.id, {}),
            }
        )
    return found


def owner_subscription(conn: Connection, *, user_id: str, subscription_id: str) -> Any:
    """One subscription of the owner's keys (its row), deleted ones too; 404 otherwise."""
    row = conn.execute(
        select(endpoints_t).where(
            endpoints_t.c.user_id == user_id,
            endpoints_t.c.id == subscription_id,
            endpoints_t.c.key_id.is_not(None),
        )
    ).first()
    if row is None:
        raise NotFound(f"No subscription {subscription_id[:100]!r} of this owner's keys.")
    return row


def owner_delete_subscription(
    conn: Connection, *, user_id: str, subscription_id: str, now: datetime
) -> None:
    """The owner deletes a subscription of one of their keys."""
    row = owner_subscription(conn, user_id=user_id, subscription_id=subscription_id)
    if row.status != DELETED:
        _delete(conn, row.id, now=now, by="the owner")


def owner_enable_subscription(
    conn: Connection, *, user_id: str, subscription_id: str, now: datetime
) -> None:
    """The owner enables a subscription disabled after its receiver failed."""
    row = owner_subscription(conn, user_id=user_id, subscription_id=subscription_id)
    if row.status == DELETED:
        raise NotFound(f"No subscription {subscription_id[:100]!r} of this owner's keys.")
    conn.execute(
        update(endpoints_t)
        .where(endpoints_t.c.id == row.id)
        .values(status="active", disabled_reason=None, failing_since=None, updated_at=now)
    )


__all__ = [
    "CHANGE_TYPES",
    "MOST_PER_KEY",
    "SubscriptionCreate",
    "SubscriptionList",
    "SubscriptionPublic",
    "create_subscription",
    "delete_subscription",
    "list_subscriptions",
    "owner_delete_subscription",
    "owner_enable_subscription",
    "owner_subscription",
    "owner_subscriptions",
    "send_samples",
]
