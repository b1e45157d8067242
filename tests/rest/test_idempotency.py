"""Idempotency-Key on POST: replay, reuse with another body, and in-flight duplicates."""

from __future__ import annotations

import hashlib

import httpx
import pytest
from sqlalchemy import text

from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


@pytest.fixture
def secret(factory: Factory) -> str:
    """A write key of a new owner."""
    return factory.key(factory.owner())[1]


def idempotent(secret: str, idempotency_key: str) -> dict[str, str]:
    """The headers of a request with the API key ``secret`` and an ``Idempotency-Key``."""
    return {**bearer(secret), "Idempotency-Key": idempotency_key}


def test_the_same_key_and_body_replays_the_first_response(api: httpx.Client, secret: str) -> None:
    headers = idempotent(secret, "order-42")
    first = api.post(EVENTS, json=event_body(), headers=headers)
    again = api.post(EVENTS, json=event_body(), headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["location"] == first.headers["location"]
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert len(api.get(EVENTS, headers=bearer(secret)).json()["events"]) == 1


def test_the_same_key_with_another_body_is_refused_with_422(api: httpx.Client, secret: str) -> None:
    headers = idempotent(secret, "order-43")
    assert api.post(EVENTS, json=event_body(), headers=headers).status_code == 201
    other = api.post(EVENTS, json=event_body(title="Other"), headers=headers)
    assert other.status_code == 422
    assert other.json()["code"] == "idempotency_key_reused"
    assert len(api.get(EVENTS, headers=bearer(secret)).json()["events"]) == 1


def test_a_failed_request_leaves_the_key_free_for_the_corrected_one(
    api: httpx.Client, secret: str
) -> None:
    headers = idempotent(secret, "order-44")
    assert api.post(EVENTS, json=event_body(title=""), headers=headers).status_code == 400
    assert api.post(EVENTS, json=event_body(), headers=headers).status_code == 201


def test_keys_are_per_api_key(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, one = factory.key(owner)
    _, two = factory.key(owner)
    a = api.post(EVENTS, json=event_body(), headers=idempotent(one, "k"))
    b = api.post(EVENTS, json=event_body(), headers=idempotent(two, "k"))
    assert a.json()["id"] != b.json()["id"]


@pytest.mark.postgresql  # SQLite runs write transactions one at a time: a duplicate waits
def test_a_duplicate_while_the_first_is_in_flight_gets_409(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    key_id, secret = factory.key(factory.owner())
    lock = int.from_bytes(
        hashlib.sha256(f"{key_id}\0order-45".encode()).digest()[:8], "big", signed=True
    )
    with db.engine.connect() as holder:  # stands in for the first request's transaction
        holder.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock})
        response = api.post(EVENTS, json=event_body(), headers=idempotent(secret, "order-45"))
        holder.rollback()
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_in_flight"
    retried = api.post(EVENTS, json=event_body(), headers=idempotent(secret, "order-45"))
    assert retried.status_code == 201
