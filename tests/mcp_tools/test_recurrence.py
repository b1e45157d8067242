"""Recurring events over MCP with the official client and a real server: the published schemas,
a weekly series made, listed, changed and deleted by occurrence and series ids (the core's
behaviour, as tests/rest/test_recurrence_changes.py checks it over REST), bad rules, and the
calendar scope of a one-calendar key."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from mcp import Client

from tests.mcp_tools.clients import MODES, connect, structured, text_of
from tests.support import Factory, Owner, RunningServer

BERLIN = "Europe/Berlin"
MARCH = {"timeMin": "2026-03-01", "timeMax": "2026-04-01"}
# Every Monday at 10:00 Berlin from Monday 2 March 2026 (CET; CEST from 29 March).
MONDAYS = {
    "title": "Stand-up",
    "startsAt": "2026-03-02T10:00",
    "endsAt": "2026-03-02T10:30",
    "recurrence": ["RRULE:FREQ=WEEKLY;BYDAY=MO"],
}


@dataclass
class Cal:
    owner: Owner
    id: str
    secret: str


def calendar_in(factory: Factory, owner: Owner | None = None, permission: str = "write") -> Cal:
    """A Berlin calendar and a key for it alone."""
    owner = owner or factory.owner()
    calendar_id = factory.calendar(owner, time_zone=BERLIN)
    _, secret = factory.key(owner, calendar_id=calendar_id, permission=permission)
    return Cal(owner, calendar_id, secret)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return structured(await client.call_tool(tool, arguments))


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The error text of a call that must fail."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text_of(result)
    return text_of(result)


async def listed(client: Client, **arguments: Any) -> list[dict[str, Any]]:
    """Every event of the window, following the page tokens."""
    events: list[dict[str, Any]] = []
    query = {"detail": "full", **arguments}  # every field, to compare with REST and get
    for _ in range(1_000):
        page = await call(client, "listCalendarEvents", query)
        events.extend(page["events"])
        if "nextPageToken" not in page:
            return events
        query["pageToken"] = page["nextPageToken"]
    raise AssertionError("the pages never ended")


async def update(client: Client, event_id: str, start: str, **fields: Any) -> dict[str, Any]:
    """``event_id`` moved to ``start`` (local time, half an hour long), with ``fields``."""
    end = (datetime.fromisoformat(start) + timedelta(minutes=30)).isoformat(timespec="minutes")
    arguments = {"eventId": event_id, "startsAt": start, "endsAt": end, **fields}
    return await call(client, "updateCalendarEvent", arguments)


def starts(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["startsAt"], e["title"]) for e in events]


async def test_the_published_schemas_and_descriptions_carry_recurrence_and_scope(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    async with connect(server.url, secret) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    def props(name: str) -> dict[str, Any]:
        return dict(tools[name].input_schema["properties"])

    lines = {"type": "string"}
    create_rule = props("createCalendarEvent")["recurrence"]
    assert (create_rule["type"], create_rule["items"]) == ("array", lines)
    # null turns a series into a single event: the update keeps the null branch.
    update_rule = props("updateCalendarEvent")["recurrence"]["anyOf"]
    assert update_rule[0]["items"] == lines and update_rule[1] == {"type": "null"}
    for name in ("updateCalendarEvent", "deleteCalendarEvent"):
        scope = props(name)["scope"]
        assert (scope["type"], scope["enum"]) == ("string", ["this", "following", "all"])
        assert "this (default)" in scope["description"]
        assert tools[name].input_schema["required"] == ["eventId"]
    assert set(props("getCalendarEvent")) == {"eventId"}
    single = props("listCalendarEvents")["singleEvents"]
    assert single["type"] == "boolean" and "Default true" in single["description"]
    for name in ("getCalendarEvent", "updateCalendarEvent", "deleteCalendarEvent"):
        assert "<seriesId>_<start>" in props(name)["eventId"]["description"]
    output = tools["getCalendarEvent"].output_schema
    assert output is not None
    assert {"recurrence", "recurringEventId", "originalStartsAt"} <= set(output["properties"])

    # What a model is told: how to ask for the usual series, and the three ways to cancel.
    create = tools["createCalendarEvent"].description or ""
    for words in (
        '"RRULE:FREQ=WEEKLY;BYDAY=MO"], startsAt a Monday 10:00',
        "INTERVAL=2;BYDAY=TU",
        "COUNT=10",
        "UNTIL=",
        "never both",
        "calendar's time zone",
    ):
        assert words in create, words
    delete = tools["deleteCalendarEvent"].description or ""
    for words in ("cancel one meeting", 'scope "this", the default', '"following"', '"all"'):
        assert words in delete, words
    assert "series' id" in delete
    assert 'scope "following"' in (tools["updateCalendarEvent"].description or "")
    assert "recurringEventId" in (tools["listCalendarEvents"].description or "")


@pytest.mark.parametrize("mode", MODES)
async def test_a_weekly_series_listed_moved_cancelled_split_and_deleted(
    server: RunningServer, factory: Factory, mode: str
) -> None:
    cal = calendar_in(factory)
    async with connect(server.url, cal.secret, mode=mode) as client:
        series = await call(client, "createCalendarEvent", {**MONDAYS, "calendarId": cal.id})
        assert series["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
        assert series["startsAt"] == "2026-03-02T10:00:00+01:00"
        sid = series["id"]
        assert await call(client, "getCalendarEvent", {"eventId": sid}) == series

        march = await listed(client, **MARCH)
        assert [e["id"] for e in march] == [
            f"{sid}_{day}" for day in ("20260302T090000Z", "20260309T090000Z", "20260316T090000Z")
        ] + [f"{sid}_{day}" for day in ("20260323T090000Z", "20260330T080000Z")]
        assert {(e["recurringEventId"], e["startsAt"][11:]) for e in march} == {
            (sid, "10:00:00+01:00"),
            (sid, "10:00:00+02:00"),  # 30 March: summer time, still 10:00 in Berlin
        }
        assert "recurrence" not in march[0]
        assert await call(client, "getCalendarEvent", {"eventId": march[1]["id"]}) == march[1]

        # Move one meeting: it keeps its id and original start.
        moved = await update(client, march[1]["id"], "2026-03-10T14:00", title="Moved")
        assert (moved["id"], moved["originalStartsAt"], moved["startsAt"]) == (
            march[1]["id"],
            "2026-03-09T10:00:00+01:00",
            "2026-03-10T14:00:00+01:00",
        )

        # Cancel one meeting: scope this is the default.
        cancelled = await call(client, "deleteCalendarEvent", {"eventId": march[2]["id"]})
        assert cancelled == {"deleted": True, "event": march[2]}
        gone = await refused(client, "getCalendarEvent", {"eventId": march[2]["id"]})
        assert gone.startswith("not_found:")

        # This and following: from 23 March at 11:00, a new series; the old one ends before.
        new = await update(client, march[3]["id"], "2026-03-23T11:00", scope="following")
        assert new["id"] != sid and new["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO"]
        old = await call(client, "getCalendarEvent", {"eventId": sid})
        assert old["recurrence"] == ["RRULE:FREQ=WEEKLY;BYDAY=MO;UNTIL=20260323T085959Z"]
        assert starts(await listed(client, **MARCH)) == [
            ("2026-03-02T10:00:00+01:00", "Stand-up"),
            ("2026-03-10T14:00:00+01:00", "Moved"),
            ("2026-03-23T11:00:00+01:00", "Stand-up"),
            ("2026-03-30T11:00:00+02:00", "Stand-up"),
        ]
        assert [e["id"] for e in await listed(client, singleEvents=False, **MARCH)] == [
            sid,
            moved["id"],  # a changed occurrence is listed with its series
            new["id"],
        ]

        # The whole series: scope all from any of its occurrence ids, or the series' id.
        whole = await call(
            client, "deleteCalendarEvent", {"eventId": march[0]["id"], "scope": "all"}
        )
        assert whole == {"deleted": True, "event": old}
        assert (await call(client, "deleteCalendarEvent", {"eventId": new["id"]}))["event"] == new
        assert await listed(client, **MARCH) == []
        for event_id in (sid, moved["id"], new["id"]):
            assert (await refused(client, "getCalendarEvent", {"eventId": event_id})).startswith(
                "not_found:"
            )


async def test_every_other_tuesday_with_a_count_and_this_and_following_cancelled(
    server: RunningServer, factory: Factory
) -> None:
    cal = calendar_in(factory)
    async with connect(server.url, cal.secret) as client:
        series = await call(
            client,
            "createCalendarEvent",
            {
                "title": "1:1",
                "startsAt": "2026-03-03T15:00:00+01:00",
                "endsAt": "2026-03-03T15:30:00+01:00",
                "recurrence": ["RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;COUNT=4"],
            },
        )
        occurrences = await listed(client, timeMin="2026-03-01")
        assert [e["startsAt"][:10] for e in occurrences] == [
            "2026-03-03",
            "2026-03-17",
            "2026-03-31",
            "2026-04-14",
        ]
        ended = await call(
            client,
            "deleteCalendarEvent",
            {"eventId": occurrences[2]["id"], "scope": "following"},
        )
        assert ended["event"]["id"] == series["id"]
        # UNTIL: the 31 March one's start (15:00 CEST) less a second.
        until = "UNTIL=20260331T125959Z"
        assert ended["event"]["recurrence"] == [f"RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;{until}"]
        left = await listed(client, timeMin="2026-03-01")
        assert [e["id"] for e in left] == [e["id"] for e in occurrences[:2]]


async def test_an_endless_series_without_timemax_pages_ten_at_a_time(
    server: RunningServer, factory: Factory
) -> None:
    cal = calendar_in(factory)
    async with connect(server.url, cal.secret) as client:
        await call(
            client,
            "createCalendarEvent",
            {
                "title": "Daily",
                "startsAt": "2026-03-02T08:00:00+01:00",
                "endsAt": "2026-03-02T08:15:00+01:00",
                # The description's way to skip one: the occurrence's start in UTC.
                "recurrence": ["RRULE:FREQ=DAILY", "EXDATE:20260303T070000Z"],
            },
        )
        days: list[str] = []
        query: dict[str, Any] = {"timeMin": "2026-03-01", "limit": 10}
        for _ in range(3):
            page = await call(client, "listCalendarEvents", query)
            assert len(page["events"]) == 10 and "nextPageToken" in page
            days += [e["startsAt"][:10] for e in page["events"]]
            query["pageToken"] = page["nextPageToken"]
    every_day = [str(date(2026, 3, 2) + timedelta(days=n)) for n in range(31)]
    assert days == [day for day in every_day if day != "2026-03-03"]


async def test_bad_rules_scopes_and_flags_are_tool_errors_naming_the_argument(
    server: RunningServer, factory: Factory
) -> None:
    cal = calendar_in(factory)
    async with connect(server.url, cal.secret) as client:
        for rule in (
            ["RRULE:FREQ=HOURLY"],
            ["RRULE:FREQ=WEEKLY;COUNT=3;UNTIL=20261231T000000Z"],
            ["RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=31"],  # never occurs
            ["RRULE:FREQ=WEEKLY;BYDAY=XX"],
            "RRULE:FREQ=WEEKLY",  # not an array
        ):
            text = await refused(client, "createCalendarEvent", {**MONDAYS, "recurrence": rule})
            assert text.startswith("validation_error:"), text
            assert "\n- recurrence: " in text, text
        assert await listed(client) == []  # nothing was created

        series = await call(client, "createCalendarEvent", MONDAYS)
        one = f"{series['id']}_20260309T090000Z"
        text = await refused(client, "deleteCalendarEvent", {"eventId": one, "scope": "some"})
        assert "\n- scope: must be this, following or all" in text
        text = await refused(
            client, "updateCalendarEvent", {"eventId": one, "scope": 1, "title": 5}
        )
        assert "\n- scope: " in text and "\n- title: " in text
        text = await refused(
            client, "updateCalendarEvent", {"eventId": one, "recurrence": ["RRULE:FREQ=DAILY"]}
        )
        assert "\n- recurrence: " in text
        text = await refused(client, "listCalendarEvents", {"singleEvents": "false"})
        assert "\n- singleEvents: " in text
        assert (await call(client, "getCalendarEvent", {"eventId": one}))["title"] == "Stand-up"


async def test_a_one_calendar_key_reaches_no_series_or_occurrence_of_another_calendar(
    server: RunningServer, factory: Factory
) -> None:
    mine = calendar_in(factory)
    other = calendar_in(factory, owner=mine.owner)
    reader = calendar_in(factory, owner=mine.owner, permission="read")
    async with connect(server.url, other.secret) as client:
        series = await call(client, "createCalendarEvent", MONDAYS)
        changed, cancelled = f"{series['id']}_20260309T090000Z", f"{series['id']}_20260316T090000Z"
        await call(client, "updateCalendarEvent", {"eventId": changed, "title": "Changed"})
        await call(client, "deleteCalendarEvent", {"eventId": cancelled})
    ids = (series["id"], changed, cancelled, f"{series['id']}_20260323T090000Z")

    for key in (mine.secret, reader.secret):
        async with connect(server.url, key) as client:
            for event_id in ids:
                calls: list[tuple[str, dict[str, Any]]] = [
                    ("getCalendarEvent", {"eventId": event_id}),
                    ("updateCalendarEvent", {"eventId": event_id, "title": "x", "scope": "all"}),
                ]
                calls += [
                    ("deleteCalendarEvent", {"eventId": event_id, "scope": scope})
                    for scope in ("this", "following", "all")
                ]
                for tool, arguments in calls:
                    text = await refused(client, tool, arguments)
                    # A read-only key is refused a change before any id is looked at.
                    writes = key == reader.secret and tool != "getCalendarEvent"
                    expected = "insufficient_scope:" if writes else "not_found:"
                    assert text.startswith(expected), (tool, text)
            assert await listed(client, **MARCH) == []

    async with connect(server.url, other.secret) as client:
        assert [e["title"] for e in await listed(client, **MARCH)] == [
            "Stand-up",
            "Changed",
            "Stand-up",
            "Stand-up",
        ]
