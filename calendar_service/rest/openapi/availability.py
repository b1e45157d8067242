"""The Availability operations (``queryFreeBusy`` and ``findFreeTime``): their bodies and
answers, from the same models the core reads (``models.FreeBusyQuery``...), with what the core
checks beyond types."""

from __future__ import annotations

from typing import Any

from calendar_service.calendar.availability import (
    DAYS,
    DEFAULT_SLOTS,
    MAX_CALENDARS,
    MAX_DURATION,
    MAX_SLOTS,
    MAX_WINDOW,
)
from calendar_service.operations import catalog as operations
from calendar_service.platform.models import availability as shapes
from calendar_service.platform.schema_patterns import BOUND_PATTERN, RANGE_DOC, TEXT_PATTERN
from calendar_service.rest import parameters as query_parameters
from calendar_service.rest.openapi.refs import RATE_DOC, Tag, answer, json_content
from calendar_service.rest.openapi.responses import errors

TAG = Tag(
    "Availability",
    "When calendars are busy or free, without the events' titles: for scheduling agents. "
    "Keys with the `freebusy` permission may call these and nothing else.",
)
# Local clock times: 00:00 to 23:59, and 24:00 for an end.
_CLOCK = "^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"
_END_CLOCK = "^(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"

MODELS = (
    (shapes.FreeBusyQuery, "validation"),
    (shapes.FreeTimeQuery, "validation"),
    (shapes.FreeBusyPublic, "serialization"),
    (shapes.FreeTimePublic, "serialization"),
    (shapes.CalendarBusy, "serialization"),
    (shapes.Interval, "serialization"),
    (shapes.Conflicting, "serialization"),
)

_BOUNDS_DOC = (
    "A date-time (offset optional: without one it is read in the answer's time zone) or a date "
    "(that day's midnight)."
)


def adjust(schemas: dict[str, Any]) -> None:
    """What the core checks beyond the models' types, added to their schemas in place."""
    for name in ("FreeBusyQuery", "FreeTimeQuery"):
        _window_and_calendars(schemas[name]["properties"])
    _free_time_fields(schemas["FreeTimeQuery"]["properties"])
    _working_hours(schemas["WorkingHours"])
    schemas["FreeBusyQuery"]["description"] = "The body of queryFreeBusy."
    schemas["FreeTimeQuery"]["description"] = "The body of findFreeTime."
    schemas["FreeBusyPublic"]["description"] = (
        "The busy time of each calendar asked for; timeMin and timeMax in the first calendar's "
        "zone."
    )
    schemas["FreeTimePublic"]["description"] = "Free slots, earliest first."
    schemas["Conflicting"]["description"] = (
        "A busy event or occurrence that a booking with ifFree overlaps."
    )


def _window_and_calendars(props: dict[str, Any]) -> None:
    props["timeMin"] = {
        "type": "string",
        "pattern": BOUND_PATTERN,
        "minLength": 1,
        "description": f"Inclusive start of the window. {_BOUNDS_DOC} {RANGE_DOC}",
    }
    props["timeMax"] = {
        "type": "string",
        "pattern": BOUND_PATTERN,
        "minLength": 1,
        "description": "Exclusive end of the window: after timeMin, at most "
        f"{MAX_WINDOW.days} days after it. {_BOUNDS_DOC} {RANGE_DOC}",
    }
    ids = props["calendarIds"]
    ids["anyOf"] = [
        {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_CALENDARS,
            "items": {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN},
        },
        {"type": "null"},
    ]
    ids.pop("minItems", None)
    ids.pop("maxItems", None)


def _free_time_fields(props: dict[str, Any]) -> None:
    props["durationMinutes"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_DURATION,
        "description": props["durationMinutes"]["description"],
    }
    props["limit"] = {
        "anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_SLOTS}, {"type": "null"}],
        "default": DEFAULT_SLOTS,
        "description": props["limit"]["description"],
    }
    props["timeZone"]["anyOf"] = [{"type": "string", "pattern": TEXT_PATTERN}, {"type": "null"}]


