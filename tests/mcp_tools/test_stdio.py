"""``calendar-service mcp``: the tools over stdio, acting with the key in CALENDAR_API_KEY."""

from __future__ import annotations

import os
import sys

import httpx
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.cli import app
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from mcp_tools.server import TOOLS
from tests.mcp_tools.clients import MODES, structured, text_of
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


def _stdio(config: Config, secret: str) -> StdioServerParameters:
    env = {
        **os.environ,
        "CALENDAR_DATABASE_URL": config.database_url,
        "CALENDAR_API_KEY": secret,
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "calendar_service.cli", "mcp"], env=env
    )


@pytest.mark.parametrize("mode", MODES)
async def test_the_stdio_server_acts_with_its_key_and_rechecks_it_on_every_call(
    config: Config, db: Database, factory: Factory, api: httpx.Client, mode: str
) -> None:
    key_id, secret = factory.key(factory.owner(time_zone="Asia/Tokyo"))
    async with Client(_stdio(config, secret), mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        created = structured(
            await client.call_tool(
                "createCalendarEvent",
                event_body(startsAt="2026-03-02T09:00:00", endsAt="2026-03-02T10:00:00"),
            )
        )
        page = structured(await client.call_tool("listCalendarEvents", {}))
        db.call(keys.revoke_key, user_id=None, key_id=key_id, now=utcnow())
        refused = await client.call_tool("listCalendarEvents", {})

    assert "createCalendarEvent" in names and names == {spec.op.name for spec in TOOLS}
    assert created["startsAt"] == "2026-03-02T09:00:00+09:00"
    assert page["now"].endswith("+09:00")
    assert [e["id"] for e in page["events"]] == [created["id"]]
    assert refused.is_error and "revoked_api_key" in text_of(refused)
    seen = api.get(f"{EVENTS}/{created['id']}", headers=bearer(secret))
    assert seen.status_code == 401  # revoked: REST refuses it too
    calls = list(reversed(db.call(history.list_calls, key_id=key_id)))
    assert [(c["transport"], c["method"], c["operation"], c["status"]) for c in calls] == [
        ("mcp", "STDIO", "createCalendarEvent", 201),
        ("mcp", "STDIO", "listCalendarEvents", 200),
        ("mcp", "STDIO", "listCalendarEvents", 401),
        ("rest", "GET", "getCalendarEvent", 401),
    ]
    assert calls[0]["userAgent"]  # the client's name and version


def test_the_stdio_server_refuses_to_start_without_a_key(config: Config, db: Database) -> None:
    # db: the database exists (a missing SQLite file is refused first, for its own reason).
    env = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_API_KEY": ""}
    result = CliRunner().invoke(app, ["mcp"], env=env)
    assert result.exit_code == 1
    assert "CALENDAR_API_KEY is not set" in result.stderr
    assert result.stdout == ""


def test_the_stdio_server_refuses_to_start_with_a_revoked_key(
    config: Config, db: Database, factory: Factory
) -> None:
    key_id, secret = factory.key(factory.owner())
    db.call(keys.revoke_key, user_id=None, key_id=key_id, now=utcnow())
    env = {"CALENDAR_DATABASE_URL": config.database_url, "CALENDAR_API_KEY": secret}
    result = CliRunner().invoke(app, ["mcp"], env=env)
    assert result.exit_code == 1
    assert "The key in CALENDAR_API_KEY is refused" in result.stderr
    assert "revoked" in result.stderr
    assert result.stdout == ""
