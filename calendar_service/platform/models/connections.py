"""Connected calendars (docs/connections.md): the owner's calendars kept elsewhere (an ``ics``
URL or a ``caldav`` server), what the poller last learned of them, and their busy time.

- ``connections``: one connected calendar; its secrets (the URL of an ``ics`` source, the
  password of a ``caldav`` one) sealed (``platform.sealed``), never stored in the clear; the
  poll's state (validators, sync token, lease);
- ``connection_objects``: a ``caldav`` source's objects as last read (href and ETag);
- ``connection_busy``: the busy intervals each object (or the whole ``ics`` file, href ``""``)
  gives within the expansion horizon, as stored UTC text (which sorts in time order).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field as PydanticField
from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, Text, false
from sqlmodel import Field, SQLModel

from calendar_service.platform.models.columns import table_of, utc_field
from calendar_service.platform.models.wire import Wire


class Connection(SQLModel, table=True):
    __tablename__ = "connections"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(index=True, max_length=40)
    kind: str = Field(max_length=10)  # ics | caldav
    name: str = Field(max_length=200)
    url_masked: str = Field(sa_column=Column(Text, nullable=False))
    url_sealed: str = Field(sa_column=Column(Text, nullable=False))
    username: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    password_sealed: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    collection_url: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    visibility: str = Field(default="busy", max_length=10)
    counts_for_availability: bool = True
    status: str = Field(default="pending", max_length=10)  # pending | ok | failing
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    synced_at: datetime | None = utc_field(nullable=True)
    checked_at: datetime | None = utc_field(nullable=True)
    failing_notified: bool = False
    events: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    longest_seconds: int = Field(default=0, sa_column=Column(BigInteger, nullable=False))
    poll_seconds: int = Field(default=300, sa_column=Column(BigInteger, nullable=False))
    etag: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    last_modified: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    sync_token: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    ctag: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    expanded_at: datetime | None = utc_field(nullable=True)
    next_poll_at: datetime = utc_field(index=True)
    lease_owner: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    lease_until: datetime | None = utc_field(nullable=True)
    created_at: datetime = utc_field()


class ConnectionObject(SQLModel, table=True):
    __tablename__ = "connection_objects"

    connection_id: str = Field(primary_key=True, max_length=40)
    href: str = Field(sa_column=Column(Text, primary_key=True))
    etag: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class ConnectionBusy(SQLModel, table=True):
    __tablename__ = "connection_busy"
    __table_args__ = (Index("ix_connection_busy_start", "connection_id", "starts_at"),)

    connection_id: str = Field(primary_key=True, max_length=40)
    href: str = Field(sa_column=Column(Text, primary_key=True))
    starts_at: str = Field(sa_column=Column(Text, primary_key=True))
    ends_at: str = Field(sa_column=Column(Text, primary_key=True))
    # An all-day event's time: busy, but not a meeting for the owner's rules.
    all_day: bool = Field(
        default=False, sa_column=Column(Boolean, nullable=False, server_default=false())
    )


class ConnectionEvent(SQLModel, table=True):
    """A ``details`` connection's event (or series) as the poller wrote it in the mirror
    calendar: the source object (``href``, ``""`` for an ``ics`` file) and UID it came from,
    and a digest of what it was (unchanged: not written again)."""

    __tablename__ = "connection_events"

    connection_id: str = Field(primary_key=True, max_length=40)
    href: str = Field(sa_column=Column(Text, primary_key=True))
    uid_hash: str = Field(primary_key=True, max_length=64)
    event_id: str = Field(max_length=80)
    digest: str = Field(max_length=64)


class MirrorRemoval(SQLModel, table=True):
    """A connection's mirror being removed in steps (``delivery.connection_removals``, 0033):
    its owner, the detached calendar still to delete (NULL: gone), the connection whose
    copy goes too (``removed``: its busy rows and objects; always its event mapping, unless
    it has a mirror again), and the runner that holds it until ``lease_until``."""

    __tablename__ = "mirror_removals"

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(max_length=40)
    connection_id: str = Field(max_length=40)
    calendar_id: str | None = Field(default=None, max_length=40, nullable=True)
    removed: bool = False
    steps: int = Field(default=0, sa_column=Column(Integer, nullable=False))
    created_at: datetime = utc_field()
    runner: str | None = Field(default=None, max_length=80, nullable=True)
    lease_until: datetime | None = utc_field(nullable=True)


connections_t = table_of(Connection)
connection_objects_t = table_of(ConnectionObject)
connection_busy_t = table_of(ConnectionBusy)
connection_events_t = table_of(ConnectionEvent)
mirror_removals_t = table_of(MirrorRemoval)


class Source(Wire):
    """A connected calendar an availability answer counted, and how fresh it is."""

    id: str = PydanticField(description="The connected calendar's id (conn_…).")
    name: str
    synced_at: str | None = PydanticField(
        description="When it was last read successfully (null: not yet)."
    )
    stale: bool = PydanticField(
        description="True when the last successful read is older than three polls (or none "
        "yet): its busy time may be out of date."
    )
