"""Schemathesis hooks for ``test_schemathesis.py`` (loaded by the ``st`` process it starts).

A JSON Schema cannot say that a calendar must exist, that ``endsAt`` must not come before
``startsAt``, that a PATCH's times must suit the event's stored kind (timed or all-day), that
a page token is only good for the query that produced it (and a sync token only without a
window, and with the calendarIds of the list that gave it), that calendarIds name calendars
that exist, or that a time in the first or last
year of the accepted range is in it only if its UTC instant is (which depends on the offset or
the calendar's zone). So a
request generated as valid (positive mode) is made valid against the stored data too, just
before it is sent; the edits keep it valid against the document. Requests generated as invalid
are sent as they are.

The calendars and their time zone come from the test, in ``CALENDAR_FUZZ_CALENDARS`` (JSON:
``[[id, name], ...]``) and ``CALENDAR_FUZZ_TIME_ZONE``.
"""

from __future__ import annotations

import calendar
import contextlib
import itertools
import json
import os
import re
from collections.abc import MutableMapping
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import schemathesis
from schemathesis import Case, HookContext, Response

from calendar_service.platform.schema_patterns import ALL_DAY_PATTERN, DATE_TIME_PATTERN
from calendar_service.platform.timeutil import MAX_YEAR, MIN_YEAR, parse_date_time, parse_day

CALENDARS: list[tuple[str, str]] = [
    (str(cid), str(name)) for cid, name in json.loads(os.environ["CALENDAR_FUZZ_CALENDARS"])
]
ZONE = ZoneInfo(os.environ["CALENDAR_FUZZ_TIME_ZONE"])
LIST = "GET /calendar/events"
CREATE = "POST /calendar/events"
UPDATE = "PATCH /calendar/events/{eventId}"
AVAILABILITY = ("POST /calendar/freeBusy", "POST /calendar/freeTime")
IMPORT = "POST /calendar/events/import"
SUBSCRIBE = "POST /webhooks/subscriptions"
# Where generated subscriptions point: a loopback literal (no DNS; the test server allows local
# targets). At most 25 a key: older ones are deleted to make room (``_room_to_subscribe``).
HOOK_URL = "http://127.0.0.1:9/fuzz"
KEPT_SUBSCRIPTIONS = 20
CHANGES = "GET /calendar/changes"
LINK = "POST /calendar/schedulingLinks"
SLOTS = "GET /book/{token}/slots"
BOOK = "POST /book/{token}"
KEPT_LINKS = 80  # a key has at most 100 links in force: older ones are deleted (``_room``)

# nextPageToken -> (timeMin, timeMax, singleEvents, calendarIds) of the query that returned it
_page_tokens: dict[str, tuple[Any, Any, Any, Any]] = {}
_PAGE_PARAMETERS = ("timeMin", "timeMax", "singleEvents", "calendarIds")
# listChanges' nextPageToken -> (since, eventId, calendarId) of the query that returned it
_change_tokens: dict[str, tuple[Any, Any, Any]] = {}
_CHANGE_FILTERS = ("since", "eventId", "calendarId")
_OCCURRENCE = re.compile(r"_\d{8}(T\d{6}Z)?$")

# What a generated iCalendar body is replaced by (a JSON Schema cannot describe RFC 5545).
_ICS = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//fuzz//EN\r\nBEGIN:VEVENT\r\n"
    "UID:fuzz-{n}@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "DTSTART;TZID=Europe/Berlin:20260302T093000\r\nDTEND;TZID=Europe/Berlin:20260302T094500\r\n"
    "SUMMARY:Fuzzed {n}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
# the nextSyncTokens seen, with the calendarIds of the list that gave each: good with no
# window (syncToken and timeMin/timeMax are a 400) and with those calendars alone
_sync_tokens: dict[str, Any] = {}


_EDGE_YEAR = re.compile(rf"^(\s*)({MIN_YEAR}|{MAX_YEAR})-")
_TIME_FIELDS = ("startsAt", "endsAt", "timeMin", "timeMax")


def _inside_the_year_range(values: dict[str, Any]) -> None:
    """Move times in the first or last year of the range inwards, to the nearest year that is
    a leap year exactly when theirs is (so that the month and day stay valid)."""
    for name in _TIME_FIELDS:
        value = values.get(name)
        if isinstance(value, str):
            values[name] = _EDGE_YEAR.sub(lambda m: f"{m.group(1)}{_inwards(m.group(2))}-", value)


def _inwards(year: str) -> int:
    step = 1 if int(year) == MIN_YEAR else -1
    moved = int(year) + step
    while calendar.isleap(moved) != calendar.isleap(int(year)):
        moved += step
    return moved


def _operation(case: Case) -> str:
    return f"{case.method.upper()} {case.operation.path}"


