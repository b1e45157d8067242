"""The import operation (``importCalendarEvents``): its path, its query parameters and the
report's schema.

The feed (``/ical/<token>.ics``) is not in the document: it is not under ``/api/v1`` and
takes no key (docs/ical.md)."""

from __future__ import annotations

from typing import Any

from calendar_service.interop.ical.reading import MAX_BYTES, MAX_EVENTS
from calendar_service.operations import catalog as operations
from calendar_service.platform.schema_patterns import TEXT_PATTERN
from calendar_service.rest.openapi.events import TAG
from calendar_service.rest.openapi.examples import problem_example
from calendar_service.rest.openapi.parameters import parameter
from calendar_service.rest.openapi.refs import (
    OK_HEADERS,
    RATE_DOC,
    SCHEMA,
    WRITE_NOTE,
    answer,
    json_content,
)
from calendar_service.rest.openapi.responses import errors, problem_response
from calendar_service.rest.routes import ICS_MEDIA_TYPE, IMPORT_PATH

_MIB = MAX_BYTES // (1024 * 1024)
# The headers its answer declares: those of every answer but Cache-Control.
_IMPORT_HEADERS = tuple(name for name in OK_HEADERS if name != "Cache-Control")

_EXAMPLE_FILE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Example//EN\r\nBEGIN:VEVENT\r\n"
    "UID:standup-1@example.com\r\nDTSTAMP:20260301T120000Z\r\n"
    "DTSTART;TZID=Europe/Berlin:20260302T093000\r\nDTEND;TZID=Europe/Berlin:20260302T094500\r\n"
    "RRULE:FREQ=WEEKLY;BYDAY=MO\r\nSUMMARY:Stand-up\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
_EXAMPLE_REPORT = {
    "created": 1,
    "updated": 0,
    "skipped": 0,
    "errors": [{"uid": "broken-1@example.com", "message": "it has no DTSTART (when it starts)"}],
    "warnings": [
        {
            "uid": "standup-1@example.com",
            "message": "not imported, as events here have no place for them: 2 attendees",
        }
    ],
}


def schemas() -> dict[str, Any]:
    entry = {
        "type": "object",
        "description": "One UID of the file and what happened to it.",
        "properties": {
            "uid": {
                "type": ["string", "null"],
                "description": "The VEVENT's UID (null: about the file as a whole).",
            },
            "message": {"type": "string", "description": "What happened, for a person."},
        },
        "required": ["uid", "message"],
    }
    report = {
        "type": "object",
        "description": "What an import did, per UID (a series with its changed occurrences "
        "counts once). Importing the same file again changes nothing: everything is skipped.",
        "properties": {
            "created": {"type": "integer", "minimum": 0, "description": "UIDs new here."},
            "updated": {
                "type": "integer",
                "minimum": 0,
                "description": "UIDs imported before and changed in the file: changed in place "
                "(the events keep their ids).",
            },
            "skipped": {
                "type": "integer",
                "minimum": 0,
                "description": "UIDs imported before and the same now.",
            },
            "errors": {
                "type": "array",
                "items": {"$ref": SCHEMA.format("ImportEntry")},
                "description": "UIDs not imported at all, and why (no DTSTART, an unknown "
                "TZID, a rule this service refuses...).",
            },
            "warnings": {
                "type": "array",
                "items": {"$ref": SCHEMA.format("ImportEntry")},
                "description": "What was imported only in part: attendees, alarms and other "
                "properties events here have no place for; changed occurrences the rule does "
                "not produce; to-dos and other components that are not events.",
            },
        },
        "required": ["created", "updated", "skipped", "errors", "warnings"],
        "examples": [_EXAMPLE_REPORT],
    }
    return {"ImportEntry": entry, "ImportReport": report}


def parameters() -> dict[str, Any]:
    return {
        "importCalendarId": parameter(
            "calendarId",
            "query",
            "The calendar to import into (default: the key's calendar, or the "
            "owner's default calendar for an all-calendars key).",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
        "importCalendar": parameter(
            "calendar",
            "query",
            "The calendar to import into, by name (with calendarId: both must name the same one).",
            {"type": "string", "pattern": TEXT_PATTERN},
        ),
    }


def path() -> tuple[str, dict[str, Any]]:
    """The import's path (relative to the ``/api/v1`` server) and its path item."""
    importing = TAG.operation(
        operations.IMPORT,
        "Import an iCalendar (.ics) file",
        "Imports the VEVENTs of an .ics file (as Google Calendar, Apple "
        "Calendar or Outlook export it) into one calendar: single events, series with their "
        "RRULE, EXDATE and RDATE, changed occurrences (RECURRENCE-ID) and cancelled ones, "
        "all-day events; times in the zone the file names (IANA, Windows zone names, or the "
        "file's VTIMEZONE). Idempotent by UID (and RECURRENCE-ID): importing the same file "
        "again changes nothing. A UID that cannot be imported is listed in `errors` and "
        "nothing of it is written; what came in only in part is in `warnings`. Each event "
        "made or changed is sent to the owner's webhook like any other change. At most "
        f"{_MIB} MiB and {MAX_EVENTS} VEVENTs a request." + WRITE_NOTE + RATE_DOC,
        _responses(),
        body={
            "required": True,
            "description": "The .ics file, as it is (RFC 5545 text, UTF-8).",
            "content": {
                ICS_MEDIA_TYPE: {
                    "schema": {"type": "string", "maxLength": MAX_BYTES},
                    "example": _EXAMPLE_FILE,
                }
            },
        },
    )
    return IMPORT_PATH.removeprefix("/api/v1"), {"post": importing}


def _responses() -> dict[str, Any]:
    # The import's own 413 and 415 take the places of the shared ones (the file's limits,
    # its media type); a key already in a dict keeps its place when its value is replaced.
    return {
        "200": answer(
            "What the import did.",
            json_content("ImportReport", example=_EXAMPLE_REPORT),
            headers=_IMPORT_HEADERS,
        ),
        **errors("413", "415"),
        "413": problem_response(
            f"The file is larger than {_MIB} MiB or holds more than {MAX_EVENTS} events.",
            _problem(
                413,
                "payload_too_large",
                "Payload too large",
                f"The file holds more than {MAX_EVENTS} events: split it (for example by "
                "year) and import the parts one after another.",
            ),
        ),
        "415": problem_response(
            f"The body was not sent as {ICS_MEDIA_TYPE}.",
            _problem(
                415,
                "unsupported_media_type",
                "Unsupported media type",
                f"Send the .ics file as the body with 'Content-Type: {ICS_MEDIA_TYPE}' "
                "(got 'application/json').",
            ),
        ),
    }


def _problem(status: int, code: str, title: str, detail: str) -> Any:
    return problem_example(status, code, title, detail, instance=IMPORT_PATH)
