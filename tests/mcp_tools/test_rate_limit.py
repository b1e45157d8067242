"""The per-key rate limit applies to tool calls as it does to REST requests."""

from __future__ import annotations

from calendar_service.access import call_history as history
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.db import Database
from tests.conftest import make_config
from tests.mcp_tools.clients import connect, text_of
from tests.support import Factory, run_server


async def test_a_key_over_its_budget_gets_a_rate_limited_tool_error(
    database_url: str, db: Database, factory: Factory
) -> None:
    app = create_app(make_config(database_url, rate_limit=(2, 60)), db=db, run_webhooks=False)
    key_id, secret = factory.key(factory.owner())
    with run_server(app) as server:
        async with connect(server.url, secret) as client:
            results = [await client.call_tool("listCalendarEvents", {}) for _ in range(3)]
    assert [r.is_error for r in results] == [False, False, True]
    assert text_of(results[2]).startswith("rate_limited: This API key made more than 2")
    statuses = [c["status"] for c in db.call(history.list_calls, key_id=key_id)]
    assert statuses == [429, 200, 200]
