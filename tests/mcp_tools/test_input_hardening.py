"""Tool calls a stranger controls are refused like REST input, the same on both databases: NUL
characters in any argument, duplicate JSON keys, and errors naming a calendar out of reach."""

from __future__ import annotations

import httpx

from tests.mcp_tools.clients import JSON_RPC_HEADERS, connect, structured, text_of
from tests.rest.conftest import event_body
from tests.support import Factory, RunningServer, bearer

NUL = "\x00"
NUL_LINE = "must not contain NUL characters (U+0000)"


async def test_a_nul_character_in_any_tool_argument_is_a_validation_error(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        event = structured(await client.call_tool("createCalendarEvent", event_body()))
        refused = {
            "title": await client.call_tool("createCalendarEvent", event_body(title=f"a{NUL}")),
            "calendar": await client.call_tool(
                "createCalendarEvent", event_body(calendar=f"Work{NUL}")
            ),
            "timeMin": await client.call_tool("listCalendarEvents", {"timeMin": NUL}),
            "pageToken": await client.call_tool("listCalendarEvents", {"pageToken": NUL}),
            "eventId": await client.call_tool("getCalendarEvent", {"eventId": event["id"] + NUL}),
            "location": await client.call_tool(
                "updateCalendarEvent", {"eventId": event["id"], "location": f"Room{NUL}"}
            ),
        }
        for_delete = await client.call_tool("deleteCalendarEvent", {"eventId": NUL})
        after = structured(await client.call_tool("getCalendarEvent", {"eventId": event["id"]}))
    for field, result in [*refused.items(), ("eventId", for_delete)]:
        assert result.is_error, field
        text = text_of(result)
        assert "validation_error: " in text, text
        assert f"- {field}: {NUL_LINE}" in text
    assert after == event


async def test_a_one_calendar_tool_call_never_hears_another_calendars_name(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    therapy = factory.calendar(owner, name="Therapy sessions")
    _, work_only = factory.key(owner, calendar_id=work)
    async with connect(server.url, work_only) as client:
        mismatched = await client.call_tool(
            "createCalendarEvent", event_body(calendarId=therapy, calendar="Work")
        )
        existing = await client.call_tool(
            "createCalendarEvent", event_body(calendar="Therapy sessions")
        )
        missing = await client.call_tool("createCalendarEvent", event_body(calendar="Nothing"))
    for result in (mismatched, existing, missing):
        assert result.is_error
        assert "insufficient_scope: " in text_of(result)
        assert "Therapy" not in text_of(result) and "Личное" not in text_of(result)
    assert text_of(existing) == text_of(missing)


def test_a_tool_call_with_a_duplicate_json_key_is_refused_as_a_parse_error(
    api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    arguments = (
        '{"title": "Planning", "startsAt": "2026-03-02T09:00:00Z",'
        ' "endsAt": "2026-03-02T10:00:00Z", "title": "Something else"}'
    )
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call",'
        f' "params": {{"name": "createCalendarEvent", "arguments": {arguments}}}}}'
    )
    headers = {**JSON_RPC_HEADERS, **bearer(secret), "Content-Type": "application/json"}
    answer = api.post("/mcp", content=body.encode(), headers=headers)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == -32700
    assert "'params.arguments.title' is given more than once" in error["message"]
    listed = api.get("/api/v1/calendar/events", headers=bearer(secret)).json()
    assert listed["events"] == []
    # The same call without the duplicate goes through.
    fine = body.replace(', "title": "Something else"', "")
    assert api.post("/mcp", content=fine.encode(), headers=headers).status_code == 200
