"""End to end: changes made over REST reach a real HTTPS receiver, signed, and are retried."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx
from standardwebhooks import Webhook

from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import bearer, wait_for
from tests.webhooks.conftest import HOOKS_DEADLINE
from tests.webhooks.support import (
    Received,
    Receiver,
    Reply,
    deliveries,
    delivery,
    subscriber,
)

EVENT = {"title": "Dentist", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"}


def verify_both(request: Received, *secrets: str) -> dict[str, Any]:
    """Verify with the standardwebhooks library and recompute the seed header, per secret."""
    seed = request.headers["x-calendar-signature"].split(",")
    for secret in secrets:
        payload = Webhook(secret).verify(request.body, request.headers)
        expected = hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
        assert f"v1={expected}" in seed
    return payload  # type: ignore[no-any-return]


def settled(db: Database, owner: Any, delivery_id: str) -> dict[str, Any]:
    """Wait for a delivery to reach a final state; return it with its attempts."""
    return wait_for(
        lambda: (d := delivery(db, owner, delivery_id))["status"] in ("succeeded", "failed") and d,
        what=f"delivery {delivery_id} to settle",
    )


def test_created_updated_and_deleted_events_arrive_signed_with_both_signatures(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url()
    owner, key, secret = subscriber(hooks_db, url)

    created = hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key)).json()
    event_url = f"/api/v1/calendar/events/{created['id']}"
    updated = hooks_api.patch(event_url, json={"title": "Dentist (moved)"}, headers=bearer(key))
    assert updated.status_code == 200
    assert hooks_api.delete(event_url, headers=bearer(key)).status_code in (200, 204)

    got = wait_for(lambda: len(receiver.received(url)) >= 3 and receiver.received(url))
    payloads = {p["type"]: p for p in (verify_both(r, secret) for r in got)}
    assert set(payloads) == {
        "calendar.event.created",
        "calendar.event.updated",
        "calendar.event.deleted",
    }
    assert payloads["calendar.event.created"]["data"]["event"] == created
    assert payloads["calendar.event.updated"]["data"]["event"]["title"] == "Dentist (moved)"
    assert payloads["calendar.event.deleted"]["data"]["event"]["title"] == "Dentist (moved)"
    for request in got:
        body = json.loads(request.body)
        assert request.headers["webhook-id"] == body["id"] and body["id"].startswith("evt_")
        assert request.headers["content-type"] == "application/json"
        assert body["createdAt"].endswith("Z")
    assert len({r.headers["webhook-id"] for r in got}) == 3
    wait_for(lambda: all(d["status"] == "succeeded" for d in deliveries(hooks_db, owner)))


def test_a_failed_change_sends_nothing(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    owner, key, _ = subscriber(hooks_db, receiver.url())
    bad = {**EVENT, "endsAt": "2026-03-01T00:00:00Z"}
    assert (
        hooks_api.post("/api/v1/calendar/events", json=bad, headers=bearer(key)).status_code == 400
    )
    assert deliveries(hooks_db, owner) == []


def test_a_delivery_is_retried_after_5xx_answers_with_the_same_webhook_id(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url(503, Reply(status=500, body=b"database down"), 200)
    owner, key, secret = subscriber(hooks_db, url)
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))

    got = wait_for(lambda: len(receiver.received(url)) >= 3 and receiver.received(url))
    assert len({r.headers["webhook-id"] for r in got}) == 1
    for request in got:
        verify_both(request, secret)
    done = settled(hooks_db, owner, got[0].headers["webhook-id"])
    assert done["status"] == "succeeded" and done["attempts"] == 3
    log = done["attemptLog"]
    assert [a["statusCode"] for a in log] == [503, 500, 200]
    assert log[1]["responseExcerpt"] == "database down" and log[1]["error"] == "HTTP 500"
    assert all(a["durationMs"] >= 0 for a in log)


def test_a_delivery_is_retried_after_a_time_out_with_the_same_webhook_id(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url(Reply(hold=HOOKS_DEADLINE * 3), 200)
    owner, key, _ = subscriber(hooks_db, url)
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))

    got = wait_for(lambda: len(receiver.received(url)) >= 2 and receiver.received(url))
    assert got[0].headers["webhook-id"] == got[1].headers["webhook-id"]
    done = settled(hooks_db, owner, got[0].headers["webhook-id"])
    assert done["status"] == "succeeded"
    first, second = done["attemptLog"]
    assert first["statusCode"] is None and first["error"] == f"timed out after {HOOKS_DEADLINE:g} s"
    # Cut at the deadline, not when the receiver answered (it holds its reply three times as long).
    assert HOOKS_DEADLINE * 1000 <= first["durationMs"] < HOOKS_DEADLINE * 3 * 1000
    assert second["statusCode"] == 200


def test_a_delivery_that_fails_its_whole_schedule_fails_and_disables_the_endpoint(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url(500, 500, 500)
    owner, key, _ = subscriber(hooks_db, url)
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))

    [listed] = wait_for(lambda: deliveries(hooks_db, owner))
    done = settled(hooks_db, owner, listed["id"])
    assert done["status"] == "failed" and done["attempts"] == 3  # 1 + len(schedule)
    endpoint = hooks_db.call(webhook_config.get_endpoint, user_id=owner.id)
    assert endpoint["status"] == "disabled"
    assert "through a whole retry schedule" in endpoint["disabledReason"]

    # While disabled, changes are recorded as failed deliveries and nothing is sent ...
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))
    newest = deliveries(hooks_db, owner)[0]
    assert newest["status"] == "failed" and newest["attempts"] == 0
    # ... until the owner enables the webhook and asks for the failed ones again.
    enabled = hooks_db.call(
        webhook_config.enable_endpoint, user_id=owner.id, now=utcnow(), redeliver_failed=True
    )
    assert enabled["status"] == "active" and enabled["redelivered"] == 2
    wait_for(lambda: all(d["status"] == "succeeded" for d in deliveries(hooks_db, owner)))
    assert len({r.headers["webhook-id"] for r in receiver.received(url)}) == 2


def test_410_gone_disables_the_endpoint_at_once(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url(410)
    owner, key, _ = subscriber(hooks_db, url)
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))

    [listed] = wait_for(lambda: deliveries(hooks_db, owner))
    done = settled(hooks_db, owner, listed["id"])
    assert done["status"] == "failed" and done["attempts"] == 1
    endpoint = hooks_db.call(webhook_config.get_endpoint, user_id=owner.id)
    assert endpoint["status"] == "disabled" and "410" in endpoint["disabledReason"]
    assert len(receiver.received(url)) == 1


def test_after_rotation_both_secrets_verify_and_the_old_one_is_dropped_after_a_day(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url()
    owner, key, old = subscriber(hooks_db, url)
    endpoint, new = hooks_db.call(webhook_config.rotate_secret, user_id=owner.id, now=utcnow())
    assert new != old and endpoint["previousSecretExpiresAt"] is not None
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))

    [request] = wait_for(lambda: receiver.received(url))
    verify_both(request, new, old)
    assert request.headers["x-calendar-signature"].count("v1=") == 2
    assert request.headers["webhook-signature"].count("v1,") == 2

    row = hooks_db.call(
        lambda conn: conn.execute(
            webhook_config.endpoints_t.select().where(
                webhook_config.endpoints_t.c.user_id == owner.id
            )
        ).one()
    )
    later = row.previous_secret_expires_at
    assert webhook_config.signing_secrets(row, now=later) == [new]


def test_an_owner_can_send_a_delivery_again_with_the_same_webhook_id(
    hooks_api: httpx.Client, hooks_db: Database, receiver: Receiver
) -> None:
    url = receiver.url()
    owner, key, _ = subscriber(hooks_db, url)
    hooks_api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))
    [first] = wait_for(lambda: receiver.received(url))
    delivery_id = first.headers["webhook-id"]
    settled(hooks_db, owner, delivery_id)

    hooks_db.call(webhook_config.redeliver, user_id=owner.id, delivery_id=delivery_id, now=utcnow())
    got = wait_for(lambda: len(receiver.received(url)) == 2 and receiver.received(url))
    assert got[1].headers["webhook-id"] == delivery_id
    assert got[1].body == first.body
    wait_for(lambda: delivery(hooks_db, owner, delivery_id)["attempts"] == 2)
