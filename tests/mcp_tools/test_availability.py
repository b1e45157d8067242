"""Availability over MCP with the official client and a real server, in both protocol modes:
the two tools' schemas and descriptions, busy times merged across single events, all-day events
and series, transparent events free, slots within working hours on a DST-change day, two
calendars intersected, a free/busy key refused every other tool, bad input named, and ifFree's
conflict."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.mcp_tools.clients import MODES, connect, structured, text_of
from tests.support import Factory, RunningServer

BERLIN = "Europe/Berlin"


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return structured(await client.call_tool(tool, arguments))


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    return text_of(result)


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_publish_their_schemas_and_say_when_to_use_them(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    free_time = tools["findFreeTime"]
    assert free_time.input_schema["required"] == ["timeMin", "timeMax", "durationMinutes"]
    props = free_time.input_schema["properties"]
    assert props["durationMinutes"]["maximum"] == 1440
    assert props["limit"]["maximum"] == 100
    assert props["workingHours"]["properties"]["days"]["items"]["enum"][0] == "MO"
    busy = tools["queryFreeBusy"]
    assert busy.input_schema["required"] == ["timeMin", "timeMax"]
    for tool in (free_time, busy):
        assert "instead of listing events" in (tool.description or "")
        assert tool.output_schema is not None
    assert "findFreeTime" in (tools["listCalendarEvents"].description or "")


@pytest.mark.parametrize("mode", MODES)
async def test_busy_time_and_free_slots_over_mcp(server: Any, factory: Factory, mode: str) -> None:
    owner = factory.owner(time_zone=BERLIN)
    second = factory.calendar(owner, name="Team", time_zone=BERLIN)
    _, writer = factory.key(owner)
    _, free_busy_key = factory.key(owner, permission="freebusy")
    async with connect(server.url, writer, mode=mode) as client:
        for body in (
            {"title": "a", "startsAt": "2026-03-29T09:00", "endsAt": "2026-03-29T10:00"},
            {"title": "b", "startsAt": "2026-03-29T09:30", "endsAt": "2026-03-29T10:30"},
            {
                "title": "free",
                "startsAt": "2026-03-29T11:00",
                "endsAt": "2026-03-29T12:00",
                "transparency": "transparent",
            },
            {"title": "trip", "startsAt": "2026-03-31", "endsAt": "2026-03-31", "allDay": True},
            {
                "title": "daily",
                "startsAt": "2026-03-28T13:00",
                "endsAt": "2026-03-28T14:00",
                "recurrence": ["RRULE:FREQ=DAILY;COUNT=3"],
            },
            {
                "title": "team",
                "calendarId": second,
                "startsAt": "2026-03-29T15:00",
                "endsAt": "2026-03-29T16:00",
            },
        ):
            await call(client, "createCalendarEvent", body)
        conflict = await refused(
            client,
            "createCalendarEvent",
            {
                "title": "x",
                "startsAt": "2026-03-29T10:00",
                "endsAt": "2026-03-29T10:15",
                "ifFree": True,
            },
        )
        assert conflict.startswith("conflict:")
        assert "2026-03-29T09:30:00+02:00 to 2026-03-29T10:30:00+02:00: b" in conflict

    async with connect(server.url, free_busy_key, mode=mode) as client:
        answer = await call(
            client, "queryFreeBusy", {"timeMin": "2026-03-29", "timeMax": "2026-04-01"}
        )
        by_id = {c["id"]: c["busy"] for c in answer["calendars"]}
        assert by_id[owner.default_calendar_id] == [
            {"startsAt": "2026-03-29T09:00:00+02:00", "endsAt": "2026-03-29T10:30:00+02:00"},
            {"startsAt": "2026-03-29T13:00:00+02:00", "endsAt": "2026-03-29T14:00:00+02:00"},
            {"startsAt": "2026-03-30T13:00:00+02:00", "endsAt": "2026-03-30T14:00:00+02:00"},
            {"startsAt": "2026-03-31T00:00:00+02:00", "endsAt": "2026-04-01T00:00:00+02:00"},
        ]
        assert "title" not in str(answer) and "daily" not in str(answer)
        slots = await call(
            client,
            "findFreeTime",
            {
                "timeMin": "2026-03-29",
                "timeMax": "2026-03-30",
                "durationMinutes": 60,
                "calendarIds": [owner.default_calendar_id, second],
                "workingHours": {"start": "09:00", "end": "17:00", "days": ["SU"]},
                "limit": 100,
            },
        )
        starts = [s["startsAt"][11:16] for s in slots["slots"]]
        # Sunday 29 March (clocks went forward at 02:00): free 10:30-13:00, 14:00-15:00 and
        # 16:00-17:00; the transparent 11:00 event is free time.
        assert starts == [
            "10:30",
            "10:45",
            "11:00",
            "11:15",
            "11:30",
            "11:45",
            "12:00",
            "14:00",
            "16:00",
        ]
        assert all(s["startsAt"].endswith("+02:00") for s in slots["slots"])
        for tool, arguments in (
            ("listCalendarEvents", {}),
            (
                "createCalendarEvent",
                {"title": "x", "startsAt": "2026-03-29T10:00", "endsAt": "2026-03-29T11:00"},
            ),
            ("getCalendarEvent", {"eventId": "ev_x"}),
        ):
            text = await refused(client, tool, arguments)
            assert text.startswith("insufficient_scope:"), text
        bad = await refused(
            client,
            "findFreeTime",
            {"timeMin": "2026-03-29", "timeMax": "2026-01-01", "durationMinutes": 0},
        )
        assert "- timeMax:" in bad and "- durationMinutes:" in bad
