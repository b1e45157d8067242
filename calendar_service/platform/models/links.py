"""Scheduling links (migration 0030): a link a key hands a person to pick a time, and the
bookings made through it, with their public shapes. The link's token and each booking's manage
token are kept as their SHA-256 only (``calendar.links``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field as PydanticField
from sqlalchemy import Column, String, Text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field
from calendar_service.platform.models.events import TITLE_MAX
from calendar_service.platform.models.wire import INPUT_TIME, Input, Wire


class SchedulingLink(SQLModel, table=True):
    __tablename__ = "scheduling_links"

    id: str = Field(primary_key=True, max_length=40)  # link_…
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    key_id: str = Field(foreign_key="api_keys.id", index=True, max_length=40)
    calendar_id: str = Field(max_length=40)
    token_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    title: str = Field(max_length=500)
    description: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    duration_minutes: int
    time_min: datetime = utc_field()
    time_max: datetime = utc_field()
    guest_email: str | None = Field(default=None, max_length=320)
    guest_name: str | None = Field(default=None, max_length=200)
    uses: int
    uses_left: int
    expires_at: datetime = utc_field()
    created_at: datetime = utc_field()
    revoked_at: datetime | None = utc_field(nullable=True)


class LinkBooking(SQLModel, table=True):
    __tablename__ = "link_bookings"

    id: str = Field(primary_key=True, max_length=40)  # bk_…
    link_id: str = Field(foreign_key="scheduling_links.id", index=True, max_length=40)
    event_id: str = Field(max_length=64)
    manage_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    guest_email: str = Field(max_length=320)
    guest_name: str = Field(max_length=200)
    created_at: datetime = utc_field()
    cancelled_at: datetime | None = utc_field(nullable=True)


links_t = table_of(SchedulingLink)
bookings_t = table_of(LinkBooking)


# ---------------------------------------------------------------------------------------------
# The public shapes (REST, MCP and the OpenAPI document share them). Times are RFC 3339 text.


class GuestInput(Input):
    """Who the link is for, if known."""

    email: str | None = PydanticField(
        default=None, description="Their email.", json_schema_extra={"maxLength": 320}
    )
    name: str | None = PydanticField(
        default=None, description="Their name.", json_schema_extra={"maxLength": 100}
    )


_WHEN = "Date or RFC 3339 date-time (no offset: the calendar's zone)."


class SchedulingLinkCreate(Input):
    """The body of ``createSchedulingLink``."""

    title: str = PydanticField(
        description="The meeting; the event's title.",
        json_schema_extra={"minLength": 1, "maxLength": TITLE_MAX},
    )
    duration_minutes: int = PydanticField(description="Slot length.", ge=1, le=1440)
    time_min: str = PydanticField(description="Slots from. " + _WHEN, json_schema_extra=INPUT_TIME)
    time_max: str = PydanticField(
        description="Slots until (at most 92 days on).", json_schema_extra=INPUT_TIME
    )
    calendar_id: str | None = PydanticField(
        default=None, description="Where bookings go; default: the key's or default calendar."
    )
    description: str | None = PydanticField(
        default=None, description="Shown to the guest.", json_schema_extra={"maxLength": 2000}
    )
    guest: GuestInput | None = PydanticField(default=None, description="Who it is for.")
    uses: int | None = PydanticField(
        default=None, description="Bookings it takes; default 1.", ge=1, le=100
    )
    expires_at: str | None = PydanticField(
        default=None, description="Default: timeMax.", json_schema_extra=INPUT_TIME
    )


class SchedulingLinkCreated(Wire):
    """``createSchedulingLink``'s answer (REST adds the link's other fields)."""

    id: str
    url: str = PydanticField(description="Hand it to the guest: shown once.")
    expires_at: str
    uses_left: int


class GuestPublic(Wire):
    email: str | None = None
    name: str | None = None


class SchedulingLinkPublic(Wire):
    """A scheduling link (its ``url`` in ``createSchedulingLink``'s answer only)."""

    id: str = PydanticField(description="link_…")
    url: str | None = PydanticField(
        default=None,
        description="The page to hand the guest (/book/{token}): in the create's answer only; "
        "the token is its only secret and is not kept.",
    )
    title: str
    duration_minutes: int
    time_min: str
    time_max: str
    calendar_id: str
    uses: int = PydanticField(description="How many bookings it takes in all.")
    uses_left: int = PydanticField(description="How many it still takes.")
    expires_at: str = PydanticField(description="When it stops taking bookings (UTC).")
    status: str = PydanticField(
        description="active; used (no use left); expired; revoked (deleted, or revoked by the "
        "owner).",
        json_schema_extra={"enum": ["active", "used", "expired", "revoked"]},
    )
    created_at: str
    description: str | None = None
    guest: GuestPublic | None = None


class SchedulingLinkList(Wire):
    scheduling_links: list[SchedulingLinkPublic] = PydanticField(
        description="The key's own links, newest first (deleted ones left out)."
    )


class BookingSlot(Wire):
    starts_at: str = PydanticField(description="RFC 3339, in the timeZone asked for.")
    ends_at: str = PydanticField(description="Exclusive end.")


class BookingSlots(Wire):
    """``GET /api/v1/book/{token}/slots``."""

    title: str
    duration_minutes: int
    time_zone: str = PydanticField(description="The zone the slots are shown in.")
    slots: list[BookingSlot] = PydanticField(
        description="The free slots, earliest first, on a 15-minute grid: the link's window, "
        "from now on, narrowed to timeMin and timeMax."
    )
    description: str | None = None


class BookingCreate(Input):
    """The body of ``POST /api/v1/book/{token}``."""

    starts_at: str = PydanticField(
        description="One of the slots' startsAt.", json_schema_extra=INPUT_TIME
    )
    name: str = PydanticField(
        description="The guest's name: one line, 1 to 100 characters, no < or >.",
        json_schema_extra={"minLength": 1, "maxLength": 100},
    )
    email: str = PydanticField(
        description="The guest's email address.", json_schema_extra={"maxLength": 320}
    )


class Booking(Wire):
    id: str = PydanticField(description="bk_…")
    event_id: str
    starts_at: str
    ends_at: str
    manage_url: str = PydanticField(
        description="The guest's page to reschedule or cancel (its token is its secret)."
    )


class BookingCreated(Wire):
    booking: Booking
