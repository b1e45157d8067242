"""Tool arguments a stranger controls are refused like REST input, the same on both databases:
NUL characters anywhere, and errors that would name a calendar outside the key's reach."""

from __future__ import annotations

from tests.mcp_tools.clients import connect, event_args, structured, text_of
from tests.support import Factory, RunningServer

NUL = "\x00"
NUL_LINE = "must not contain NUL characters (U+0000)"


async def test_a_nul_character_in_any_tool_argument_is_a_validation_error(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        event = structured(await client.call_tool("createCalendarEvent", event_args()))
        refused = {
            "title": await client.call_tool("createCalendarEvent", event_args(title=f"a{NUL}")),
            "calendar": await client.call_tool(
                "createCalendarEvent", event_args(calendar=f"Work{NUL}")
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
            "createCalendarEvent", event_args(calendarId=therapy, calendar="Work")
        )
        existing = await client.call_tool(
            "createCalendarEvent", event_args(calendar="Therapy sessions")
        )
        missing = await client.call_tool("createCalendarEvent", event_args(calendar="Nothing"))
    for result in (mismatched, existing, missing):
        assert result.is_error
        assert "insufficient_scope: " in text_of(result)
        assert "Therapy" not in text_of(result) and "Личное" not in text_of(result)
    assert text_of(existing) == text_of(missing)