@schemathesis.hook
def before_call(context: HookContext, case: Case, kwargs: dict[str, Any]) -> None:
    if _operation(case) == CREATE:
        _fresh_idempotency_key(case, kwargs)
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    operation = _operation(case)
    for values in (case.query, case.body):
        if isinstance(values, dict):
            _inside_the_year_range(values)
    if operation == LIST and isinstance(case.query, dict):
        _realistic_query(case.query)
    if operation in (CREATE, UPDATE) and isinstance(case.body, dict):
        _realistic_attendees(case.body)
    if operation == CREATE and isinstance(case.body, dict):
        _realistic_calendar(case.body)
        _in_order(case.body, case.body.get("allDay") is True)
        _realistic_recurrence(case.body)
        _realistic_zone(case.body)
        if case.body.get("recurrence") is not None:  # ifFree checks single events only
            case.body.pop("ifFree", None)
    elif operation == UPDATE and isinstance(case.body, dict):
        _realistic_times(case.body)
        _realistic_recurrence(case.body)
        _realistic_zone(case.body)
        if _OCCURRENCE.search(str((case.path_parameters or {}).get("eventId", ""))):
            # An occurrence's change is its own (scope=this): its rule and its kind belong
            # to the series (docs/recurrence.md).
            case.body.pop("recurrence", None)
            if isinstance(case.query, dict) and "scope" in case.query:
                case.query["scope"] = "this"
    elif operation in AVAILABILITY and isinstance(case.body, dict):
        _realistic_availability(case.body)
    elif operation == IMPORT:
        case.body = _ICS.format(n=len(str(case.body)))
        if isinstance(case.query, dict):
            _realistic_import_target(case.query)
    elif operation == SUBSCRIBE and isinstance(case.body, dict):
        _realistic_subscription(case.body)
        _room_to_subscribe()
    elif operation == CHANGES and isinstance(case.query, dict):
        _realistic_changes_query(case.query)
    elif operation == LINK and isinstance(case.body, dict):
        _realistic_link(case.body)
        _room_for_links()
    elif operation in (SLOTS, BOOK):
        _realistic_booking(case)


def _realistic_booking(case: Case) -> None:
    """The test's link (a made-up token is a 404), a real zone and dates for the slots, and a
    guest's one-line name and real address for a booking (its time may be taken: 409)."""
    case.path_parameters = {
        **(case.path_parameters or {}),
        "token": os.environ["CALENDAR_FUZZ_LINK"],
    }
    if isinstance(case.query, dict):
        if "timeZone" in case.query:
            case.query["timeZone"] = os.environ["CALENDAR_FUZZ_TIME_ZONE"]
        for n, name in enumerate(("timeMin", "timeMax")):
            if name in case.query:
                case.query[name] = (date.today() + timedelta(days=n * 3)).isoformat()
    if isinstance(case.body, dict):
        tomorrow = date.today() + timedelta(days=1)
        case.body["startsAt"] = f"{tomorrow.isoformat()}T{9 + len(str(case.body)) % 8:02d}:00Z"
        case.body["name"] = "Dana Scully"
        case.body["email"] = "dana@example.com"


def _realistic_link(body: dict[str, Any]) -> None:
    """A window from tomorrow that holds one slot, a calendar that exists, an expiry ahead,
    a guest's real address and a one-line name (the schema says types and lengths only)."""
    tomorrow = date.today() + timedelta(days=1)
    minutes = body.get("durationMinutes")
    days = 1 + (minutes if isinstance(minutes, int) else 0) // 1440
    body["timeMin"] = tomorrow.isoformat()
    body["timeMax"] = (tomorrow + timedelta(days=days + 1)).isoformat()
    if body.get("calendarId") is not None:
        body["calendarId"] = CALENDARS[0][0]
    if body.get("expiresAt") is not None:
        body["expiresAt"] = (tomorrow + timedelta(days=days)).isoformat()
    guest = body.get("guest")
    if isinstance(guest, dict):
        if guest.get("email") is not None:
            guest["email"] = "guest@example.com"
        if guest.get("name") is not None:
            guest["name"] = "Dana Scully"
    for name in ("title", "description"):
        value = body.get(name)
        if isinstance(value, str):  # one line of text, not blank
            body[name] = "".join(c for c in value if c.isprintable() and c not in "<>") or "x"


