"""``searchCalendarEvents`` with the official client: it answers as ``listCalendarEvents``
does, within the key's reach; a free/busy key cannot call it; bad queries are tool errors on
``query`` (an empty one refused as REST refuses an empty ``q``); REST's ``q`` given instead is
refused as what it is."""

from __future__ import annotations

import pytest

from tests.mcp_tools.clients import MODES, connect, structured, text_of
from tests.rest.conftest import event_body, with_work
from tests.support import Factory, RunningServer

WINDOW = {"timeMin": "2026-03-01", "timeMax": "2026-04-01"}


@pytest.mark.parametrize("mode", MODES)
async def test_search_finds_an_event_by_a_prefix_and_answers_as_the_list_does(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret, mode=mode) as client:
        dentist = structured(
            await client.call_tool("createCalendarEvent", event_body(title="Dentist"))
        )
        series = structured(
            await client.call_tool(
                "createCalendarEvent",
                event_body(title="Réunion d'équipe", recurrence=["RRULE:FREQ=WEEKLY;COUNT=2"]),
            )
        )
        found = structured(
            await client.call_tool("searchCalendarEvents", {"query": "denti", **WINDOW})
        )
        listed = structured(await client.call_tool("listCalendarEvents", WINDOW))
        meetings = structured(
            await client.call_tool("searchCalendarEvents", {"query": "reunion EQUIPE", **WINDOW})
        )
        paged = structured(
            await client.call_tool(
                "searchCalendarEvents", {"query": "equipe", "limit": 1, **WINDOW}
            )
        )
        rest = structured(
            await client.call_tool(
                "searchCalendarEvents",
                {"query": "equipe", "limit": 1, "pageToken": paged["nextPageToken"], **WINDOW},
            )
        )
        upcoming = structured(await client.call_tool("searchCalendarEvents", {"query": "dentist"}))
    assert [e["id"] for e in found["events"]] == [dentist["id"]]
    assert found["events"][0] in listed["events"]
    assert found["calendars"] == listed["calendars"] and found["now"]
    assert [e["recurringEventId"] for e in meetings["events"]] == [series["id"]] * 2
    assert [e["id"] for e in paged["events"] + rest["events"]] == [
        e["id"] for e in meetings["events"]
    ]
    assert upcoming["events"] == []  # March 2026 is past: without timeMin, from now on


async def test_a_one_calendar_key_finds_only_its_calendar_and_a_free_busy_key_nothing(
    server: RunningServer, factory: Factory
) -> None:
    owner, work, everything = with_work(factory)
    _, work_only = factory.key(owner, permission="read", calendar_id=work)
    _, free_busy = factory.key(owner, permission="freebusy")
    async with connect(server.url, everything) as client:
        await client.call_tool("createCalendarEvent", event_body(title="Offsite", calendarId=work))
        await client.call_tool("createCalendarEvent", event_body(title="Offsite too"))
    async with connect(server.url, work_only) as client:
        confined = structured(
            await client.call_tool("searchCalendarEvents", {"query": "offsite", **WINDOW})
        )
    async with connect(server.url, free_busy) as client:
        refused = await client.call_tool("searchCalendarEvents", {"query": "offsite", **WINDOW})
    assert [e["title"] for e in confined["events"]] == ["Offsite"]
    assert refused.is_error and "insufficient_scope" in text_of(refused)


async def test_a_query_too_long_empty_or_missing_is_an_error_on_query(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    async with connect(server.url, secret) as client:
        results = [
            await client.call_tool("searchCalendarEvents", {"query": "a" * 501}),
            await client.call_tool("searchCalendarEvents", {"query": ""}),
            await client.call_tool("searchCalendarEvents", {}),
        ]
        hostile = structured(
            await client.call_tool("searchCalendarEvents", {"query": '"*" NEAR( OR -:', **WINDOW})
        )
    for result in results:
        assert result.is_error, text_of(result)
        assert "query" in text_of(result) and "Traceback" not in text_of(result)
    assert hostile["events"] == []


async def test_an_empty_or_blank_query_is_refused_as_rest_refuses_an_empty_q(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    async with connect(server.url, secret) as client:
        results = [
            await client.call_tool("searchCalendarEvents", {"query": q, **WINDOW})
            for q in ("", "   ")
        ]
    for result in results:
        assert result.is_error, text_of(result)
        lines = text_of(result).splitlines()
        assert lines[0].startswith("validation_error: ")
        # The core's refusal of an empty q, named as the tool names it.
        assert lines[1:] == ["- query: must not be empty: give the words to find"]


async def test_q_instead_of_query_is_refused_naming_q_and_pointing_to_query(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner(), permission="read")
    async with connect(server.url, secret) as client:
        result = await client.call_tool("searchCalendarEvents", {"q": "dentist", **WINDOW})
        long_query = await client.call_tool("searchCalendarEvents", {"query": "a" * 501})
    assert result.is_error, text_of(result)
    lines = text_of(result).splitlines()
    assert "- q: is not an argument of this tool: the words to find go in `query`" in lines
    assert not any(line.startswith("- query: is not") for line in lines), lines
    assert all(line.startswith(("validation_error", "- q:", "- query: ")) for line in lines)
    # The core's own errors about q are still about query.
    assert long_query.is_error and "- query: must be at most 500" in text_of(long_query)
    assert "- q:" not in text_of(long_query)
