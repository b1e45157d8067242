"""Per-key request budgets: 429 with Retry-After and RateLimit headers, recorded in history."""

from __future__ import annotations

import dataclasses

import httpx

from calendar_service.access import call_history as history
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from tests.rest.conftest import EVENTS
from tests.support import Factory, bearer, run_server


def test_a_key_over_its_budget_gets_429_and_other_keys_do_not(
    config: Config, db: Database, factory: Factory
) -> None:
    strict = dataclasses.replace(config, rate_limit=(3, 60))
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    _, other = factory.key(owner)
    with (
        run_server(create_app(strict, db=db)) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        statuses = [client.get(EVENTS, headers=bearer(secret)).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = client.get(EVENTS, headers=bearer(secret))
        assert limited.status_code == 429
        assert limited.json()["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 20
        assert limited.headers["ratelimit-remaining"] == "0"
        assert limited.headers["ratelimit-policy"] == "3;w=60"
        assert client.get(EVENTS, headers=bearer(other)).status_code == 200
    recorded = [c["status"] for c in db.call(history.list_calls, key_id=key_id)]
    assert recorded == [429, 429, 200, 200, 200]
