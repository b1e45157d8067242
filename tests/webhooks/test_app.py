"""The app's lifespan runs the delivery job (as ``serve`` does), with its default client."""

from __future__ import annotations

import hashlib
import hmac

import httpx

from calendar_service.platform.db import Database
from tests.support import bearer, wait_for
from tests.webhooks.support import Receiver, subscriber


def test_the_served_app_delivers_changes_through_its_own_delivery_job(
    api: httpx.Client, db: Database, plain_receiver: Receiver
) -> None:
    url = plain_receiver.url()
    _, key, secret = subscriber(db, url)
    body = {"title": "Lunch", "startsAt": "2026-03-02T12:00:00Z", "endsAt": "2026-03-02T13:00:00Z"}
    created = api.post("/api/v1/calendar/events", json=body, headers=bearer(key))
    assert created.status_code == 201

    [request] = wait_for(lambda: plain_receiver.received(url), timeout=60)
    expected = hmac.new(secret.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.headers["x-calendar-signature"] == f"v1={expected}"
    assert request.headers["user-agent"].startswith("calendar-service-webhooks/")
