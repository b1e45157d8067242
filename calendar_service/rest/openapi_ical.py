"""The import operation's part of the OpenAPI document (``importCalendarEvents``): its path,
its query parameters and the report's schema. ``openapi.build_openapi`` merges them in.

The feed (``/ical/<token>.ics``) is not in the document: it is not under ``/api/v1`` and
takes no key (docs/ical.md)."""

from __future__ import annotations

from typing import Any

from calendar_service import operations
from calendar_service.asgi.responses import PROBLEM_TYPE
from calendar_service.ical.reading import MAX_BYTES, MAX_EVENTS
from calendar_service.rest import parameters as query_parameters
from calendar_service.rest.routes import ICS_MEDIA_TYPE, IMPORT_PATH

TEXT_PATTERN = r"^[^\x00]*$"  # as openapi.TEXT_PATTERN: no NUL in any text
_MIB = MAX_BYTES // (1024 * 1024)

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


def _problem(status: int, code: str, title: str, detail: str) -> dict[str, Any]:
    return {
        "type": PROBLEM_TYPE.format(code=code),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
        "instance": IMPORT_PATH,
    }


def _problem_response(description: str, example: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {"Request-Id": {"$ref": "#/components/headers/Request-Id"}},
        "content": {
            "application/problem+json": {
                "schema": {"$ref": "#/components/schemas/Problem"},
                "example": example,
            }
        },
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
                "items": {"$ref": "#/components/schemas/ImportEntry"},
                "description": "UIDs not imported at all, and why (no DTSTART, an unknown "
                "TZID, a rule this service refuses...).",
            },
            "warnings": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/ImportEntry"},
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
        "importCalendarId": {
            "name": "calendarId",
            "in": "query",
            "description": "The calendar to import into (default: the key's calendar, or the "
            "owner's default calendar for an all-calendars key).",
            "schema": {"type": "string", "pattern": TEXT_PATTERN},
        },
        "importCalendar": {
            "name": "calendar",
            "in": "query",
            "description": "The calendar to import into, by name (with calendarId: both must "
            "name the same one).",
            "schema": {"type": "string", "pattern": TEXT_PATTERN},
        },
    }


def path() -> tuple[str, dict[str, Any]]:
    """The import's path (relative to the ``/api/v1`` server) and its path item."""
    operation = {
        "operationId": "importCalendarEvents",
        "tags": ["Events"],
        "summary": "Import an iCalendar (.ics) file",
        "description": "Imports the VEVENTs of an .ics file (as Google Calendar, Apple "
        "Calendar or Outlook export it) into one calendar: single events, series with their "
        "RRULE, EXDATE and RDATE, changed occurrences (RECURRENCE-ID) and cancelled ones, "
        "all-day events; times in the zone the file names (IANA, Windows zone names, or the "
        "file's VTIMEZONE). Idempotent by UID (and RECURRENCE-ID): importing the same file "
        "again changes nothing. A UID that cannot be imported is listed in `errors` and "
        "nothing of it is written; what came in only in part is in `warnings`. Each event "
        "made or changed is sent to the owner's webhook like any other change. At most "
        f"{_MIB} MiB and {MAX_EVENTS} VEVENTs a request. Needs a key with `calendar:write`. "
        "Every call spends one request of the key's budget and is recorded in the key's call "
        "history.",
        "parameters": query_parameters.refs(operations.IMPORT.name),
        "requestBody": {
            "required": True,
            "description": "The .ics file, as it is (RFC 5545 text, UTF-8).",
            "content": {
                ICS_MEDIA_TYPE: {
                    "schema": {"type": "string", "maxLength": MAX_BYTES},
                    "example": _EXAMPLE_FILE,
                }
            },
        },
        "responses": {
            "200": {
                "description": "What the import did.",
                "headers": {
                    name: {"$ref": f"#/components/headers/{name}"}
                    for name in (
                        "Request-Id",
                        "RateLimit-Policy",
                        "RateLimit-Limit",
                        "RateLimit-Remaining",
                        "RateLimit-Reset",
                    )
                },
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/ImportReport"},
                        "example": _EXAMPLE_REPORT,
                    }
                },
            },
            "400": {"$ref": "#/components/responses/BadRequest"},
            "401": {"$ref": "#/components/responses/Unauthorized"},
            "413": _problem_response(
                f"The file is larger than {_MIB} MiB or holds more than {MAX_EVENTS} events.",
                _problem(
                    413,
                    "payload_too_large",
                    "Payload too large",
                    f"The file holds more than {MAX_EVENTS} events: split it (for example by "
                    "year) and import the parts one after another.",
                ),
            ),
            "415": _problem_response(
                f"The body was not sent as {ICS_MEDIA_TYPE}.",
                _problem(
                    415,
                    "unsupported_media_type",
                    "Unsupported media type",
                    f"Send the .ics file as the body with 'Content-Type: {ICS_MEDIA_TYPE}' "
                    "(got 'application/json').",
                ),
            ),
            "429": {"$ref": "#/components/responses/TooManyRequests"},
            "500": {"$ref": "#/components/responses/InternalError"},
        },
    }
    return IMPORT_PATH.removeprefix("/api/v1"), {"post": operation}
