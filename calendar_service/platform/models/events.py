"""An event: its table, the tables incremental sync reads, and its public shapes.

One family: ``Event`` (the table), ``EventCreate`` and ``EventUpdate`` (what a caller sends),
``EventPublic`` (what every front answers), ``CancelledEvent`` and ``EventList`` (the list's
and sync's answer). Hot paths read and write the table with SQLAlchemy Core statements
(``events_t``), not ORM objects.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field as PydanticField
from sqlalchemy import BigInteger, Column, Index, Integer, String, Text, text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.calendars import DEFAULT_CALENDAR_NAME, CalendarPublic
from calendar_service.platform.models.columns import table_of, utc_field
from calendar_service.platform.models.wire import INPUT_TIME, Input, Wire
from calendar_service.platform.schema_patterns import MAX_LINE
from calendar_service.platform.timeutil import RANGE_TEXT

TITLE_MAX = 300


SERIES_ROWS = text("recurrence IS NOT NULL")
"""The rows that are series (the partial index ``ix_events_series`` holds only them)."""
EXCEPTION_ROWS = text("recurring_event_id IS NOT NULL")
"""The rows that are exceptions of a series (``ix_events_recurring`` holds only them)."""


class Event(SQLModel, table=True):
    """A single event, a series (``recurrence`` set) or an exception of a series (a changed or
    cancelled occurrence: ``recurring_event_id`` and ``original_starts_at`` set, ``id`` the
    occurrence id). See ``calendar_service.calendar.recurrence``."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_calendar_start", "calendar_id", "starts_at", "id"),
        # The list finds the series that may occur in a window here, without reading their
        # rows (queries.SERIES_KEYS); only series rows are in it.
        Index(
            "ix_events_series",
            "calendar_id",
            "starts_at",
            "recurrence_ends_at",
            "id",
            "updated_at",
            sqlite_where=SERIES_ROWS,
            postgresql_where=SERIES_ROWS,
        ),
        # A series' exceptions, by series (migration 0023: the exceptions' rows only).
        Index(
            "ix_events_recurring",
            "recurring_event_id",
            "original_starts_at",
            sqlite_where=EXCEPTION_ROWS,
            postgresql_where=EXCEPTION_ROWS,
        ),
    )

    # 64: an occurrence id is its series' id, "_" and a 16-character UTC stamp.
    id: str = Field(primary_key=True, max_length=64)
    calendar_id: str = Field(foreign_key="calendars.id", max_length=40)
    title: str = Field(max_length=TITLE_MAX)
    starts_at: datetime = utc_field()
    ends_at: datetime = utc_field()
    all_day: bool = False
    description: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    location: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = utc_field()
    updated_at: datetime = utc_field()
    # Series: the normalized RFC 5545 lines (JSON array); starts_at/ends_at are DTSTART/DTEND.
    recurrence: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # Series: the start of the rule's last instance and the end of the last occurrence,
    # computed when written (NULL: endless).
    recurrence_last_start: datetime | None = utc_field(nullable=True)
    recurrence_ends_at: datetime | None = utc_field(nullable=True)
    # Exceptions: the series and the occurrence's original start.
    recurring_event_id: str | None = Field(default=None, max_length=64)
    original_starts_at: datetime | None = utc_field(nullable=True)
    # "confirmed" | "cancelled" (a cancelled occurrence of a series)
    status: str = Field(
        default="confirmed",
        sa_column=Column(String(16), nullable=False, server_default="confirmed"),
    )
    # "opaque" (busy: the default) | "transparent" (shown, but free time): Google's field.
    transparency: str = Field(
        default="opaque",
        sa_column=Column(String(16), nullable=False, server_default="opaque"),
    )
    # Timed series: the IANA zone whose wall clock it repeats at, when not its calendar's
    # (Google's start.timeZone); NULL: the calendar's zone.
    time_zone: str | None = Field(default=None, max_length=64)
    # Events with people (migration 0018): JSON {"organizer", "attendees", "sequence"}
    # (``calendar_service.attendees``); NULL for an event without attendees, as most are.
    attendees: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class EventSync(SQLModel, table=True):
    """The last change of each event changed in the last ``CALENDAR_SYNC_RETENTION_DAYS``: what a
    sync token's next sync returns (``events.sync``). Written by triggers on ``events``
    (migration 0009), whatever wrote the event; a deleted event's row is its tombstone.

    ``seq`` is when the change was made, in the order sync tokens read: on PostgreSQL the
    writing transaction's id (``pg_current_xact_id()``), compared with the snapshot a token
    holds; on SQLite the next value of ``sync_clock`` (one writer at a time). See docs/sync.md."""

    __tablename__ = "event_sync"
    __table_args__ = (Index("ix_event_sync_calendar_seq", "calendar_id", "seq", "event_id"),)

    event_id: str = Field(primary_key=True, max_length=64)
    calendar_id: str = Field(max_length=40)
    seq: int = Field(sa_column=Column(BigInteger, nullable=False))
    deleted: bool = False
    changed_at: datetime = utc_field()


