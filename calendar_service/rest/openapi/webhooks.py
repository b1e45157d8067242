"""The Webhooks operations (``createSubscription``, ``listSubscriptions``,
``deleteSubscription``, ``testSubscription``), their schemas, and the deliveries themselves:
OpenAPI 3.1's ``webhooks``, one per event type, with the payload each carries."""

from __future__ import annotations

from typing import Any

from calendar_service.delivery import subscriptions
from calendar_service.delivery.triggers.kinds import CHANGE_TYPES, ENDED, STARTING
from calendar_service.journal.webhook_outbox import BOOKING_CREATED
from calendar_service.operations import catalog as operations
from calendar_service.rest.openapi.examples import EVENT_EXAMPLE
from calendar_service.rest.openapi.parameters import parameter, path_text
from calendar_service.rest.openapi.refs import (
    OK_HEADERS,
    RATE_DOC,
    SCHEMA,
    Tag,
    answer,
    json_content,
    link,
    model_schemas,
    operation,
    ref_headers,
)
from calendar_service.rest.openapi.responses import errors
from calendar_service.rest.subscriptions import SUBSCRIPTIONS_PATH

TAG = Tag(
    "Webhooks",
    "A key's own webhook subscriptions (REST hooks, as Zapier's and n8n's instant triggers "
    "make them): changes to the events the key reaches, and time triggers (an event starting "
    "in N minutes, an event ended), signed with the subscription's secret (Standard "
    "Webhooks). Needs a read or read-and-write key.",
)
_KEY_NOTE = " Needs a key with `calendar:read` (a read or read-and-write key)."

SUBSCRIPTION_EXAMPLE = {
    "id": "sub_4kR8nW2qT6yB0dF3hJ5mP7",
    "url": "https://hooks.zapier.com/hooks/standard/1234567/abcdef/",
    "events": [STARTING],
    "calendarIds": None,
    "minutesBefore": [15],
    "status": "active",
    "createdAt": "2026-02-20T14:03:11.482913Z",
}
CREATE_EXAMPLES = {
    "starting": {
        "summary": "An event starting in 15 minutes (Zapier, n8n, Pipedream)",
        "value": {
            "url": SUBSCRIPTION_EXAMPLE["url"],
            "events": [STARTING],
            "minutesBefore": [15],
        },
    },
    "changes": {
        "summary": "New, changed and deleted events of one calendar",
        "value": {
            "url": "https://n8n.example.com/webhook/3f1c2a",
            "events": list(CHANGE_TYPES),
            "calendarIds": [EVENT_EXAMPLE["calendarId"]],
        },
    },
}


def paths() -> dict[str, Any]:
    collection = SUBSCRIPTIONS_PATH.removeprefix("/api/v1")
    item = collection + "/{subscriptionId}"
    return {
        collection: {"get": _list(), "post": _create()},
        item: {"parameters": [_subscription_id()], "delete": _delete()},
        item + "/test": {"parameters": [_subscription_id()], "post": _test()},
    }


def _subscription_id() -> dict[str, Any]:
    return path_text("subscriptionId", "A subscription of this key (sub_…).", 40)


