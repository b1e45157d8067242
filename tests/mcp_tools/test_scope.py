"""Permission and calendar scope, decided per tool call by the core, refused as tool errors."""

from __future__ import annotations

import pytest

from tests.mcp_tools.clients import MODES, connect, structured, text_of, writer_and_reader
from tests.rest.conftest import event_body, with_work
from tests.support import Factory, RunningServer


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_only_key_reads_but_every_write_is_refused_naming_calendar_write(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    writer, reader = writer_and_reader(factory)
    async with connect(server.url, writer) as client:
        event = structured(await client.call_tool("createCalendarEvent", event_body()))
    ref = {"eventId": event["id"]}
    async with connect(server.url, reader, mode=mode) as client:
        assert structured(await client.call_tool("getCalendarEvent", ref)) == event
        listed = structured(await client.call_tool("listCalendarEvents", {}))
        assert [e["id"] for e in listed["events"]] == [event["id"]]
        refusals = [
            await client.call_tool("createCalendarEvent", event_body()),
            await client.call_tool("updateCalendarEvent", {**ref, "title": "Mine now"}),
            await client.call_tool("deleteCalendarEvent", ref),
        ]
        still_there = structured(await client.call_tool("getCalendarEvent", ref))
    for result in refusals:
        assert result.is_error
        text = text_of(result)
        assert "insufficient_scope" in text and "Missing permission: calendar:write." in text
        assert "Traceback" not in text
    assert still_there == event


async def test_a_one_calendar_key_is_confined_to_its_calendar_by_id_and_by_name(
    server: RunningServer, factory: Factory
) -> None:
    owner, work, everything = with_work(factory, time_zone="Europe/Paris")
    _, work_only = factory.key(owner, calendar_id=work)
    async with connect(server.url, everything) as client:
        private = structured(await client.call_tool("createCalendarEvent", event_body()))
    async with connect(server.url, work_only) as client:
        default_target = structured(await client.call_tool("createCalendarEvent", event_body()))
        by_name = structured(
            await client.call_tool("createCalendarEvent", event_body(calendar="Work"))
        )
        other_by_name = await client.call_tool("createCalendarEvent", event_body(calendar="Личное"))
        other_by_id = await client.call_tool(
            "createCalendarEvent", event_body(calendarId=owner.default_calendar_id)
        )
        page = structured(await client.call_tool("listCalendarEvents", {}))
        hidden = await client.call_tool("getCalendarEvent", {"eventId": private["id"]})
        not_deleted = await client.call_tool("deleteCalendarEvent", {"eventId": private["id"]})

    assert default_target["calendarId"] == by_name["calendarId"] == work
    for refused in (other_by_name, other_by_id):
        assert refused.is_error and "insufficient_scope" in text_of(refused)
    assert [c["id"] for c in page["calendars"]] == [work]
    assert {e["id"] for e in page["events"]} == {default_target["id"], by_name["id"]}
    assert page["now"][-6:] in {"+01:00", "+02:00"}  # in the Work calendar's zone
    for result in (hidden, not_deleted):
        assert result.is_error and "not_found" in text_of(result)


async def test_an_unknown_calendar_name_is_an_error_and_creates_nothing(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        result = await client.call_tool("createCalendarEvent", event_body(calendar="Holidays"))
        page = structured(await client.call_tool("listCalendarEvents", {}))
    assert result.is_error and "- calendar: no calendar named 'Holidays'" in text_of(result)
    assert [c["name"] for c in page["calendars"]] == ["Личное"]
    assert page["events"] == []


async def test_the_list_narrows_to_the_calendars_named_in_calendar_ids(
    server: RunningServer, factory: Factory
) -> None:
    """As REST's ``calendarIds`` (issue 24 item 3): ids or names, within the key's reach."""
    owner, work, everything = with_work(factory)
    _, work_only = factory.key(owner, calendar_id=work)
    async with connect(server.url, everything) as client:
        for name in ("Личное", "Work"):
            made = await client.call_tool("createCalendarEvent", event_body(calendar=name))
            assert not made.is_error, text_of(made)
        narrowed = structured(await client.call_tool("listCalendarEvents", {"calendarIds": [work]}))
        by_name = structured(
            await client.call_tool("listCalendarEvents", {"calendarIds": ["Work"]})
        )
        unknown = await client.call_tool("listCalendarEvents", {"calendarIds": ["Holidays"]})
    async with connect(server.url, work_only) as client:
        outside = await client.call_tool("listCalendarEvents", {"calendarIds": ["Личное"]})
    for page in (narrowed, by_name):
        assert [c["name"] for c in page["calendars"]] == ["Work"]
        assert [e["calendarId"] for e in page["events"]] == [work]
    assert unknown.is_error and "Holidays" in text_of(unknown)
    assert outside.is_error and "insufficient_scope" in text_of(outside)
