"""The iCalendar tables: subscription feeds, their fetches, and the UIDs of imported events."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, String, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import serial_id, table_of, utc_field


class IcalFeed(SQLModel, table=True):
    """A calendar's iCalendar subscription feed (``/ical/<token>.ics``). The URL's token is
    the secret: only its SHA-256 is stored, so a copy of this table subscribes nobody."""

    __tablename__ = "ical_feeds"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    # No foreign key: a feed revoked with its deleted calendar keeps it, and its history.
    calendar_id: str = Field(max_length=40)
    token_hash: str = Field(sa_column=Column(String(64), nullable=False, unique=True))
    prefix: str = Field(max_length=40)  # the token's first characters, to tell feeds apart
    created_at: datetime = utc_field()
    revoked_at: datetime | None = utc_field(nullable=True)
    last_fetched_at: datetime | None = utc_field(nullable=True)


class IcalFeedFetch(SQLModel, table=True):
    """One fetch of a feed: its own history, which its owner reads (never the URL)."""

    __tablename__ = "ical_feed_fetches"
    __table_args__ = (Index("ix_ical_feed_fetches_feed_at", "feed_id", "at"),)

    id: int | None = serial_id()
    feed_id: str = Field(foreign_key="ical_feeds.id", max_length=40)
    at: datetime = utc_field()
    status: int  # 200, or 304 (the client's copy was current)
    events: int  # VEVENTs served (0 for a 304)
    client_addr: str | None = Field(default=None, max_length=64)
    user_agent: str | None = Field(default=None, max_length=512)


class IcalUid(SQLModel, table=True):
    """The iCalendar UID (and RECURRENCE-ID, for an occurrence imported on its own) an event
    was imported with, per calendar: what makes importing the same file twice a no-op, and
    the UID the feed gives the event back under. ``object_name``: the name a calendar app
    PUT the event's object under over CalDAV, when it is not ``<UID>.ics`` (``caldav.objects``);
    indexed for the rows that have one only."""

    __tablename__ = "ical_uids"
    __table_args__ = (
        UniqueConstraint("calendar_id", "uid_hash", name="uq_ical_uids_calendar"),
        Index(
            "ix_ical_uids_object_name",
            "calendar_id",
            "object_name",
            sqlite_where=text("object_name IS NOT NULL"),
            postgresql_where=text("object_name IS NOT NULL"),
        ),
    )

    id: int | None = serial_id()
    calendar_id: str = Field(foreign_key="calendars.id", max_length=40)
    uid_hash: str = Field(max_length=64)  # sha256 hex of the UID (and RECURRENCE-ID)
    uid: str = Field(sa_column=Column(Text, nullable=False))
    event_id: str = Field(sa_column=Column(String(64), nullable=False, index=True))
    object_name: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


feeds_t = table_of(IcalFeed)
fetches_t = table_of(IcalFeedFetch)
ical_uids_t = table_of(IcalUid)