def _working_hours(hours: dict[str, Any]) -> None:
    hours["properties"]["start"]["pattern"] = _CLOCK
    hours["properties"]["end"]["pattern"] = _END_CLOCK
    hours["properties"]["days"]["anyOf"] = [
        {
            "type": "array",
            "minItems": 1,
            "maxItems": 7,
            "uniqueItems": True,
            "items": {"type": "string", "enum": list(DAYS)},
        },
        {"type": "null"},
    ]
    for name in ("minItems", "maxItems", "uniqueItems"):
        hours["properties"]["days"].pop(name, None)
    hours["description"] = (
        "Local working hours, the same on each working day; end after start (working hours "
        "across midnight are not supported)."
    )


_KEYS_DOC = (
    " Any key may call it: read, write, and `freebusy` keys, which may call nothing else "
    "(and so never see a title)."
)


def paths() -> dict[str, Any]:
    """Their paths, relative to the ``/api/v1`` server."""
    return {
        "/calendar/freeBusy": {"post": _free_busy()},
        "/calendar/freeTime": {"post": _free_time()},
    }


def _answer(description: str, schema: str) -> dict[str, Any]:
    return answer(description, json_content(schema))


def _free_busy() -> dict[str, Any]:
    return {
        "operationId": "queryFreeBusy",
        "tags": [TAG.name],
        "summary": "When calendars are busy",
        "description": "The busy intervals of each calendar asked for (default: every calendar "
        "the key reaches), within [timeMin, timeMax), at most "
        f"{MAX_WINDOW.days} days: opaque events and occurrences of series, merged (overlapping "
        "or touching ones become one) and clipped to the window, in each calendar's time zone. "
        "Transparent events and cancelled occurrences are free; all-day events are busy for "
        "their whole local days." + _KEYS_DOC + RATE_DOC,
        "requestBody": {
            "required": True,
            "content": json_content(
                "FreeBusyQuery",
                examples={
                    "week": {
                        "summary": "One week of every calendar",
                        "value": {
                            "timeMin": "2026-03-02T00:00:00+01:00",
                            "timeMax": "2026-03-09T00:00:00+01:00",
                        },
                    }
                },
            ),
        },
        "parameters": query_parameters.refs(operations.FREE_BUSY.name),
        "responses": {
            "200": _answer("Each calendar's busy time.", "FreeBusyPublic"),
            **errors("413", "415"),
        },
    }


def _free_time() -> dict[str, Any]:
    return {
        "operationId": "findFreeTime",
        "tags": [TAG.name],
        "summary": "Find time when every calendar is free",
        "description": "Start times, earliest first, at which every calendar asked for is free "
        "for durationMinutes, within workingHours if given, found and shown in timeZone "
        "(default: the first calendar's). Slots start every 15 minutes of local time (every "
        "durationMinutes when shorter), counted from local midnight; they may overlap one "
        "another. Working hours are wall-clock times, so they hold on the days DST changes. Only "
        "slots that keep the owner's rules for agents binding the key are offered "
        "(getSchedulingRules); queryFreeBusy ignores them." + _KEYS_DOC + RATE_DOC,
        "requestBody": {
            "required": True,
            "content": json_content(
                "FreeTimeQuery",
                examples={
                    "halfHour": {
                        "summary": "30 minutes in working hours next week",
                        "value": {
                            "timeMin": "2026-03-02",
                            "timeMax": "2026-03-07",
                            "durationMinutes": 30,
                            "timeZone": "Europe/Berlin",
                            "workingHours": {
                                "start": "09:00",
                                "end": "17:00",
                                "days": ["MO", "TU", "WE", "TH", "FR"],
                            },
                            "limit": 5,
                        },
                    }
                },
            ),
        },
        "parameters": query_parameters.refs(operations.FREE_TIME.name),
        "responses": {"200": _answer("The free slots.", "FreeTimePublic"), **errors("413", "415")},
    }