class SyncClock(SQLModel, table=True):
    """SQLite's change counter (one row): ``event_sync.seq`` of the last change. PostgreSQL
    has the table too but numbers changes by transaction id."""

    __tablename__ = "sync_clock"

    id: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    value: int = Field(sa_column=Column(BigInteger, nullable=False))


events_t = table_of(Event)
event_sync_t = table_of(EventSync)
sync_clock_t = table_of(SyncClock)


_DATE_TIME_DOC = (
    "RFC 3339 date-time, e.g. 2026-03-02T09:30:00+01:00. Without an offset it is read in the "
    "target calendar's time zone. With allDay, a date (2026-03-02) or a midnight date-time. "
    f"From {RANGE_TEXT}."
)


_RECURRENCE_DOC = (
    "Makes a recurring series: RFC 5545 lines as Google Calendar takes them, one RRULE line "
    'plus any EXDATE/RDATE lines, e.g. ["RRULE:FREQ=WEEKLY;BYDAY=MO"] (every Monday at '
    'startsAt\'s time), ["RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;COUNT=10"], '
    '["RRULE:FREQ=MONTHLY;BYDAY=-1FR", "EXDATE:20260327T090000Z"]. FREQ is DAILY, WEEKLY, '
    "MONTHLY or YEARLY; COUNT or UNTIL, not both. startsAt/endsAt are the first occurrence; "
    "the series repeats at the same local time in the calendar's time zone. All-day series "
    "take dates (EXDATE;VALUE=DATE:20260309)."
)


_TIME_ZONE_DOC = (
    "IANA time zone of the event's wall clock, e.g. America/New_York (Google Calendar's "
    "start.timeZone); default: the calendar's. Date-times without an offset are read in it, "
    "and a series repeats at the same local time in it. Timed events only; kept by series, "
    "not by a single event."
)


TRANSPARENCIES = ("opaque", "transparent")
_TRANSPARENCY_DOC = (
    "opaque (default): the event blocks its time; transparent: shown, but its time stays free "
    "for queryFreeBusy and findFreeTime (Google Calendar's field)."
)
_IF_FREE_DOC = (
    "Create the event only if no busy (opaque) event or occurrence of the target calendar "
    "overlaps it, checked atomically with the insert: else 409 conflict with the overlapping "
    "times."
)


_ATTENDEES_DOC = (
    "People invited (at most 100), Google Calendar's field: each {email, name?, optional?, "
    "responseStatus?}. Ask your user before adding people: with sendUpdates=all they get an "
    "email invitation. On PATCH the list replaces the event's ([] removes everyone); an "
    "attendee already on it keeps their response unless one is sent."
)
RESPONSE_STATUSES = ("needsAction", "accepted", "declined", "tentative")


