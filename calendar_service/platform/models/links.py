"""Scheduling links (migration 0030): a link a key hands a person to pick a time, and the
bookings made through it. The link's token and each booking's manage token are kept as their
SHA-256 only (``calendar.links``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, String, Text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field


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
