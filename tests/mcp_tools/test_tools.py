"""The ten tools over real streamable HTTP, with the official client in both protocol modes."""

from __future__ import annotations

import httpx
import pytest

from tests.mcp_tools.clients import MODES, connect, structured, text_of
from tests.rest.conftest import EVENTS, create_event, event_body
from tests.support import Factory, RunningServer, bearer

TOOLS = {
    "listCalendarEvents",
    "searchCalendarEvents",
    "createCalendarEvent",
    "getCalendarEvent",
    "updateCalendarEvent",
    "deleteCalendarEvent",
    "queryFreeBusy",
    "findFreeTime",
    "listChanges",
    "undoChange",
}


@pytest.mark.parametrize("mode", MODES)
async def test_the_server_lists_ten_tools_with_schemas_and_honest_annotations(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret, mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS

    create = tools["createCalendarEvent"].input_schema
    props = create["properties"]
    assert create["required"] == ["title", "startsAt", "endsAt"]
    # The portable subset (docs/mcp.md): lengths, formats and defaults are the core's to check
    # and the descriptions' to say, not keywords a model provider may refuse.
    assert props["title"] == {"type": "string", "description": "At most 300 characters."}
    assert props["startsAt"]["type"] == props["endsAt"]["type"] == "string"
    assert not {"format", "pattern"} & set(props["startsAt"])
    assert "the key's calendar" in props["calendar"]["description"]
    optional = {
        "calendarId",
        "allDay",
        "description",
        "location",
        "idempotencyKey",
        "recurrence",
        "transparency",
        "ifFree",
    }
    assert optional <= set(props)
    listing = tools["listCalendarEvents"].input_schema["properties"]
    assert set(listing) == {
        "timeMin",
        "timeMax",
        "limit",
        "pageToken",
        "singleEvents",
        "syncToken",
        "calendarIds",
        "detail",
    }
    assert listing["limit"]["maximum"] == 2500
    assert tools["updateCalendarEvent"].input_schema["required"] == ["eventId"]

    def hints(name: str) -> tuple[bool | None, bool | None, bool | None]:
        notes = tools[name].annotations
        assert notes is not None
        return notes.read_only_hint, notes.destructive_hint, notes.idempotent_hint

    assert hints("listCalendarEvents")[0] is True
    assert hints("getCalendarEvent")[0] is True
    assert hints("createCalendarEvent") == (False, False, False)
    assert hints("updateCalendarEvent") == (False, True, True)
    assert hints("deleteCalendarEvent") == (False, True, True)
    assert hints("queryFreeBusy")[0] is True
    assert hints("findFreeTime")[0] is True

    for tool in tools.values():
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.title and tool.description
    for name in ("listCalendarEvents", "createCalendarEvent", "updateCalendarEvent"):
        assert "time zone" in (tools[name].description or "")
    assert "now" in tools["listCalendarEvents"].output_schema["properties"]
    assert "offset" in (tools["createCalendarEvent"].description or "")


@pytest.mark.parametrize("mode", MODES)
async def test_an_event_created_over_mcp_is_seen_by_rest_and_the_reverse(
    server: RunningServer, api: httpx.Client, factory: Factory, mode: str
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret, mode=mode) as client:
        created = structured(
            await client.call_tool("createCalendarEvent", event_body(title="From MCP"))
        )
        assert created["calendar"] == "Личное"
        from_rest = create_event(
            api,
            secret,
            title="From REST",
            startsAt="2026-03-02T11:00:00Z",
            endsAt="2026-03-02T12:00:00Z",
        )
        page = structured(await client.call_tool("listCalendarEvents", {"detail": "full"}))

    assert [e["title"] for e in page["events"]] == ["From MCP", "From REST"]
    assert page["events"][1] == from_rest
    seen_by_rest = api.get(f"{EVENTS}/{created['id']}", headers=bearer(secret))
    assert seen_by_rest.json() == created


async def test_list_results_carry_the_current_time_and_each_calendars_time_zone(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    factory.calendar(owner, name="Work", time_zone="America/New_York")
    _, secret = factory.key(owner, permission="read")
    async with connect(server.url, secret) as client:
        page = structured(await client.call_tool("listCalendarEvents", {}))
    assert [(c["name"], c["timeZone"]) for c in page["calendars"]] == [
        ("Личное", "Europe/Berlin"),
        ("Work", "America/New_York"),
    ]
    # In the default calendar's zone, with its offset (CET or CEST).
    assert page["now"][-6:] in {"+01:00", "+02:00"}
    assert page["events"] == []
    assert "nextPageToken" not in page


async def test_a_date_time_without_an_offset_is_read_in_the_calendars_time_zone(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    async with connect(server.url, secret) as client:
        event = structured(
            await client.call_tool(
                "createCalendarEvent",
                event_body(startsAt="2026-03-02T09:30:00", endsAt="2026-03-02T10:00"),
            )
        )
    assert (event["startsAt"], event["endsAt"]) == (
        "2026-03-02T09:30:00+01:00",
        "2026-03-02T10:00:00+01:00",
    )


async def test_validation_errors_name_every_bad_field(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        result = await client.call_tool(
            "createCalendarEvent",
            {
                "title": "x" * 301,
                "startsAt": "tomorrow at nine",
                "endsAt": 5,
                "startAt": "2026-03-02T09:00:00Z",
                "idempotencyKey": 7,
            },
        )
        listing = await client.call_tool("listCalendarEvents", {"limit": 0, "timeMin": "soon"})
    assert result.is_error
    text = text_of(result)
    assert text.count("validation_error") == 1
    for line in (
        "- title: must be at most 300 characters",
        "- startsAt: must be an RFC 3339 date-time",
        "- endsAt: must be a string",
        "- startAt: is not an argument of createCalendarEvent. Did you mean `startsAt`?",
        "- idempotencyKey: must be a string",
    ):
        assert line in text
    assert "Traceback" not in text
    assert listing.is_error
    assert "- limit: must be a whole number from 1 to 2500" in text_of(listing)
    assert "- timeMin:" in text_of(listing)


async def test_get_update_and_delete_work_on_an_event_and_then_it_is_gone(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        event = structured(
            await client.call_tool(
                "createCalendarEvent", event_body(description="Agenda", location="Room 1")
            )
        )
        ref = {"eventId": event["id"]}
        assert structured(await client.call_tool("getCalendarEvent", ref)) == event
        updated = structured(
            await client.call_tool(
                "updateCalendarEvent", {**ref, "title": "Replanning", "description": None}
            )
        )
        assert (updated["title"], updated["description"], updated["location"]) == (
            "Replanning",
            None,
            "Room 1",
        )
        deleted = structured(await client.call_tool("deleteCalendarEvent", ref))
        assert deleted == {"deleted": True, "event": updated}
        again = await client.call_tool("getCalendarEvent", ref)
        missing = await client.call_tool("updateCalendarEvent", {"title": "No id"})
    assert again.is_error and "not_found: No event" in text_of(again)
    assert missing.is_error and "- eventId: is required" in text_of(missing)


async def test_an_idempotency_key_makes_a_retried_create_return_the_first_event(
    server: RunningServer, api: httpx.Client, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    args = event_body(idempotencyKey="retry-1")
    async with connect(server.url, secret) as client:
        first = structured(await client.call_tool("createCalendarEvent", args))
        second = structured(await client.call_tool("createCalendarEvent", args))
        other = await client.call_tool("createCalendarEvent", {**args, "title": "Other"})
    assert second == first
    assert other.is_error and "idempotency_key_reused" in text_of(other)
    listed = api.get(EVENTS, headers=bearer(secret)).json()
    assert [e["id"] for e in listed["events"]] == [first["id"]]


async def test_a_long_list_comes_in_pages_linked_by_next_page_token(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        for hour in (9, 10, 11):
            start, end = f"2026-03-02T{hour:02}:00:00Z", f"2026-03-02T{hour:02}:30:00Z"
            await client.call_tool("createCalendarEvent", event_body(startsAt=start, endsAt=end))
        window = {"timeMin": "2026-03-02", "timeMax": "2026-03-03", "limit": 2}
        first = structured(await client.call_tool("listCalendarEvents", window))
        token = first["nextPageToken"]
        second = structured(
            await client.call_tool("listCalendarEvents", {**window, "pageToken": token})
        )
    assert [e["startsAt"][11:16] for e in first["events"] + second["events"]] == [
        "09:00",
        "10:00",
        "11:00",
    ]
    assert "nextPageToken" not in second