def _create() -> dict[str, Any]:
    return TAG.operation(
        operations.SUBSCRIBE,
        "Subscribe a URL to webhook deliveries",
        "Makes a webhook endpoint of this key: the events it reaches (or those "
        "of calendarIds) are sent to url as they change and as they start (minutesBefore) or "
        "end, each signed with the subscription's own secret, shown in this answer only. The "
        "URL must be https on a public address (checked now and before every delivery). At "
        f"most {subscriptions.MOST_PER_KEY} subscriptions a key (400 `subscription_limit`). "
        "Deliveries stop at once when the key is revoked or expires." + _KEY_NOTE + RATE_DOC,
        {
            "201": {
                "description": "The subscription, with its signing secret (shown this once).",
                "headers": {
                    "Location": {
                        "description": "The subscription's URL (DELETE it to unsubscribe).",
                        "required": True,
                        "schema": {"type": "string", "format": "uri"},
                    },
                    **ref_headers(*OK_HEADERS),
                },
                "content": json_content(
                    "Subscription",
                    example={
                        **SUBSCRIPTION_EXAMPLE,
                        "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                    },
                ),
                "links": {
                    "DeleteSubscription": link(
                        "deleteSubscription",
                        "Unsubscribe (what Zapier calls on turning a Zap off).",
                        subscriptionId="$response.body#/id",
                    ),
                    "TestSubscription": link(
                        "testSubscription",
                        "Send a signed sample of each type it receives.",
                        subscriptionId="$response.body#/id",
                    ),
                },
            },
            **errors(),
        },
        body={
            "required": True,
            "description": "Where to send what.",
            "content": json_content("SubscriptionCreate", examples=CREATE_EXAMPLES),
        },
    )


def _list() -> dict[str, Any]:
    return TAG.operation(
        operations.LIST_SUBSCRIPTIONS,
        "List this key's subscriptions",
        "The key's own subscriptions, oldest first, without their secrets." + _KEY_NOTE + RATE_DOC,
        {
            "200": answer(
                "The key's subscriptions.",
                json_content("SubscriptionList", example={"subscriptions": [SUBSCRIPTION_EXAMPLE]}),
            ),
            **errors(),
        },
    )


def _delete() -> dict[str, Any]:
    return TAG.operation(
        operations.UNSUBSCRIBE,
        "Delete one of this key's subscriptions",
        "Nothing more is sent to it (its deliveries not yet sent fail). Another "
        "key's subscription is not found (404)." + _KEY_NOTE + RATE_DOC,
        {
            "204": answer("Deleted."),
            **errors("404"),
        },
    )


def _test() -> dict[str, Any]:
    return TAG.operation(
        operations.TEST_SUBSCRIPTION,
        "Send a signed sample of each type the subscription receives",
        "Queues one delivery of each event type the subscription receives, "
        "about a made-up event (`data.test` is true), signed and sent like any other: what a "
        "receiver needs to check its signature handling and see the payloads. 409 "
        "`webhook_disabled` while it is disabled." + _KEY_NOTE + RATE_DOC,
        {
            "202": answer(
                "The deliveries queued, one per type; sent within seconds.",
                json_content(
                    "SampleDeliveries",
                    example={
                        "deliveries": [{"id": "evt_2Jd8fK1mQ4rT7vX0zB3nC5", "eventType": STARTING}]
                    },
                ),
            ),
            **errors("404", "409"),
        },
    )


# ---------------------------------------------------------------------------------------------
# Schemas


def schemas() -> dict[str, Any]:
    out = model_schemas(
        (
            (subscriptions.SubscriptionCreate, "validation"),
            (subscriptions.SubscriptionPublic, "serialization"),
            (subscriptions.SubscriptionList, "serialization"),
        ),
        {"SubscriptionPublic": "Subscription"},
    )
    out["SubscriptionCreate"]["examples"] = [e["value"] for e in CREATE_EXAMPLES.values()]
    out["SampleDeliveries"] = {
        "type": "object",
        "description": "The sample deliveries queued, one per event type.",
        "properties": {
            "deliveries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Its webhook-id (evt_…)."},
                        "eventType": {"type": "string"},
                    },
                    "required": ["id", "eventType"],
                },
            }
        },
        "required": ["deliveries"],
    }
    out.update(_payload_schemas())
    return out


# ---------------------------------------------------------------------------------------------
# The deliveries (OpenAPI 3.1 ``webhooks``)

_DELIVERY_HEADERS = {
    "webhook-id": "The message id (evt_…), the same on every retry: deduplicate on it.",
    "webhook-timestamp": "Unix seconds when this attempt was signed.",
    "webhook-signature": "v1,<base64 HMAC-SHA256> (Standard Webhooks), one per secret.",
    "x-calendar-signature": "v1=<hex HMAC-SHA256 of the body> (the header is named after "
    "CALENDAR_SERVICE_NAME: x-<service>-signature).",
}