def _room_for_links() -> None:
    """Delete the key's oldest links while it has ``KEPT_LINKS`` or more."""
    base = os.environ["CALENDAR_FUZZ_BASE"]
    headers = {"Authorization": f"Bearer {os.environ['CALENDAR_FUZZ_KEY']}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        found = client.get("/calendar/schedulingLinks").json()["schedulingLinks"]
        for old in found[KEPT_LINKS - 1 :]:
            client.delete(f"/calendar/schedulingLinks/{old['id']}")


def _realistic_attendees(body: dict[str, Any]) -> None:
    """Addresses that are addresses: the schema says only "a string of 3 to 320 characters"
    (the server checks the rest with email-validator, a 400 naming each bad one)."""
    attendees = body.get("attendees")
    if isinstance(attendees, list):
        for i, attendee in enumerate(attendees):
            if isinstance(attendee, dict):
                attendee["email"] = f"person{i}@example.com"


def _realistic_subscription(body: dict[str, Any]) -> None:
    """A URL the server takes, calendars that exist, and minutesBefore only with
    calendar.event.starting among the events."""
    body["url"] = HOOK_URL
    chosen = body.get("calendarIds")
    if isinstance(chosen, list):
        body["calendarIds"] = [CALENDARS[i % len(CALENDARS)][i % 2] for i in range(len(chosen))]
    events = body.get("events")
    starting = "calendar.event.starting"
    if (
        body.get("minutesBefore") is not None
        and isinstance(events, list)
        and starting not in events
    ):
        events.append(starting)


def _room_to_subscribe() -> None:
    """Delete the key's oldest subscriptions while it has ``KEPT_SUBSCRIPTIONS`` or more."""
    base = os.environ["CALENDAR_FUZZ_BASE"]
    headers = {"Authorization": f"Bearer {os.environ['CALENDAR_FUZZ_KEY']}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        found = client.get("/webhooks/subscriptions").json()["subscriptions"]
        for old in found[: max(0, len(found) - KEPT_SUBSCRIPTIONS + 1)]:
            client.delete(f"/webhooks/subscriptions/{old['id']}")


def _realistic_changes_query(query: dict[str, Any]) -> None:
    """A listChanges page token is good only with the filters it was issued for."""
    token = query.get("pageToken")
    if token is None:
        return
    if token not in _change_tokens:
        del query["pageToken"]  # a made-up token
        return
    for name, value in zip(_CHANGE_FILTERS, _change_tokens[token], strict=True):
        if value is None:
            query.pop(name, None)
        else:
            query[name] = value


def _realistic_availability(body: dict[str, Any]) -> None:
    """Calendars that exist, bounds in order and at most 92 days apart, a real time zone,
    working hours that end after they start."""
    if isinstance(body.get("calendarIds"), list):
        body["calendarIds"] = [
            CALENDARS[i % len(CALENDARS)][0] for i in range(len(body["calendarIds"]))
        ]
    low, high = (_bound(body.get(name)) for name in ("timeMin", "timeMax"))
    if low is not None and high is not None:
        if high < low:
            body["timeMin"], body["timeMax"] = body["timeMax"], body["timeMin"]
            low, high = high, low
        if high - low > timedelta(days=92) or high == low:
            body["timeMax"] = (low + timedelta(days=1)).isoformat()
    if "timeZone" in body and body["timeZone"] is not None:
        body["timeZone"] = "Europe/Berlin"
    hours = body.get("workingHours")
    if isinstance(hours, dict) and str(hours.get("end")) <= str(hours.get("start")):
        hours["start"], hours["end"] = "09:00", "17:00"


_sent = itertools.count()


def _fresh_idempotency_key(case: Case, kwargs: dict[str, Any]) -> None:
    """A replayed Idempotency-Key answers the first response again, by design (Stripe's
    behaviour), even when the event it created was deleted since; the stateful phase would
    then read that event and report it missing. So each generated key is made unique (in the
    request about to be sent, and in the case that reports it)."""
    suffix = f"-{next(_sent)}"
    for headers in (case.headers, kwargs.get("headers")):
        if not isinstance(headers, MutableMapping):
            continue
        for name in list(headers):
            if name.lower() == "idempotency-key" and isinstance(headers[name], str):
                headers[name] = headers[name][:200] + suffix


def _realistic_import_target(query: dict[str, Any]) -> None:
    """Name one of the owner's calendars (by id, by name, or both alike), or none."""
    if "calendarId" in query or "calendar" in query:
        cid, name = CALENDARS[len(str(query)) % len(CALENDARS)]
        if "calendarId" in query:
            query["calendarId"] = cid
        if "calendar" in query:
            query["calendar"] = name


def _realistic_zone(body: dict[str, Any]) -> None:
    """A JSON Schema cannot say which strings are IANA zones, nor that ``timeZone`` is for
    timed events: a generated zone is a real one on an event sent as timed, else left out."""
    if body.get("timeZone") is None:
        return
    if body.get("allDay") is False:
        body["timeZone"] = "America/New_York"
    else:
        body.pop("timeZone")


def _realistic_recurrence(body: dict[str, Any]) -> None:
    """A JSON Schema cannot say which strings are RFC 5545 rules: a generated rule is
    replaced by one that holds for any start, timed or all-day."""
    if isinstance(body.get("recurrence"), list):
        body["recurrence"] = ["RRULE:FREQ=WEEKLY;COUNT=3"]


@schemathesis.hook
def after_call(context: HookContext, case: Case, response: Response) -> None:
    if _operation(case) == CHANGES and response.status_code == 200:
        with contextlib.suppress(ValueError, AttributeError):
            token = response.json().get("nextPageToken")
            if isinstance(token, str):
                query = case.query if isinstance(case.query, dict) else {}
                _change_tokens[token] = tuple(query.get(name) for name in _CHANGE_FILTERS)
        return
    if _operation(case) != LIST or response.status_code != 200:
        return
    with contextlib.suppress(ValueError, AttributeError):
        body = response.json()
        token = body.get("nextPageToken")
        if isinstance(token, str):
            query = case.query if isinstance(case.query, dict) else {}
            _page_tokens[token] = tuple(query.get(name) for name in _PAGE_PARAMETERS)
        sync_token = body.get("nextSyncToken")
        if isinstance(sync_token, str):
            query = case.query if isinstance(case.query, dict) else {}
            _sync_tokens[sync_token] = query.get("calendarIds")


def _realistic_query(query: dict[str, Any]) -> None:
    chosen = query.get("calendarIds")
    if isinstance(chosen, list):  # calendars that exist: ids and names in turn
        query["calendarIds"] = [CALENDARS[i % len(CALENDARS)][i % 2] for i in range(len(chosen))]
    elif isinstance(chosen, str):
        query["calendarIds"] = CALENDARS[0][1]
    sync_token = query.get("syncToken")
    if sync_token is not None:
        if sync_token in _sync_tokens:  # a sync: no window, and no list's page token
            for name in ("timeMin", "timeMax"):
                query.pop(name, None)
            if not str(query.get("pageToken", "~")).startswith("~"):
                del query["pageToken"]
            if _sync_tokens[sync_token] is None:  # the calendars it was made for
                query.pop("calendarIds", None)
            else:
                query["calendarIds"] = _sync_tokens[sync_token]
            return
        del query["syncToken"]  # a made-up token
    token = query.get("pageToken")
    if token is not None:
        if token in _page_tokens:  # good only with the query it was issued for
            for name, value in zip(_PAGE_PARAMETERS, _page_tokens[token], strict=True):
                if value is None:
                    query.pop(name, None)
                else:
                    query[name] = value
            return
        del query["pageToken"]  # a made-up token
    low, high = (_bound(query.get(name)) for name in ("timeMin", "timeMax"))
    if low is not None and high is not None and high < low:
        query["timeMin"], query["timeMax"] = query["timeMax"], query["timeMin"]


def _realistic_calendar(body: dict[str, Any]) -> None:
    """Name one of the owner's calendars (the same one by id and by name)."""
    calendar_id, name = CALENDARS[len(str(body.get("title", ""))) % len(CALENDARS)]
    if body.get("calendarId") is not None:
        body["calendarId"] = calendar_id
    if body.get("calendar") is not None:
        body["calendar"] = name


def _realistic_times(body: dict[str, Any]) -> None:
    """A PATCH that touches the times sends all three, consistent with one another, so that
    the event's stored kind and times cannot make it invalid."""
    sent = [name for name in ("startsAt", "endsAt") if name in body]
    if not sent and "allDay" not in body:
        return
    # Without allDay, a bare date (the all-day form) makes it an all-day event.
    all_day = body["allDay"] is True if "allDay" in body else len(str(body[sent[0]]).strip()) == 10
    pattern = ALL_DAY_PATTERN if all_day else DATE_TIME_PATTERN
    usable = [body[name] for name in sent if re.search(pattern, str(body[name]))]
    fallback = usable[0] if usable else ("2026-03-02" if all_day else "2026-03-02T09:30:00")
    for name in ("startsAt", "endsAt"):
        if body.get(name) not in usable:
            body[name] = fallback
    body["allDay"] = all_day
    _in_order(body, all_day)


def _in_order(body: dict[str, Any], all_day: bool) -> None:
    start, end = (_instant(body.get(name), all_day) for name in ("startsAt", "endsAt"))
    if start is not None and end is not None and end < start:  # type: ignore[operator]
        body["startsAt"], body["endsAt"] = body["endsAt"], body["startsAt"]


def _instant(value: Any, all_day: bool) -> date | datetime | None:
    if not isinstance(value, str):
        return None
    with contextlib.suppress(Exception):  # unparseable or out of range: left as generated
        return parse_day(value, ZONE) if all_day else parse_date_time(value, ZONE)
    return None


def _bound(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    with contextlib.suppress(Exception):
        text = value.strip()
        if len(text) == 10:
            return parse_date_time(f"{parse_day(text, ZONE).isoformat()}T00:00", ZONE)
        return parse_date_time(text, ZONE)
    return None
