"""Availability's public shapes: the free/busy and free-time questions and their answers,
and the busy times a create with ``ifFree`` conflicts with (see
``calendar_service.calendar.availability``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field as PydanticField

from calendar_service.platform.models.connections import Source
from calendar_service.platform.models.wire import INPUT_TIME, Input, Wire

_BOUND_DOC = "RFC 3339 date-time, or a date (that day's midnight). Without an offset it is read in "
_BUSY_BOUND_DOC = _BOUND_DOC + "the first calendar's time zone."
_FREE_BOUND_DOC = _BOUND_DOC + "timeZone (default: the first calendar's)."
_CALENDAR_IDS_DOC = (
    "The calendars to look at (at most 50); default: every calendar the key reaches, the "
    "default calendar first."
)


class FreeBusyQuery(Input):
    """The body of ``POST /api/v1/calendar/freeBusy`` (``queryFreeBusy``)."""

    time_min: str = PydanticField(description=_BUSY_BOUND_DOC, json_schema_extra=INPUT_TIME)
    time_max: str = PydanticField(
        description=_BUSY_BOUND_DOC + " Exclusive; at most 92 days after timeMin.",
        json_schema_extra=INPUT_TIME,
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description=_CALENDAR_IDS_DOC,
        json_schema_extra={"minItems": 1, "maxItems": 50},
    )


class WorkingHours(Input):
    """When slots may be: from ``start`` to ``end`` local time on ``days``."""

    start: str = PydanticField(
        description="Local time HH:MM (24-hour clock) the working day starts, e.g. 09:00.",
        json_schema_extra={"pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    )
    end: str = PydanticField(
        description="Local time HH:MM it ends (exclusive, after start; 24:00 for midnight).",
        json_schema_extra={"pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    )
    days: list[str] | None = PydanticField(
        default=None,
        description="Working days, each once, of MO TU WE TH FR SA SU; default MO to FR.",
        json_schema_extra={"minItems": 1, "maxItems": 7, "uniqueItems": True},
    )


class FreeTimeQuery(Input):
    """The body of ``POST /api/v1/calendar/freeTime`` (``findFreeTime``)."""

    time_min: str = PydanticField(description=_FREE_BOUND_DOC, json_schema_extra=INPUT_TIME)
    time_max: str = PydanticField(
        description=_FREE_BOUND_DOC + " Exclusive; at most 92 days after timeMin.",
        json_schema_extra=INPUT_TIME,
    )
    # Any: the core reads it (``availability.whole_number``) as JSON Schema's integer, which takes
    # 30.0 too; 30.5, true and "30" are refused there.
    duration_minutes: Any = PydanticField(
        description="How long the free time must be: 1 to 1440 minutes.",
        json_schema_extra={"type": "integer", "minimum": 1, "maximum": 1440},
    )
    calendar_ids: list[str] | None = PydanticField(
        default=None,
        description=_CALENDAR_IDS_DOC + " A slot is free in every one of them.",
        json_schema_extra={"minItems": 1, "maxItems": 50},
    )
    time_zone: str | None = PydanticField(
        default=None,
        description="IANA time zone of the slots, the working hours and bounds without an "
        "offset (default: the first calendar's), e.g. Europe/Berlin.",
    )
    working_hours: WorkingHours | None = PydanticField(
        default=None, description="Only slots within these local hours (default: any time)."
    )
    attendees: list[str] | None = PydanticField(
        default=None,
        description="Emails of other owners here: the busy time of those who share it with "
        "you counts too. The answer names whose was considered, and whose is unknown.",
        json_schema_extra={"maxItems": 20},
    )
    limit: Any = PydanticField(
        default=None,
        description="At most this many slots: 1 to 100, default 10.",
        json_schema_extra={
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": 100}, {"type": "null"}]
        },
    )


class Interval(Wire):
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(
        description="Exclusive end.", json_schema_extra={"format": "date-time"}
    )


class CalendarBusy(Wire):
    id: str
    name: str
    busy: list[Interval] = PydanticField(
        description="Busy intervals, merged (overlapping or touching ones are one), clipped to "
        "the window, in time order, in the calendar's time zone."
    )


_SOURCES_DOC = (
    "The owner's connected calendars counted (docs/connections.md), each with when it was "
    "last read and whether that is stale (older than three polls)."
)


class FreeBusyPublic(Wire):
    time_min: str = PydanticField(json_schema_extra={"format": "date-time"})
    time_max: str = PydanticField(json_schema_extra={"format": "date-time"})
    calendars: list[CalendarBusy]
    sources: list[Source] = PydanticField(description=_SOURCES_DOC)


class FreeTimePublic(Wire):
    time_zone: str = PydanticField(description="The zone the slots are shown and found in.")
    slots: list[Interval] = PydanticField(
        description="Start times, earliest first, on a grid of 15 minutes (or of the duration "
        "when shorter), where every calendar is free for the whole duration (slots may "
        "overlap each other)."
    )
    attendees_considered: list[str] | None = PydanticField(
        default=None,
        description="With attendees: those whose busy time was considered (they share it).",
    )
    attendees_unknown: list[str] | None = PydanticField(
        default=None,
        description="With attendees: those whose time is not known here (no owner of that "
        "address shares their free/busy with you): the slots may not suit them.",
    )
    sources: list[Source] = PydanticField(description=_SOURCES_DOC)


class Conflicting(Wire):
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    id: str | None = PydanticField(default=None, description="Only for keys that may read it.")
    title: str | None = PydanticField(default=None, description="Only for keys that may read it.")