def _payload_schemas() -> dict[str, Any]:
    change = {
        "type": "object",
        "properties": {"event": {"$ref": SCHEMA.format("Event")}},
        "required": ["event"],
    }
    timed = {
        "type": "object",
        "properties": {
            "event": {"$ref": SCHEMA.format("Event")},
            "minutesBefore": {
                "type": "integer",
                "description": "calendar.event.starting: the offset this delivery is for; "
                "0 for calendar.event.ended.",
            },
            "scheduledFor": {
                "type": "string",
                "format": "date-time",
                "description": "When it was due: the start less minutesBefore, or the end.",
            },
            "late": {
                "type": "integer",
                "description": "Seconds after scheduledFor it was sent out (0: on time); after "
                "an outage, triggers missed by more than CALENDAR_TRIGGER_GRACE are skipped.",
            },
        },
        "required": ["event", "minutesBefore", "scheduledFor", "late"],
    }
    booking = {
        "type": "object",
        "properties": {
            "booking": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "bk_…"},
                    "linkId": {"type": "string"},
                    "eventId": {"type": "string"},
                    "startsAt": {"type": "string", "format": "date-time"},
                    "endsAt": {"type": "string", "format": "date-time"},
                    "guest": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                        "required": ["name", "email"],
                    },
                },
                "required": ["id", "linkId", "eventId", "startsAt", "endsAt", "guest"],
            },
            "event": {"$ref": SCHEMA.format("Event")},
        },
        "required": ["booking", "event"],
    }
    return {
        "WebhookBookingData": booking,
        "WebhookBooking": _envelope("WebhookBookingData", [BOOKING_CREATED]),
        "WebhookChangeData": change,
        "WebhookTimeData": timed,
        "WebhookChange": _envelope("WebhookChangeData", list(CHANGE_TYPES)),
        "WebhookTime": _envelope("WebhookTimeData", [STARTING, ENDED]),
    }


def _envelope(data: str, types: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "The message id, as webhook-id."},
            "type": {"type": "string", "enum": types},
            "createdAt": {"type": "string", "format": "date-time"},
            "data": {"$ref": SCHEMA.format(data)},
        },
        "required": ["id", "type", "createdAt", "data"],
    }


_DESCRIPTIONS = {
    "calendar.event.created": "An event was created (a series as itself).",
    "calendar.event.updated": "An event, a series or an occurrence was changed.",
    "calendar.event.deleted": "An event was deleted (as it was), or an occurrence cancelled.",
    STARTING: "An event or an occurrence of a series starts in minutesBefore minutes (once "
    "for each value of minutesBefore).",
    ENDED: "An event or an occurrence of a series has ended.",
    BOOKING_CREATED: "A guest booked a time through a scheduling link (to the owner's webhook "
    "and the link's key's subscriptions that take it): the booking (never its manageUrl) and "
    "its event.",
}


def _operation_id(event_type: str) -> str:
    """``calendar.event.starting`` → ``calendarEventStartingDelivery``."""
    return (
        "".join(
            part if n == 0 else part.capitalize() for n, part in enumerate(event_type.split("."))
        )
        + "Delivery"
    )


def webhooks() -> dict[str, Any]:
    """One entry per event type: what is POSTed to a subscription's (or the owner's) URL."""
    found = {}
    for event_type, description in _DESCRIPTIONS.items():
        envelope = "WebhookTime" if event_type in (STARTING, ENDED) else "WebhookChange"
        if event_type == BOOKING_CREATED:
            envelope = "WebhookBooking"
        found[event_type] = {
            "post": operation(
                _operation_id(event_type),
                TAG.name,
                event_type,
                description + " Answer 2xx within 10 seconds; anything else is retried on the "
                "schedule (the same webhook-id). docs/webhooks.md says how to verify the "
                "signatures.",
                # Not "2XX": the receiver's answer carries none of the API's headers.
                {"default": {"description": "Any 2xx: received; anything else is retried."}},
                parameters=[
                    parameter(name, "header", text, {"type": "string"}, required=True)
                    for name, text in _DELIVERY_HEADERS.items()
                ],
                body={
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": SCHEMA.format(envelope)}}},
                },
            )
        }
    return found
