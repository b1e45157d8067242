"""A calendar: its table and its public shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field as PydanticField
from sqlalchemy import BigInteger, Column, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field
from calendar_service.platform.models.wire import Wire
from calendar_service.platform.schema_patterns import COLOR_PATTERN

DEFAULT_CALENDAR_NAME = "Личное"


class Calendar(SQLModel, table=True):
    __tablename__ = "calendars"
    __table_args__ = (
        UniqueConstraint("user_id", "name", name="uq_calendars_user_name"),
        Index(
            "uq_calendars_dav_name",
            "user_id",
            "dav_name",
            unique=True,
            sqlite_where=text("dav_name IS NOT NULL"),
            postgresql_where=text("dav_name IS NOT NULL"),
        ),
        # The owner's default calendar in one step (an all-calendars key's create; 0031).
        Index("ix_calendars_user_default", "user_id", "is_default"),
        Index(
            "uq_calendars_connection_id",
            "connection_id",
            unique=True,
            sqlite_where=text("connection_id IS NOT NULL"),
            postgresql_where=text("connection_id IS NOT NULL"),
        ),
    )

    id: str = Field(primary_key=True, max_length=40)
    # NULL: a connection's mirror detached for its removal (``delivery.connection_removals``):
    # no reader of an owner's calendars finds it while a job deletes it in steps (0033).
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40, nullable=True)
    name: str = Field(max_length=200)
    time_zone: str = Field(default="UTC", max_length=64)
    is_default: bool = False
    # Longest event ever stored in this calendar (seconds). It only grows; the list query uses
    # it to bound ``starts_at`` from below so that the index does the overlap work.
    max_event_seconds: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    # Counts the changes of the calendar's series and their exceptions, kept by triggers on
    # ``events`` (migration 0006): the list reads a calendar's series from memory while it is
    # unchanged (``events.queries.window_series``). 0: the calendar never had a series.
    series_version: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, server_default="0")
    )
    created_at: datetime = utc_field()
    # "#rrggbb" (lower case), or NULL: none chosen.
    color: str | None = Field(default=None, max_length=7)
    # The name a calendar app made it under over CalDAV (MKCALENDAR: its path segment under
    # the calendar home, ``caldav.resources``), or NULL: it is served at its id.
    dav_name: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # A connected calendar shown with ``visibility: details`` (docs/connections.md): its
    # connection (``conn_…``) and kind (``ics`` | ``caldav``). Such a calendar is read-only:
    # only the poller writes its events. NULL: the owner's own calendar.
    connection_id: str | None = Field(default=None, max_length=40)
    connection_kind: str | None = Field(default=None, max_length=10)


calendars_t = table_of(Calendar)

# What the core reads of a calendar (``calendars.CalendarRow``, in its order).
ROW_COLUMNS = (
    calendars_t.c.id,
    calendars_t.c.name,
    calendars_t.c.time_zone,
    calendars_t.c.is_default,
    calendars_t.c.max_event_seconds,
    calendars_t.c.series_version,
    calendars_t.c.color,
    calendars_t.c.connection_id,
    calendars_t.c.connection_kind,
)


def _color_branch(schema: dict[str, Any]) -> None:
    """``color``'s string branch with the pattern the core checks (``calendars.check_color``)."""
    for branch in schema["anyOf"]:
        if branch.get("type") == "string":
            branch["pattern"] = COLOR_PATTERN


class CalendarSource(Wire):
    """The connected calendar a read-only calendar mirrors."""

    connection_id: str = PydanticField(description="The connected calendar (conn_…).")
    kind: str = PydanticField(description="ics or caldav.")


class CalendarPublic(Wire):
    id: str
    name: str
    time_zone: str = PydanticField(description="IANA time zone, e.g. Europe/Berlin")
    is_default: bool
    color: str | None = PydanticField(
        description="The calendar's colour as #rrggbb (lower case), or null: none chosen.",
        json_schema_extra=_color_branch,
    )
    read_only: bool = PydanticField(
        default=False,
        description="True for a connected calendar shown in full: its events are read, never "
        "written (writes are 409 read_only_calendar).",
    )
    source: CalendarSource | None = PydanticField(
        default=None,
        description="Where a read-only calendar's events come from; absent for the owner's "
        "own calendars.",
    )
