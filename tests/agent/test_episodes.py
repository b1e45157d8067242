"""Scripted agent episodes: the official MCP client driven as a model drives the tools, one
decision at a time, reading only what the tools answer (ids, free slots, refusals). Each
episode asserts the calendar's final state and prints the characters the "model" read
(``tools/list`` once, then every answer) and wrote (every call's arguments)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from mcp import Client

from calendar_service.calendar.rules import set_rules
from calendar_service.governance.approving import approve
from calendar_service.platform.timeutil import utcnow
from tests.mcp_tools.clients import connect, text_of
from tests.rest.conftest import EVENTS
from tests.support import Factory, RunningServer, bearer

WEEK = {"timeMin": "2027-03-01", "timeMax": "2027-03-06"}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Agent:
    """A model's side of the conversation: each call's arguments written, each answer read."""

    client: Client
    name: str
    read: int = 0
    written: int = 0
    calls: list[str] = field(default_factory=list)

    async def start(self) -> list[str]:
        tools = (await self.client.list_tools()).tools
        self.read += len(_compact([t.model_dump(by_alias=True, exclude_none=True) for t in tools]))
        return [tool.name for tool in tools]

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """(ok, the answer a model reads: the structured result, or the refusal's text)."""
        self.written += len(_compact({"name": tool, "arguments": arguments}))
        self.calls.append(tool)
        result = await self.client.call_tool(tool, arguments)
        text = text_of(result)
        self.read += len(text)
        return (not result.is_error, text if result.is_error else result.structured_content)

    async def must(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        ok, answer = await self.call(tool, arguments)
        assert ok, (tool, answer)
        assert isinstance(answer, dict)
        return answer

    def report(self) -> None:
        print(
            f"\nepisode {self.name}: {len(self.calls)} calls ({', '.join(self.calls)}); "
            f"read {self.read} characters, wrote {self.written}"
        )


@asynccontextmanager
async def agent(server: RunningServer, secret: str, name: str) -> AsyncIterator[Agent]:
    async with connect(server.url, secret) as client:
        acting = Agent(client, name)
        yield acting
        acting.report()


async def test_book_the_first_free_slot_move_it_and_find_it_by_its_words(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    busy = {"title": "Standup", "startsAt": "2027-03-01T09:00", "endsAt": "2027-03-01T10:00"}
    assert api.post(EVENTS, json=busy, headers=bearer(secret)).status_code == 201

    async with agent(server, secret, "book, move, find") as model:
        assert "findFreeTime" in await model.start()
        # "Book 30 minutes with Ana on Monday morning."
        free = await model.must(
            "findFreeTime",
            {
                **WEEK,
                "durationMinutes": 30,
                "workingHours": {"start": "09:00", "end": "12:00"},
                "limit": 3,
            },
        )
        first = free["slots"][0]
        booked = await model.must(
            "createCalendarEvent",
            {"title": "Call with Ana", **first, "ifFree": True},
        )
        # "Move it an hour later."
        later = await model.must(
            "findFreeTime",
            {
                "timeMin": "2027-03-01T11:00",
                "timeMax": "2027-03-01T12:00",
                "durationMinutes": 30,
                "limit": 1,
            },
        )
        # "When is the call with Ana?": found by its words, not by an id asked of the person.
        found = await model.must(
            "searchCalendarEvents", {"query": "call Ana", "timeMin": WEEK["timeMin"]}
        )
        assert [e["id"] for e in found["events"]] == [booked["id"]]
        await model.must("updateCalendarEvent", {"eventId": booked["id"], **later["slots"][0]})

    assert first["startsAt"] == "2027-03-01T10:00:00+01:00"  # after the standup
    shown = api.get(f"{EVENTS}/{booked['id']}", headers=bearer(secret)).json()
    assert (shown["title"], shown["startsAt"]) == ("Call with Ana", "2027-03-01T11:00:00+01:00")
    assert model.read < 40_000


async def test_a_mistake_is_found_in_the_change_log_and_undone(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    _, secret = factory.key(factory.owner())
    kept = {"title": "Dentist", "startsAt": "2027-03-02T09:00", "endsAt": "2027-03-02T10:00"}
    dentist = api.post(EVENTS, json=kept, headers=bearer(secret)).json()

    async with agent(server, secret, "undo a mistake") as model:
        await model.start()
        # The model deletes the wrong event (it was told "cancel the 9 o'clock"), then is told
        # it was a mistake: it finds the change and takes it back.
        gone = await model.must("deleteCalendarEvent", {"eventId": dentist["id"]})
        log = await model.must("listChanges", {"eventId": dentist["id"]})
        assert log["changes"][0]["id"] == gone["changeId"]
        await model.must("undoChange", {"changeId": log["changes"][0]["id"]})
        page = await model.must("listCalendarEvents", {"timeMin": "2027-03-02"})

    assert [e["id"] for e in page["events"]] == [dentist["id"]]
    back = api.get(f"{EVENTS}/{dentist['id']}", headers=bearer(secret)).json()
    unstamped = {k: v for k, v in dentist.items() if k != "updatedAt"}
    assert {k: v for k, v in back.items() if k != "updatedAt"} == unstamped


async def test_a_write_that_waits_for_the_owner_is_not_retried_and_lands_once_approved(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner, approval="all")

    async with agent(server, secret, "meet an approval") as model:
        await model.start()
        answer = await model.must(
            "createCalendarEvent",
            {
                "title": "Board meeting",
                "startsAt": "2027-03-03T14:00",
                "endsAt": "2027-03-03T15:00",
            },
        )
        # The answer tells the model not to retry; it tells the person and stops.
        assert answer["awaitsApproval"] is True and "do not retry" in answer["message"]
        before = await model.must("listCalendarEvents", {"timeMin": "2027-03-03"})
        factory.db.call(
            approve,
            user_id=owner.id,
            proposal_id=answer["proposal"]["id"],
            now=utcnow(),
            transport="settings",
        )
        after = await model.must("listCalendarEvents", {"timeMin": "2027-03-03"})

    assert before["events"] == []
    assert [e["title"] for e in after["events"]] == ["Board meeting"]


async def test_a_model_that_guesses_recovers_from_each_refusal_by_reading_it(
    server: RunningServer, factory: Factory
) -> None:
    # A model's usual first guesses (REST's q, a title for an id, words for a date), each
    # corrected from the refusal's own words alone.
    _, secret = factory.key(factory.owner())
    async with agent(server, secret, "recover from refusals") as model:
        await model.start()
        await model.must(
            "createCalendarEvent",
            {"title": "Dentist", "startsAt": "2027-03-04T09:00", "endsAt": "2027-03-04T09:45"},
        )
        ok, refusal = await model.call("searchCalendarEvents", {"q": "dentist"})
        assert not ok and "go in `query`" in refusal
        ok, refusal = await model.call("getCalendarEvent", {"eventId": "Dentist"})
        assert not ok and "call searchCalendarEvents with query 'Dentist'" in refusal
        found = await model.must(
            "searchCalendarEvents", {"query": "Dentist", "timeMin": "2027-03-01"}
        )
        event = await model.must("getCalendarEvent", {"eventId": found["events"][0]["id"]})
        ok, refusal = await model.call(
            "updateCalendarEvent", {"eventId": event["id"], "start": "next Thursday"}
        )
        assert not ok and "Did you mean `startsAt`?" in refusal
        moved = await model.must(
            "updateCalendarEvent",
            {"eventId": event["id"], "startsAt": "2027-03-11T09:00", "endsAt": "2027-03-11T09:45"},
        )
    assert moved["startsAt"].startswith("2027-03-11T09:00")


async def test_the_first_slot_offered_keeps_the_rules_and_a_refusal_s_suggestion_is_booked(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)
    standup = {"title": "Standup", "startsAt": "2027-03-01T10:00", "endsAt": "2027-03-01T10:30"}
    assert api.post(EVENTS, json=standup, headers=bearer(secret)).status_code == 201
    hours = [{"start": "10:00", "end": "16:00"}]
    rules = {
        "workingHours": {day: hours for day in ("mon", "tue", "wed", "thu", "fri")},
        "bufferMinutes": 15,
        "maxMeetingsPerDay": 2,
    }
    factory.db.call(set_rules, user_id=owner.id, value=rules, now=utcnow())

    async with agent(server, secret, "keep the owner's rules") as model:
        assert "getSchedulingRules" in await model.start()
        # The model plans with the rules before it proposes a time.
        known = await model.must("getSchedulingRules", {})
        assert known["bindsThisKey"] is True and known["rules"]["bufferMinutes"] == 15
        # "Book 30 minutes with Ana on Monday": the first slot offered keeps every rule.
        free = await model.must("findFreeTime", {**WEEK, "durationMinutes": 30, "limit": 3})
        first = free["slots"][0]
        booked = await model.must(
            "createCalendarEvent", {"title": "Call with Ana", **first, "ifFree": True}
        )
        # "And an early breakfast meeting on Monday at 8": refused, naming the rule, with times
        # that keep them all; the model books the first of those instead.
        ok, refusal = await model.call(
            "createCalendarEvent",
            {"title": "Breakfast", "startsAt": "2027-03-01T08:00", "endsAt": "2027-03-01T08:30"},
        )
        assert not ok and "workingHours" in refusal
        suggested = re.findall(r"try (\S+) to (\S+)", refusal)
        assert suggested, refusal
        starts, ends = suggested[0]
        kept = await model.must(
            "createCalendarEvent", {"title": "Breakfast", "startsAt": starts, "endsAt": ends}
        )

    # After the standup (10:00-10:30) and its 15 minutes.
    assert first["startsAt"] == "2027-03-01T10:45:00+01:00"
    assert booked["startsAt"] == first["startsAt"]
    # Monday holds two meetings already (the most the owner allows): the suggestion is later.
    assert kept["startsAt"] >= "2027-03-02T10:00:00+01:00"
    listed = api.get(EVENTS, params=WEEK, headers=bearer(secret)).json()["events"]
    assert sorted(e["title"] for e in listed) == ["Breakfast", "Call with Ana", "Standup"]


async def test_a_scheduling_link_handed_out_is_booked_by_a_guest_and_seen_by_the_model(
    server: RunningServer, factory: Factory, api: httpx.Client
) -> None:
    owner = factory.owner(time_zone="Europe/Berlin")
    _, secret = factory.key(owner)

    async with agent(server, secret, "hand out a scheduling link") as model:
        assert "createSchedulingLink" in await model.start()
        # "Find 30 minutes with Dana next week; she is not on this service."
        link = await model.must(
            "createSchedulingLink",
            {
                "title": "Intro call",
                "durationMinutes": 30,
                "guest": {"name": "Dana Scully", "email": "dana@example.com"},
                **WEEK,
            },
        )
        # Dana opens the link (in her own zone) and books the first slot offered.
        token = str(link["url"]).rsplit("/", 1)[1]
        slots = api.get(
            f"/api/v1/book/{token}/slots", params={"timeZone": "America/New_York"}
        ).json()["slots"]
        guest = {
            "startsAt": slots[0]["startsAt"],
            "name": "Dana Scully",
            "email": "dana@example.com",
        }
        booked = api.post(f"/api/v1/book/{token}", json=guest)
        assert booked.status_code == 201, booked.text
        # Later, the model finds the meeting by its words.
        found = await model.must(
            "searchCalendarEvents", {"query": "intro Dana", "timeMin": WEEK["timeMin"]}
        )

    event_id = booked.json()["booking"]["eventId"]
    assert [e["id"] for e in found["events"]] == [event_id]
    assert slots[0]["startsAt"].endswith("-05:00")  # in the guest's zone
    shown = api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).json()
    assert shown["title"] == "Intro call with Dana Scully"
    assert [a["email"] for a in shown["attendees"]] == ["dana@example.com"]
