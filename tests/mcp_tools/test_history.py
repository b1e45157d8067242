"""Every tool call lands in the key's call history, like a REST request, with transport mcp."""

from __future__ import annotations

import pytest

from calendar_service.access import call_history as history
from calendar_service.platform.db import Database
from tests.mcp_tools.clients import MODES, connect, structured
from tests.rest.conftest import event_body
from tests.support import Factory, RunningServer


@pytest.mark.parametrize("mode", MODES)
async def test_each_tool_call_is_recorded_with_transport_mcp_and_the_tool_name(
    server: RunningServer, factory: Factory, db: Database, mode: str
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    reader_id, reader = factory.key(owner, permission="read")
    async with connect(server.url, secret, mode=mode) as client:
        await client.list_tools()  # protocol chatter, not an operation: not recorded
        event = structured(await client.call_tool("createCalendarEvent", event_body()))
        ref = {"eventId": event["id"]}
        await client.call_tool("listCalendarEvents", {"timeMin": "2026-03-01"})
        await client.call_tool("getCalendarEvent", ref)
        await client.call_tool("updateCalendarEvent", {**ref, "title": ""})
        await client.call_tool("deleteCalendarEvent", ref)
        await client.call_tool("getCalendarEvent", ref)
    async with connect(server.url, reader, mode=mode) as client:
        await client.call_tool("createCalendarEvent", event_body())

    calls = list(reversed(db.call(history.list_calls, key_id=key_id)))
    assert [(c["operation"], c["status"]) for c in calls] == [
        ("createCalendarEvent", 201),
        ("listCalendarEvents", 200),
        ("getCalendarEvent", 200),
        ("updateCalendarEvent", 400),
        ("deleteCalendarEvent", 200),
        ("getCalendarEvent", 404),
    ]
    for call in calls:
        assert (call["transport"], call["method"], call["path"]) == ("mcp", "POST", "/mcp")
        assert call["clientAddr"] == "127.0.0.1"
        assert call["requestId"] and call["requestId"].startswith("req_")
        assert call["userAgent"]
    refused = db.call(history.list_calls, key_id=reader_id)
    assert [(c["transport"], c["operation"], c["status"]) for c in refused] == [
        ("mcp", "createCalendarEvent", 401)
    ]