def _response_statuses(schema: dict[str, Any]) -> None:
    for branch in schema["anyOf"]:
        if branch.get("type") == "string":
            branch["enum"] = list(RESPONSE_STATUSES)


class AttendeeInput(Input):
    """An attendee as a caller sends it."""

    email: str = PydanticField(
        description="Email address (international domains welcome).",
        json_schema_extra={"maxLength": 320, "minLength": 3},
    )
    name: str | None = PydanticField(default=None, json_schema_extra={"maxLength": 200})
    optional: bool = PydanticField(default=False, description="An optional attendee.")
    response_status: str | None = PydanticField(
        default=None,
        description="Default needsAction (or the attendee's current one).",
        json_schema_extra=_response_statuses,
    )


class Attendee(Wire):
    email: str
    name: str | None = None
    optional: bool | None = PydanticField(default=None, description="Present when true.")
    response_status: str = PydanticField(json_schema_extra={"enum": list(RESPONSE_STATUSES)})


class Organizer(Wire):
    email: str
    name: str


def _recurrence_lines(schema: dict[str, Any]) -> None:
    """The ``recurrence`` property's array branch with the limits of its lines, which the core
    checks (``recurrence.parse_recurrence``): published by every front that shows the schema
    (the OpenAPI document, the MCP tools' input schemas)."""
    for branch in schema["anyOf"]:
        if branch.get("type") == "array":
            branch["minItems"] = 1
            branch["items"] = {"type": "string", "minLength": 1, "maxLength": MAX_LINE}


