"""The change log over MCP, with the official client: every write tool's ``changeId``, its
``dryRun``, and the tools ``listChanges`` and ``undoChange`` with the REST operations' rules."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from calendar_service.access import call_history as history
from calendar_service.platform.db import Database
from tests.mcp_tools.clients import MODES, connect, text_of
from tests.rest.conftest import event_body
from tests.support import Factory, RunningServer


async def result(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = await client.call_tool(tool, arguments)
    assert not answer.is_error, text_of(answer)
    assert answer.structured_content is not None
    return answer.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_each_write_tool_names_its_change_and_undo_change_takes_it_back(
    server: RunningServer, factory: Factory, db: Database, mode: str
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, name="Assistant")
    async with connect(server.url, secret, mode=mode) as client:
        made = await result(client, "createCalendarEvent", event_body())
        ref = {"eventId": made["id"]}
        moved = await result(client, "updateCalendarEvent", {**ref, "title": "Moved"})
        gone = await result(client, "deleteCalendarEvent", ref)
        ids = [made["changeId"], moved["changeId"], gone["changeId"]]
        assert all(i.startswith("chg_") for i in ids) and len(set(ids)) == 3
        listed = await result(client, "listChanges", {})
        assert [c["id"] for c in listed["changes"]] == ids[::-1]
        newest = listed["changes"][0]
        assert (newest["kind"], newest["transport"]) == ("deleted", "mcp")
        assert newest["actor"] == {"type": "key", "id": key_id, "name": "Assistant"}
        calls = db.call(history.list_calls, key_id=key_id)
        deleting = next(c for c in calls if c["operation"] == "deleteCalendarEvent")
        assert newest["requestId"] == deleting["requestId"]
        back = await result(client, "undoChange", {"changeId": gone["changeId"]})
        assert back["undoes"] == gone["changeId"] and back["changeId"] == back["id"]
        assert back["kind"] == "created" and back["after"]["title"] == "Moved"
        again = await client.call_tool("undoChange", {"changeId": gone["changeId"]})
        assert again.is_error and text_of(again).startswith("already_undone:")
        first = await client.call_tool("undoChange", {"changeId": made["changeId"]})
        assert first.is_error and text_of(first).startswith("conflict:")
        assert moved["changeId"] in text_of(first)
        forced = await result(client, "undoChange", {"changeId": made["changeId"], "force": True})
        assert forced["kind"] == "deleted"
        filtered = await result(client, "listChanges", {"eventId": made["id"], "limit": 2})
        assert len(filtered["changes"]) == 2 and "nextPageToken" in filtered
        rest = await result(
            client,
            "listChanges",
            {"eventId": made["id"], "limit": 2, "pageToken": filtered["nextPageToken"]},
        )
        assert len(rest["changes"]) == 2
        last = await result(
            client,
            "listChanges",
            {"eventId": made["id"], "limit": 2, "pageToken": rest["nextPageToken"]},
        )
        assert len(last["changes"]) == 1 and "nextPageToken" not in last


async def test_dry_run_answers_the_change_and_writes_nothing(
    server: RunningServer, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    async with connect(server.url, secret) as client:
        made = await result(client, "createCalendarEvent", event_body())
        ref = {"eventId": made["id"]}
        would = await result(client, "createCalendarEvent", {**event_body(), "dryRun": True})
        assert (would["dryRun"], would["kind"], would["before"]) == (True, "created", None)
        changed = await result(client, "updateCalendarEvent", {**ref, "title": "X", "dryRun": True})
        assert changed["after"]["title"] == "X" and "changeId" not in changed
        deleted = await result(client, "deleteCalendarEvent", {**ref, "dryRun": True})
        assert (deleted["kind"], deleted["after"]) == ("deleted", None)
        undone = await result(client, "undoChange", {"changeId": made["changeId"], "dryRun": True})
        assert (undone["kind"], undone["undoes"]) == ("deleted", made["changeId"])
        bad = await client.call_tool("createCalendarEvent", {**event_body(), "dryRun": "yes"})
        assert bad.is_error and "- dryRun: must be true or false" in text_of(bad)
        listed = await result(client, "listChanges", {})
        assert [c["id"] for c in listed["changes"]] == [made["changeId"]]
        still = await result(client, "getCalendarEvent", ref)
        assert {**still} == {k: v for k, v in made.items() if k != "changeId"}
    calls = db.call(history.list_calls, key_id=key_id)
    dry = [c["operation"] for c in calls if c["dryRun"]]
    assert dry == [  # the refused dryRun "yes" is not one: it never ran
        "undoChange",
        "deleteCalendarEvent",
        "updateCalendarEvent",
        "createCalendarEvent",
    ]


async def test_a_read_key_lists_but_may_not_undo_and_a_free_busy_key_sees_nothing(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    _, writer = factory.key(owner)
    _, reader = factory.key(owner, permission="read")
    _, free_busy = factory.key(owner, permission="freebusy")
    async with connect(server.url, writer) as client:
        made = await result(client, "createCalendarEvent", event_body())
    async with connect(server.url, reader) as client:
        listed = await result(client, "listChanges", {})
        assert [c["id"] for c in listed["changes"]] == [made["changeId"]]
        refused = await client.call_tool("undoChange", {"changeId": made["changeId"]})
        assert refused.is_error and text_of(refused).startswith("insufficient_scope:")
        dry = await client.call_tool("undoChange", {"changeId": made["changeId"], "dryRun": True})
        assert dry.is_error and text_of(dry).startswith("insufficient_scope:")
    async with connect(server.url, free_busy) as client:
        hidden = await client.call_tool("listChanges", {})
        assert hidden.is_error and text_of(hidden).startswith("insufficient_scope:")
    async with connect(server.url, factory.key(factory.owner())[1]) as client:
        other = await client.call_tool("undoChange", {"changeId": made["changeId"]})
        assert other.is_error and text_of(other).startswith("not_found:")
