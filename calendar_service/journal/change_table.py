"""The ``changes`` table (migration 0014): one row per change to an event.

A row keeps what the API showed (``before``, ``after``: the event as a get showed it, JSON) and
what an undo needs (``rows``: the event rows the change touched, as stored before and after,
JSON), who made it (``actor_type``, ``actor_id``; names are read with the list, from the key
or the owner) and through what (``transport``, ``request_id``). ``seq`` is the order the rows
were written in (SQLite's rowid); ``id`` the public ``chg_…``.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, Index, Integer, String, Table, Text
from sqlmodel import Field, SQLModel

from calendar_service.platform.models import UTCDateTime

CREATED = "created"
UPDATED = "updated"
DELETED = "deleted"
KINDS = (CREATED, UPDATED, DELETED)

# Who made a change (``actor.type``). A key's row says ``key``; a connected app's grant is a key
# too, and is shown as ``app`` (read with the list, from the key's kind).
KEY = "key"
APP = "app"
OWNER = "owner"
SYSTEM = "system"
ATTENDEE = "attendee"  # an attendee's reply to an invitation (``mail.replies``)
GUEST = "guest"  # a guest booking through a scheduling link (``calendar.booking``)

# Through what (``transport``): an import is ``import`` whoever made it (REST or the CLI).
TRANSPORTS = ("rest", "mcp", "caldav", "settings", "cli", "import", "link")


class Change(SQLModel, table=True):
    """One change to an event (``journal.change_record``)."""

    __tablename__ = "changes"
    # One secondary index: every create writes a row. The lists, the purge and the look-up
    # of one change (its id carries its time: ``record.new_change_id``) go through it.
    __table_args__ = (Index("ix_changes_user_at", "user_id", "at"),)

    seq: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    id: str = Field(sa_column=Column(String(40), nullable=False))
    user_id: str = Field(max_length=40)  # the owner (no foreign key: the log outlives rows)
    at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    kind: str = Field(max_length=16)  # KINDS
    event_id: str = Field(max_length=64)  # the event, series or occurrence it names
    recurring_event_id: str | None = Field(default=None, max_length=64)  # an occurrence's series
    new_series_id: str | None = Field(default=None, max_length=64)  # a split's new series
    calendar_id: str = Field(max_length=40)
    actor_type: str = Field(max_length=16)
    actor_id: str | None = Field(default=None, max_length=40)  # a key's id, the owner's id
    transport: str = Field(max_length=16)
    request_id: str | None = Field(default=None, max_length=64)
    before: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # JSON
    after: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # JSON
    # More of the public change, JSON: a split's ``newSeries``, a series edit's ``occurrences``.
    detail: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    rows: str = Field(sa_column=Column(Text, nullable=False))  # JSON: what an undo restores
    undoes: str | None = Field(default=None, max_length=40)
    undone_by: str | None = Field(default=None, max_length=40)


def _table() -> Table:
    table: Table = Change.__table__  # type: ignore[attr-defined]
    return table


changes_t = _table()