class EventCreate(Input):
    """CreateEvent: the body of ``POST /api/v1/calendar/events``."""

    title: str = PydanticField(
        description="1 to 300 characters after trimming.",
        json_schema_extra={"maxLength": TITLE_MAX, "minLength": 1},
    )
    starts_at: str = PydanticField(description=_DATE_TIME_DOC, json_schema_extra=INPUT_TIME)
    ends_at: str = PydanticField(
        description=_DATE_TIME_DOC + " Must not be before startsAt.",
        json_schema_extra=INPUT_TIME,
    )
    calendar_id: str | None = PydanticField(
        default=None, description="Identifier of the target calendar."
    )
    calendar: str | None = PydanticField(
        default=None,
        description=(
            "Name of the target calendar (default: the key's calendar, or "
            f"{DEFAULT_CALENDAR_NAME!r} for an all-calendars key). If calendarId is also sent, "
            "both must name the same one."
        ),
        json_schema_extra={"default": DEFAULT_CALENDAR_NAME},
    )
    all_day: bool = False
    description: str | None = None
    location: str | None = None
    recurrence: list[str] | None = PydanticField(
        default=None, description=_RECURRENCE_DOC, json_schema_extra=_recurrence_lines
    )
    transparency: str = PydanticField(
        default="opaque",
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    if_free: bool = PydanticField(default=False, description=_IF_FREE_DOC)
    attendees: list[AttendeeInput] | None = PydanticField(
        default=None, description=_ATTENDEES_DOC, json_schema_extra={"maxItems": 100}
    )
    time_zone: str | None = PydanticField(
        default=None, description=_TIME_ZONE_DOC, json_schema_extra={"maxLength": 64}
    )


class EventUpdate(Input):
    """The body of ``PATCH /api/v1/calendar/events/{eventId}``: only the fields sent change."""

    title: str | None = PydanticField(default=None, json_schema_extra={"maxLength": TITLE_MAX})
    starts_at: str | None = PydanticField(default=None, json_schema_extra=INPUT_TIME)
    ends_at: str | None = PydanticField(default=None, json_schema_extra=INPUT_TIME)
    all_day: bool | None = None
    description: str | None = None
    location: str | None = None
    recurrence: list[str] | None = PydanticField(
        default=None,
        description=_RECURRENCE_DOC
        + " On a series: the new rule (null turns the series into a single event).",
        json_schema_extra=_recurrence_lines,
    )
    transparency: str | None = PydanticField(
        default=None,
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    time_zone: str | None = PydanticField(
        default=None,
        description=_TIME_ZONE_DOC
        + " On a series: the zone it repeats in from now on (its startsAt stays the same "
        "instant unless sent too); null: its calendar's.",
        json_schema_extra={"maxLength": 64},
    )
    attendees: list[AttendeeInput] | None = PydanticField(
        default=None, description=_ATTENDEES_DOC, json_schema_extra={"maxItems": 100}
    )


class EventPublic(Wire):
    id: str
    calendar_id: str
    calendar: str = PydanticField(description="Name of the event's calendar.")
    title: str
    starts_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    ends_at: str = PydanticField(
        description="Exclusive end; for all-day events the midnight after the last day.",
        json_schema_extra={"format": "date-time"},
    )
    all_day: bool
    description: str | None
    location: str | None
    created_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    updated_at: str = PydanticField(json_schema_extra={"format": "date-time"})
    transparency: str = PydanticField(
        description=_TRANSPARENCY_DOC,
        json_schema_extra={"enum": list(TRANSPARENCIES)},
    )
    recurrence: list[str] | None = PydanticField(
        default=None,
        description="Series only (singleEvents=false, or a get of the series' id): its "
        "RFC 5545 lines, normalized (EXDATE/RDATE and UNTIL in UTC, or dates for all-day).",
    )
    time_zone: str | None = PydanticField(
        default=None,
        description="Series only: the IANA zone whose wall clock it repeats at (its own, "
        "or its calendar's).",
    )
    recurring_event_id: str | None = PydanticField(
        default=None,
        description="Occurrences of a series only: the series' id. An occurrence's id is "
        "<seriesId>_<original start, UTC basic format> (<seriesId>_<YYYYMMDD> all-day).",
    )
    original_starts_at: str | None = PydanticField(
        default=None,
        description="Occurrences of a series only: the start the rule gave it (it keeps it "
        "when moved).",
        json_schema_extra={"format": "date-time"},
    )

    # Loose types here (the OpenAPI document names ``Organizer`` and ``Attendee``): the MCP
    # tools' output schemas, which every model reads, stay short.
    organizer: dict[str, str] | None = PydanticField(
        default=None, description="Events with attendees: the owner, who invites them."
    )
    attendees: list[dict[str, Any]] | None = PydanticField(
        default=None, description="Events with attendees only: who is invited, and replies."
    )
    sequence: int | None = PydanticField(
        default=None,
        description="Events with attendees only: iCalendar's SEQUENCE, which grows with each "
        "change of time, place or attendees.",
    )


class CancelledEvent(Wire):
    """In a sync only: an event deleted, or an occurrence of a series cancelled, since the
    sync token was issued."""

    id: str
    status: Literal["cancelled"]
    recurring_event_id: str | None = PydanticField(
        default=None, description="A cancelled occurrence only: its series' id."
    )
    original_starts_at: str | None = PydanticField(
        default=None,
        description="A cancelled occurrence only: the start the rule gave it.",
        json_schema_extra={"format": "date-time"},
    )


class EventList(Wire):
    calendars: list[CalendarPublic] = PydanticField(
        description="The calendars accessible to the key."
    )
    events: list[EventPublic | CancelledEvent] = PydanticField(
        description="Events overlapping [timeMin, timeMax), ordered by startsAt then id. With "
        "syncToken: the events created, changed or deleted since, in the order of the changes "
        "(deleted ones, and cancelled occurrences, as status cancelled)."
    )
    next_page_token: str | None = PydanticField(
        default=None, description="Present when more events remain: pass it back as pageToken."
    )
    next_sync_token: str | None = PydanticField(
        default=None,
        description="On the last page: pass it back as syncToken later to get every change "
        "made since this list (or sync) began. Opaque; expires after "
        "CALENDAR_SYNC_RETENTION_DAYS (default 30), then 410 sync_token_expired.",
    )
