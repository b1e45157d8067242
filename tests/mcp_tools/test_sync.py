"""The MCP list tool keeps up by sync token, with the official client and a real server: its
last page carries nextSyncToken, and syncToken returns the changes since (deleted events and
cancelled occurrences as status cancelled, valid against the tool's output schema)."""

from __future__ import annotations

from typing import Any

from mcp import Client

from tests.mcp_tools.clients import connect, structured, text_of
from tests.support import Factory, RunningServer

WEEKLY = {
    "title": "Weekly",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T10:00:00Z",
    "recurrence": ["RRULE:FREQ=WEEKLY"],
}


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return structured(result)


async def changes(client: Client, token: str) -> tuple[list[dict[str, Any]], str]:
    """Every page of a sync: its events and the new token."""
    found: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"syncToken": token, "limit": 1, "detail": "full"}
    for _ in range(100):
        page = await call(client, "listCalendarEvents", arguments)
        assert "now" in page
        found.extend(page["events"])
        if "nextPageToken" not in page:
            return found, page["nextSyncToken"]
        arguments["pageToken"] = page["nextPageToken"]
    raise AssertionError("the pages never ended")


async def test_the_list_tool_syncs_each_change_once(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, calendar_id=owner.default_calendar_id)
    async with connect(server.url, secret) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "syncToken" in tools["listCalendarEvents"].description
        first = await call(client, "listCalendarEvents", {"singleEvents": False, "detail": "full"})
        token = first["nextSyncToken"]
        single = await call(
            client,
            "createCalendarEvent",
            {"title": "One", "startsAt": "2026-03-03T09:00:00Z", "endsAt": "2026-03-03T10:00Z"},
        )
        series = await call(client, "createCalendarEvent", WEEKLY)
        found, token = await changes(client, token)
        assert found == [single, series]
        occurrence = f"{series['id']}_20260309T090000Z"
        await call(client, "deleteCalendarEvent", {"eventId": occurrence})
        await call(client, "deleteCalendarEvent", {"eventId": single["id"]})
        found, token = await changes(client, token)
        assert found == [
            {
                "id": occurrence,
                "status": "cancelled",
                "recurringEventId": series["id"],
                "originalStartsAt": "2026-03-09T09:00:00Z",
            },
            {"id": single["id"], "status": "cancelled"},
        ]
        assert (await changes(client, token))[0] == []


async def test_a_bad_token_or_a_window_is_a_tool_error(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    async with connect(server.url, secret) as client:
        token = (await call(client, "listCalendarEvents", {}))["nextSyncToken"]
        bad = await client.call_tool("listCalendarEvents", {"syncToken": token + "x"})
        assert bad.is_error and "syncToken" in text_of(bad)
        windowed = await client.call_tool(
            "listCalendarEvents", {"syncToken": token, "timeMin": "2026-03-01T00:00:00Z"}
        )
        assert windowed.is_error and "timeMin" in text_of(windowed)
