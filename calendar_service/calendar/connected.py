"""Connected calendars as availability sees them (docs/connections.md): the owner's sources
that count for availability, their busy intervals in a window, and how fresh each is.

The poller (``delivery.connections``, ``webhooks.connections``) keeps ``connection_busy``;
this module only reads it. Busy time of a connected calendar is a fact about the owner's day,
so every key of the owner that sees availability counts it (a one-calendar key and a
``freebusy`` key included); titles never leave the source (each interval is times only).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Connection, bindparam, select

from calendar_service.platform.db import Statement
from calendar_service.platform.models.columns import from_db
from calendar_service.platform.models.connections import connection_busy_t, connections_t
from calendar_service.platform.timeutil import format_utc, utc_text

Busy = tuple[str, str, str, str, str]
"""As ``events.busy.Busy``: calendar (here connection) id, start and end (stored UTC text),
event id and title (both empty here)."""

STALE_POLLS = 3
"""A source is stale when its last success is older than this many polls."""


class SourceRow(NamedTuple):
    id: str
    name: str
    synced_at: Any  # driver value, or None
    poll_seconds: int
    longest_seconds: int


_SOURCES = Statement(
    select(
        connections_t.c.id,
        connections_t.c.name,
        connections_t.c.synced_at,
        connections_t.c.poll_seconds,
        connections_t.c.longest_seconds,
    )
    .where(
        connections_t.c.user_id == bindparam("user_id"),
        connections_t.c.counts_for_availability.is_(True),
    )
    .order_by(connections_t.c.created_at, connections_t.c.id)
)

_BUSY_QUERY = select(connection_busy_t.c.starts_at, connection_busy_t.c.ends_at).where(
    connection_busy_t.c.connection_id == bindparam("connection_id"),
    connection_busy_t.c.starts_at >= bindparam("floor"),
    connection_busy_t.c.starts_at < bindparam("high"),
    connection_busy_t.c.ends_at > bindparam("low"),
)
_BUSY = Statement(_BUSY_QUERY)
# Meetings (the owner's rules): not the busy time only all-day events give.
_TIMED_BUSY = Statement(_BUSY_QUERY.where(connection_busy_t.c.all_day.is_(False)))


def counted_sources(conn: Connection, *, user_id: str) -> list[SourceRow]:
    """The owner's connected calendars that count for availability, oldest first."""
    return [SourceRow(*r) for r in _SOURCES.all(conn, user_id=user_id)]


def connected_busy(
    conn: Connection,
    *,
    sources: list[SourceRow],
    low: datetime,
    high: datetime,
    timed: bool = False,
) -> list[Busy]:
    """The busy intervals of ``sources`` overlapping ``[low, high)`` (``Busy`` tuples with the
    connection's id as the calendar's, no event id, no title); ``timed``: not those only
    all-day events give."""
    statement = _TIMED_BUSY if timed else _BUSY
    found: list[Busy] = []
    low_text, high_text = utc_text(low), utc_text(high)
    for source in sources:
        floor = utc_text(low - timedelta(seconds=source.longest_seconds))
        for start, end in statement.all(
            conn, connection_id=source.id, floor=floor, high=high_text, low=low_text
        ):
            found.append((source.id, start, end, "", ""))
    return found


def busy_of_owner(
    conn: Connection, *, user_id: str, low: datetime, high: datetime, timed: bool = False
) -> list[Busy]:
    """Every connected busy interval of the owner overlapping ``[low, high)`` (``timed``: but
    those only all-day events give, which are not meetings): for ``ifFree`` and the owner's
    rules, which count connected busy time beside the calendars'."""
    sources = counted_sources(conn, user_id=user_id)
    return connected_busy(conn, sources=sources, low=low, high=high, timed=timed)


def source_public(source: SourceRow, *, now: datetime) -> dict[str, Any]:
    """``Source``: the id, name, last success and whether it is stale."""
    synced = from_db(source.synced_at) if source.synced_at is not None else None
    stale = synced is None or now - synced > STALE_POLLS * timedelta(seconds=source.poll_seconds)
    return {
        "id": source.id,
        "name": source.name,
        "syncedAt": format_utc(synced) if synced is not None else None,
        "stale": stale,
    }
