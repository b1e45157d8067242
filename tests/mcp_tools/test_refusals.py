"""Refusals that teach: each tool sent the mistakes models make, and what it answers. Every
refusal names the argument as the caller sent it, says what is accepted, and where a retry can
succeed says how."""

from __future__ import annotations

from typing import Any

from tests.mcp_tools.clients import connect, structured, text_of
from tests.support import Factory, RunningServer

WINDOW = {"timeMin": "2026-03-02", "timeMax": "2026-03-05"}
LINK = {"title": "Intro call", "timeMin": "2027-03-02", "timeMax": "2027-03-05"}  # ahead
TIMES = {"startsAt": "2026-03-02T09:00", "endsAt": "2026-03-02T10:00"}
TAKES_A_DATE = "Work out words such as 'next Monday'"
FIND_BY_WORDS = "call searchCalendarEvents with query 'Dentist', then retry with the id found"

# (tool, arguments, what the answer says: each a line's start or a phrase in it)
MISTAKES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    # REST's name for an argument: named as sent, pointed to the tool's.
    (
        "searchCalendarEvents",
        {"q": "dentist"},
        ("- q: is not an argument of this tool: the words to find go in `query`",),
    ),
    # An empty query.
    ("searchCalendarEvents", {"query": ""}, ("- query: must not be empty: give the words",)),
    ("searchCalendarEvents", {"query": "   "}, ("- query: must not be empty",)),
    ("searchCalendarEvents", {}, ("- query: is required: The words to find",)),
    # Words where a date goes.
    ("listCalendarEvents", {"timeMin": "next Monday"}, ("- timeMin: must be", TAKES_A_DATE)),
    (
        "createCalendarEvent",
        {"title": "Dentist", "startsAt": "tomorrow 9am", "endsAt": "2026-03-02T10:00"},
        ("- startsAt: must be an RFC 3339 date-time", TAKES_A_DATE),
    ),
    ("queryFreeBusy", {"timeMin": "monday", "timeMax": "friday"}, ("- timeMax: must be",)),
    ("listChanges", {"since": "yesterday"}, ("- since: must be", TAKES_A_DATE)),
    # Unknown arguments: the closest one the tool takes, and all of them.
    (
        "createCalendarEvent",
        {"title": "Dentist", "start": "2026-03-02T09:00", "end": "2026-03-02T10:00"},
        (
            "- start: is not an argument of createCalendarEvent. Did you mean `startsAt`?",
            "- end: is not an argument of createCalendarEvent. Did you mean `endsAt`?",
            "It takes: title, startsAt, endsAt,",
            "- startsAt: is required: RFC 3339 date-time",
        ),
    ),
    (
        "findFreeTime",
        {**WINDOW, "duration": 30},
        ("- duration: is not an argument of findFreeTime. Did you mean `durationMinutes`?",),
    ),
    ("listCalendarEvents", {"start": "2026-03-02"}, ("- start: is not an argument", "timeMin")),
    ("getCalendarEvent", {"id": "ev_1"}, ("- id: is not an argument", "It takes: eventId.")),
    ("undoChange", {"id": "chg_1"}, ("- changeId: is required: The change's id",)),
    # A name where an id goes: which tool finds the id.
    ("getCalendarEvent", {"eventId": "Dentist"}, ("not_found: No event 'Dentist'", FIND_BY_WORDS)),
    (
        "updateCalendarEvent",
        {"eventId": "Dentist", "title": "Dentist (moved)"},
        (FIND_BY_WORDS,),
    ),
    ("deleteCalendarEvent", {"eventId": "Dentist"}, (FIND_BY_WORDS,)),
    (
        "undoChange",
        {"changeId": "the last one"},
        ("not_found: No change 'the last one'", "listChanges lists the changes"),
    ),
    # A name where a calendar's id goes: the name argument exists.
    ("createCalendarEvent", {"title": "Dentist", **TIMES, "calendarId": "Work"}, ("calendarId",)),
    # Wrong types: named, with what is accepted.
    (
        "findFreeTime",
        {**WINDOW, "durationMinutes": "30"},
        ("- durationMinutes: must be a whole number from 1 to 1440",),
    ),
    (
        "createCalendarEvent",
        {"title": "Dentist", **TIMES, "timeZone": "CET+1"},
        ("- timeZone: must be an IANA time zone such as America/New_York",),
    ),
    # The owner's rules and scheduling links.
    (
        "getSchedulingRules",
        {"user": "me"},
        ("- user: is not an argument of getSchedulingRules, which takes none: send {}.",),
    ),
    (
        "createSchedulingLink",
        {**LINK, "duration": 30},
        (
            "- duration: is not an argument of createSchedulingLink. Did you mean "
            "`durationMinutes`?",
        ),
    ),
    (
        "createSchedulingLink",
        {**LINK, "durationMinutes": 0},
        ("- durationMinutes: must be a whole",),
    ),
    (
        "createSchedulingLink",
        {**LINK, "durationMinutes": 30, "uses": 500},
        ("- uses: must be a whole number from 1 to 100",),
    ),
    (
        "createSchedulingLink",
        {**LINK, "durationMinutes": 30, "timeMin": "next Monday"},
        ("- timeMin: must be", TAKES_A_DATE),
    ),
]


async def test_each_tools_common_mistakes_are_refused_saying_how_to_retry(
    server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    answers = {}
    async with connect(server.url, secret) as client:
        for tool, arguments, _ in MISTAKES:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            answers[(tool, repr(arguments))] = text_of(result)
    missing = {
        key: [phrase for phrase in phrases if phrase not in answers[key]]
        for key, phrases in (((t, repr(a)), p) for t, a, p in MISTAKES)
    }
    assert missing == {key: [] for key in missing}, answers
    assert not any("Traceback" in text for text in answers.values())


async def test_a_date_time_without_a_zone_is_taken_in_the_calendars_zone_and_answered_with_it(
    server: RunningServer, factory: Factory
) -> None:
    # Not a mistake here: read in the target calendar's time zone, and the answer shows the
    # offset it was read with, so a model sees what it booked.
    _, secret = factory.key(factory.owner(time_zone="Europe/Berlin"))
    async with connect(server.url, secret) as client:
        created = structured(
            await client.call_tool("createCalendarEvent", {"title": "Dentist", **TIMES})
        )
    assert (created["startsAt"], created["endsAt"]) == (
        "2026-03-02T09:00:00+01:00",
        "2026-03-02T10:00:00+01:00",
    )
