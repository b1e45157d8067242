"""What a model reads: the server's instructions, each tool's description and its arguments'.

Every connected model reads all of it on every turn (docs/mcp.md, "The budget"), so each text
says when to use the tool, what it returns and what a model gets wrong, once, without repeating
what the schema already shows (types, enums, which arguments are required).
``ARGUMENT_DOCS`` replaces the core models' descriptions (written for REST's reference
documentation) in the published input schemas, for the arguments every tool shares.
"""

from __future__ import annotations

INSTRUCTIONS = """\
Tools for one person's calendars, acting with an API key the person issued; the key decides
what you can reach. Call listCalendarEvents first: it gives the current time, the calendars and
their time zones. Write date-times with an offset (2026-03-02T09:30:00+01:00); without one they
are read in the calendar's time zone. To find an event by its words use searchCalendarEvents;
never ask the person for an id. For free time use findFreeTime (or queryFreeBusy), not the
event list. Every write takes dryRun and returns the changeId it made; undoChange takes a change
back. A write that answers awaitsApproval waits for the owner: tell the person, do not retry.
"""

LIST_DOC = """\
List events overlapping [timeMin, timeMax), ordered by start, with times in their calendar's
time zone. Use it for "what do I have tomorrow?" and before creating an event; for free time use
findFreeTime or queryFreeBusy instead.

Returns `now`, `calendars` (id, name, timeZone), `events` and `nextPageToken` when more remain
(call again with it as pageToken). A recurring series is listed as its occurrences, each with
its own id and `recurringEventId`. Each event is a summary; detail "full" gives every field.
To follow changes, keep `nextSyncToken` and pass it later as syncToken (without timeMin or
timeMax): only what changed since comes back, deleted events as {id, status: "cancelled"}.
"""

SEARCH_DOC = """\
Find events by their words (title, description, location): for "move my dentist appointment",
search "dentist" and act on the id found. Every word must match (case and accents aside); the
last may be a prefix. Searches from now on unless timeMin is given. Returns what
listCalendarEvents returns.
"""

CREATE_DOC = """\
Create an event. Give title, startsAt and endsAt with an offset; without one they are read in
the calendar's time zone. All-day: allDay true and dates, endsAt exclusive. The target is
calendarId or calendar (a name); a name that does not exist is refused. ifFree: true books only
if the time is still free (else a `conflict` error lists what overlaps). Pass idempotencyKey to
make a retry safe.

Recurring: `recurrence` holds RFC 5545 lines; startsAt/endsAt are the first occurrence:
every Monday at 10: ["RRULE:FREQ=WEEKLY;BYDAY=MO"], startsAt a Monday 10:00; every other
Tuesday: INTERVAL=2;BYDAY=TU; an end: COUNT=10 or UNTIL=20261231T235959Z, never both; skip a
date: "EXDATE:20260309T090000Z".

attendees: sendUpdates "all" emails them an invitation; ask your user first. Returns the event.
"""

GET_DOC = """\
Get one event, series or occurrence by its id. Returns the event with every field.
"""

UPDATE_DOC = """\
Change the fields given; the others stay. Date-times without an offset are read in the
event's calendar's time zone; null clears description or location. For an occurrence's id:
scope "this" (default) changes that meeting, scope "following" it and every later one (a new
series, returned), scope "all" the whole series. `attendees` replaces the list; sendUpdates
"all" emails them (ask your user first). Returns the event after the change.
"""

DELETE_DOC = """\
Delete an event, only when the person asked. To cancel one meeting of a series give that
occurrence's id (scope "this", the default); scope "following" cancels it and every later one;
scope "all" or the series' id deletes the whole series. Returns `deleted` and the event as it
was.
"""

FREE_BUSY_DOC = """\
When the person's calendars are busy between timeMin and timeMax (at most 92 days). Use it
instead of listing events for "am I free on Thursday?": it merges meetings, counts recurring and
all-day events and skips events marked free. Returns each calendar's `busy` intervals, no
titles; calendars connected from Google, Outlook and others (ids conn_…) too, with when each
was last read.
"""

FREE_TIME_DOC = """\
Find slots of durationMinutes when every calendar is free. Use it instead of listing events to
find a time for a meeting; the person's connected calendars (Google, Outlook...) count too.
Returns `slots` (startsAt, endsAt), earliest first, every 15 minutes; they overlap, so pick
one, and book it with createCalendarEvent and ifFree: true.
"""

RULES_DOC = """\
The owner's rules for agents (working hours, buffers, meetings a day, focus time, no-meeting
days, notice, how far ahead, longest meeting) and whether they bind this key. findFreeTime
already keeps them; a write that breaks them is refused (rule_violation, with suggestions) or
waits for the owner.
"""

LINK_DOC = """\
A link for someone not on this service to pick one of your free slots and book it (an event,
them as attendee). Send them the url.
"""

LIST_CHANGES_DOC = """\
What was changed in the reachable calendars, newest first: each change's id, kind, event and
who made it. Use it to review what was done or find a change to undo.
"""

UNDO_DOC = """\
Undo one change by its changeId: the event is put back as it was. If the event changed since,
a `conflict` error names the later changes: undo those first, or set force.
"""

_BOUND = "RFC 3339 date-time or a date; without an offset, in the calendar's time zone."
ARGUMENT_DOCS = {
    "timeMin": f"Start of the window. {_BOUND}",
    "timeMax": f"End of the window (exclusive). {_BOUND}",
    "limit": "Items per page.",
    "pageToken": "nextPageToken of the previous call, with the same arguments.",
    "calendarIds": "Only these calendars (ids or names); default: every one the key reaches.",
    "dryRun": "true: check everything and answer the change it would make; nothing is written.",
    "sendUpdates": "all: email the attendees (ask your user first). Default none.",
    "eventId": "An event's id, as listed (an occurrence's is <seriesId>_<start>).",
    "scope": "For an occurrence: this (default), following, or all.",
    "startsAt": "RFC 3339 date-time with an offset, or a date with allDay.",
    "endsAt": "Same format as startsAt; not before it.",
    "title": "At most 300 characters.",
    "calendarId": "Target calendar's id.",
    "calendar": "Target calendar's name (default: the key's calendar).",
    "allDay": "true: a whole-day event; startsAt and endsAt are dates.",
    "description": "Free text.",
    "location": "Where it takes place.",
    "recurrence": "RFC 5545 lines (one RRULE, any EXDATE/RDATE).",
    "transparency": "transparent: the event does not block the time.",
    "ifFree": "true: create only if no busy event overlaps (else error conflict).",
    "timeZone": "IANA time zone, e.g. Europe/Berlin; default: the calendar's.",
    "idempotencyKey": "A unique string; a retry with it returns the first result.",
    "attendees": "People invited.",
    "query": "The words to find, e.g. dentist.",
    "syncToken": "nextSyncToken of an earlier list: only what changed since.",
    "singleEvents": "false: each series once, with its recurrence. Default true.",
    "durationMinutes": "Length of the free time, 1 to 1440.",
    "workingHours": "Only slots within these local hours, e.g. {start: 09:00, end: 17:00}.",
    "since": "Only changes at or after this date-time or date.",
    "changeId": "The change's id (chg_...).",
    "force": "true: undo even if the event changed since.",
    "detail": "full: every field of each event. Default: a summary.",
}
