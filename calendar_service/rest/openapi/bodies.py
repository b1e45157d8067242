"""The request bodies of the Events operations (``EventCreate``, ``EventUpdate``): the models'
schemas, with what the core checks beyond types (the date-time syntax ``timeutil`` parses,
titles that are not blank, text without NUL, which fields ``PATCH`` lets be ``null``)."""

from __future__ import annotations

from typing import Any

from calendar_service.platform.models.calendars import DEFAULT_CALENDAR_NAME
from calendar_service.platform.models.events import TITLE_MAX
from calendar_service.platform.schema_patterns import (
    ALL_DAY_PATTERN,
    DATE_OR_DATE_TIME_PATTERN,
    DATE_TIME_PATTERN,
    RANGE_DOC,
    TEXT_PATTERN,
    TITLE_PATTERN,
)

_TIMES_DOC = (
    "RFC 3339 date-time, e.g. `2026-03-02T09:30:00+01:00`. The offset is optional: without one "
    "the time is wall-clock time in the target calendar's time zone. Seconds and fractions are "
    f"optional. With `allDay: true`, a date (`2026-03-02`) or a midnight date-time. {RANGE_DOC}"
)


def _date_time_input(description: str, pattern: str = DATE_OR_DATE_TIME_PATTERN) -> dict[str, Any]:
    return {"type": "string", "pattern": pattern, "description": description}


def _times(pattern: str) -> dict[str, Any]:
    return {"properties": {"startsAt": {"pattern": pattern}, "endsAt": {"pattern": pattern}}}


def _all_day_rule(all_day: bool) -> dict[str, Any]:
    """With ``allDay`` in the body: dates or midnights for true, date-times for false."""
    return {
        "if": {"properties": {"allDay": {"const": all_day}}, "required": ["allDay"]},
        "then": _times(ALL_DAY_PATTERN if all_day else DATE_TIME_PATTERN),
    }


def _text(prop: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    """A text property (or ``string | null`` one) that refuses NUL characters."""
    out = {**prop, "anyOf": [{"type": "string", "pattern": TEXT_PATTERN}, {"type": "null"}]}
    if description is not None:
        out["description"] = description
    out["description"] += " No NUL characters."
    return out


def _title(description: str) -> dict[str, Any]:
    """An event's title as a body sends it: not blank, at most ``TITLE_MAX`` characters."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": TITLE_MAX,
        "pattern": TITLE_PATTERN,
        "description": description,
    }


def event_create(schema: dict[str, Any]) -> dict[str, Any]:
    """``EventCreate``'s schema, as the core checks a new event."""
    props = schema["properties"]
    props["title"] = _title(
        f"1 to {TITLE_MAX} characters; surrounding white space is trimmed, and a blank title is "
        "refused. No NUL characters."
    )
    props["startsAt"] = _date_time_input(f"Start. {_TIMES_DOC}")
    props["endsAt"] = _date_time_input(
        f"Exclusive end, not before startsAt. {_TIMES_DOC} For an all-day event, an endsAt "
        "equal to startsAt means one day."
    )
    props["calendarId"]["description"] = (
        "Identifier of the target calendar: one of the key's calendars (a calendar the owner "
        "does not have is a 400)."
    )
    props["calendar"]["description"] = (
        "Name of the target calendar (default: the key's calendar, or "
        f"{DEFAULT_CALENDAR_NAME!r} for an all-calendars key). A name the owner has no "
        "calendar by is a 400: calendars are never created implicitly. If calendarId is also "
        "sent, both must name the same calendar."
    )
    props["allDay"]["description"] = (
        "An all-day event runs from midnight to midnight in the calendar's time zone."
    )
    props["calendarId"] = _text(props["calendarId"])
    props["calendar"] = _text(props["calendar"])
    props["description"] = _text(props["description"], "Free text.")
    props["location"] = _text(props["location"], "Free text.")
    schema.pop("title", None)
    schema["description"] = "The body of createCalendarEvent."
    # allDay defaults to false, so without it the event is a timed one.
    schema["if"] = {"properties": {"allDay": {"const": True}}, "required": ["allDay"]}
    schema["then"] = _times(ALL_DAY_PATTERN)
    schema["else"] = _times(DATE_TIME_PATTERN)
    return schema


def event_update(schema: dict[str, Any]) -> dict[str, Any]:
    """``EventUpdate``'s schema, as the core checks a change: absent means unchanged."""
    props = schema["properties"]
    props["title"] = _title(
        f"1 to {TITLE_MAX} characters after trimming, not blank; not null. No NUL characters."
    )
    props["startsAt"] = _date_time_input(
        f"New start; not null. {_TIMES_DOC} Without allDay in the body, the event's current "
        "allDay decides which form is accepted."
    )
    props["endsAt"] = _date_time_input(
        f"New exclusive end; not null. {_TIMES_DOC} The event as changed must not end before it "
        "starts."
    )
    props["allDay"] = {
        "type": "boolean",
        "description": "Turn the event into an all-day event or back; not null. The times it "
        "keeps (or those sent) must suit the new kind: dates or midnights for all-day events.",
    }
    props["description"] = _text(props["description"], "Free text; null clears it.")
    props["location"] = _text(props["location"], "Free text; null clears it.")
    for name in props:
        props[name].pop("default", None)  # absent means "unchanged", not a default value
    schema.pop("title", None)
    schema["description"] = (
        "The body of updateCalendarEvent: only the fields sent change; the event as changed is "
        "validated as a whole. Moving an event to another calendar is not supported in v1."
    )
    # Without allDay in the body, either form may be right (the event's current allDay
    # decides), so the properties above take both; allDay in the body narrows them.
    schema["allOf"] = [_all_day_rule(True), _all_day_rule(False)]
    return schema
