"""Incremental sync: the changes since a sync token, and the tokens themselves.

Triggers on ``events`` (migration 0009) keep ``event_sync``: one row per event changed lately,
with ``seq``, when it changed, and a tombstone for a deleted one. A token is a *position*:
which changes it has seen. It is read as a snapshot, ``(xmin, xmax, xip)``: a change ``seq``
was seen when ``seq < xmax`` and ``seq`` is not in ``xip`` (every ``seq < xmin`` was seen).

- PostgreSQL: ``seq`` is the writing transaction's id and the position is the database's own
  snapshot (``pg_current_snapshot()``). Transaction ids are handed out in one order and
  committed in another; a snapshot lists the ones still running (``xip``), so a change made by
  a transaction that was running when the token was issued is in the next sync, whatever its
  id, once it commits.
- SQLite: one writer at a time, ``seq`` counts the changes (``sync_clock``) and the position is
  ``(last + 1, last + 1, ())``: what a reader sees is always a prefix of the count. A group
  commit's calls share one transaction: a position read inside it counts the group's changes,
  and is only answered once the group has committed (or read again if it was rolled back).

A sync returns the rows seen by the position taken at its first page (``to``) but not by the
token's (``from``), in ``(seq, event_id)`` order, a page at a time; the last page's
``nextSyncToken`` is ``to``. A row changed again while the pages are read moves past ``to``
and waits for the next sync. docs/sync.md tells the whole story.

Tokens are signed like page tokens (``tokens``), bound to what the key reaches (its owner and
calendar, not the key itself: a new key with the same reach carries on), and carry the time
they were issued (to the minute): older than the retention, 410 ``sync_token_expired``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Connection, and_, delete, or_, select, text

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import (
    accessible_calendars,
    calendar_public,
    chosen_calendars,
)
from calendar_service.calendar.event_input import parse_list_params
from calendar_service.calendar.events.queries import EVENT_COLUMNS
from calendar_service.calendar.events.series import CANCELLED
from calendar_service.calendar.events.shapes import event_public
from calendar_service.calendar.page_tokens import signed, verified
from calendar_service.platform.db import Statement
from calendar_service.platform.errors import FieldError, SyncTokenExpired, ValidationFailed
from calendar_service.platform.lru import Lru
from calendar_service.platform.models.events import event_sync_t, events_t, sync_clock_t
from calendar_service.platform.timeutil import format_in, utcnow, zone

DEFAULT_RETENTION_DAYS = 30
PURGE_MARGIN = timedelta(days=1)
"""Rows are kept this much longer than tokens are honoured: a change is stamped when its
transaction makes it and may commit a little later than a token issued meanwhile."""

SYNC_PAGE_PREFIX = "~"
"""Starts a sync's page tokens (never a list's: base64url has no ``~``)."""

_TOKEN_MAX = 16384
_XIP_MOST = 4096


class Position(NamedTuple):  # a tuple: made on every list's first page
    """Which changes a token has seen (see the module's docstring); ``at``: when it was
    taken, in Unix seconds."""

    xmin: int
    xmax: int
    xip: tuple[int, ...]
    at: int

    def compact(self) -> list[Any]:
        return [self.xmin, self.xmax, list(self.xip), self.at]

    @classmethod
    def from_compact(cls, value: Any) -> Position | None:
        """The position a token carried, or ``None`` if it is not one."""
        if not isinstance(value, list) or len(value) != 4:
            return None
        xmin, xmax, xip, at = value
        ints = (xmin, xmax, at)
        if not all(type(v) is int and v >= 0 for v in ints) or not isinstance(xip, list):
            return None
        if len(xip) > _XIP_MOST or not all(type(x) is int and xmin <= x < xmax for x in xip):
            return None
        if xmin > xmax:
            return None
        return cls(xmin, xmax, tuple(xip), at)


_CLOCK = Statement(select(sync_clock_t.c.value).where(sync_clock_t.c.id == 1))
_SNAPSHOT = Statement(text("SELECT pg_current_snapshot()::text"))


TAKEN_EVERY = 60
"""A position's time (``at``) is taken to the minute: between two changes, every list of one
reach in one minute ends with the same token, made once (``encode_sync_token``). A token may
so read up to a minute older than it is, and expire up to a minute early (docs/sync.md)."""


def current_position(conn: Connection) -> Position:
    """The changes committed now, as a token holds them: one small statement."""
    at = int(time.time()) // TAKEN_EVERY * TAKEN_EVERY
    if conn.dialect.name == "postgresql":
        found = _SNAPSHOT.first(conn)[0]
        xmin, xmax, xip = found.split(":")
        running = tuple(int(x) for x in xip.split(",") if x)
        return Position(int(xmin), int(xmax), running, at)
    row = _CLOCK.first(conn)
    last = int(row[0]) if row is not None else 0
    return Position(last + 1, last + 1, (), at)


def _scope(principal: Principal, kind: str, chosen: Sequence[str] | None = None) -> bytes:
    """What a sync token is bound to: the key's reach (owner and calendar), its kind, and the
    calendars a narrowed list named (``chosen``: their ids)."""
    parts = [kind, principal.user_id, principal.calendar_id or ""]
    if chosen is not None:
        parts.append("calendars:" + ",".join(sorted(chosen)))
    return "\x1f".join(parts).encode()


def _encode(key: bytes, query: bytes, payload: Any) -> str:
    return signed(key, query, orjson.dumps(payload))


def _decode(key: bytes, query: bytes, token: str) -> Any:
    """The payload of a token this server made for ``query``, else ``None``."""
    payload = verified(key, query, token, most=_TOKEN_MAX)
    if payload is None:
        return None
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None


def _bad(field: str, what: str) -> ValidationFailed:
    return ValidationFailed(
        [
            FieldError(
                field,
                f"is not a {what} this server issued for this key's calendars (and the same "
                "calendarIds); " + "list the events again without it to get a new nextSyncToken",
            )
        ]
    )


# Made tokens, by what makes them: between two changes every list of one reach in one minute
# ends with the same token (a pure function of its key, so any request may fill and read it).
_MADE = Lru(1024)


def encode_sync_token(
    key: bytes, principal: Principal, position: Position, chosen: Sequence[str] | None = None
) -> str:
    """``nextSyncToken``: ``position``, signed and bound to the key's reach (and to the
    calendars ``chosen`` of a narrowed list: its sync must name the same ones)."""
    made = (key, principal.user_id, principal.calendar_id, position, _chosen_key(chosen))
    token: str | None = _MADE.get(made)
    if token is None:
        token = _encode(key, _scope(principal, "sync", chosen), position.compact())
        _MADE.put(made, token)
    return token


def _chosen_key(chosen: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if chosen is None else tuple(sorted(chosen))


def decode_sync_token(
    key: bytes, principal: Principal, token: str, chosen: Sequence[str] | None = None
) -> Position:
    position = Position.from_compact(_decode(key, _scope(principal, "sync", chosen), token))
    if position is None:
        raise _bad("syncToken", "sync token")
    return position


def _encode_page(
    key: bytes, principal: Principal, payload: list[Any], chosen: Sequence[str] | None
) -> str:
    return SYNC_PAGE_PREFIX + _encode(key, _scope(principal, "sync-page", chosen), payload)


def _decode_page(
    key: bytes, principal: Principal, token: str, chosen: Sequence[str] | None
) -> tuple[Position, Position, int, str]:
    scope = _scope(principal, "sync-page", chosen)
    payload = _decode(key, scope, token[len(SYNC_PAGE_PREFIX) :])
    if isinstance(payload, list) and len(payload) == 4:
        start, end = Position.from_compact(payload[0]), Position.from_compact(payload[1])
        seq, event_id = payload[2], payload[3]
        if start and end and type(seq) is int and isinstance(event_id, str):
            return start, end, seq, event_id
    raise _bad("pageToken", "page token of a sync")


def _check_age(position: Position, now: datetime, days: int) -> None:
    if now.timestamp() - position.at > days * 86400:
        raise SyncTokenExpired(days)


_ROW_COLUMNS = (
    event_sync_t.c.seq.label("sync_seq"),
    event_sync_t.c.event_id.label("sync_event_id"),
    event_sync_t.c.calendar_id.label("sync_calendar_id"),
    *EVENT_COLUMNS,
)


def _changes(
    conn: Connection,
    calendar_ids: list[str],
    start: Position,
    end: Position,
    after: tuple[int, str] | None,
    size: int,
) -> list[Any]:
    """The rows ``end`` saw and ``start`` did not, in ``(seq, event_id)`` order, after
    ``after``; each with its event as it is now (columns ``None``: deleted)."""
    seq = event_sync_t.c.seq
    unseen = seq >= start.xmax
    if start.xip:
        unseen = or_(unseen, seq.in_(start.xip))
    query = (
        select(*_ROW_COLUMNS)
        .select_from(event_sync_t.outerjoin(events_t, events_t.c.id == event_sync_t.c.event_id))
        .where(
            event_sync_t.c.calendar_id.in_(calendar_ids),
            seq >= start.xmin,  # the index's range: nothing below was unseen
            unseen,
            seq < end.xmax,
        )
    )
    if end.xip:
        query = query.where(seq.not_in(end.xip))
    if after is not None:
        query = query.where(
            seq >= after[0],
            or_(seq > after[0], and_(seq == after[0], event_sync_t.c.event_id > after[1])),
        )
    query = query.order_by(seq, event_sync_t.c.event_id).limit(size + 1)
    return list(conn.execute(query))


def sync_events(
    conn: Connection,
    *,
    principal: Principal,
    sync_token: str | None,
    page_token: str | None = None,
    limit: Any = None,
    token_key: bytes,
    retention_days: int = DEFAULT_RETENTION_DAYS,
    now: datetime | None = None,
    calendar_ids: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """``EventList`` of the changes since ``sync_token`` in the calendars the key reaches
    (those of them ``calendar_ids`` names, as ``list_events`` takes it: the token must come
    from a list or sync that named the same calendars):
    events (series and their exceptions as stored) created or changed, as a get shows them;
    deleted ones as ``{id, status: "cancelled"}``; cancelled occurrences with their
    ``recurringEventId`` and ``originalStartsAt`` too. Paged like a list (``page_token``: a
    sync's ``nextPageToken``); the last page carries ``nextSyncToken``. Given ``now``, the
    answer starts with it, as the list's does (MCP); tokens are aged against it."""
    shown, now = now is not None, now or utcnow()
    _, _, size = parse_list_params(time_min=None, time_max=None, limit=limit, tz=UTC)
    calendars = accessible_calendars(conn, principal=principal)
    chosen = None
    if calendar_ids is not None:
        calendars = chosen_calendars(calendars, principal=principal, wanted=calendar_ids)
        chosen = [c.id for c in calendars]
    if page_token:
        if not page_token.startswith(SYNC_PAGE_PREFIX):
            raise _bad("pageToken", "page token of a sync")
        start, end, after_seq, after_id = _decode_page(token_key, principal, page_token, chosen)
        after: tuple[int, str] | None = (after_seq, after_id)
    elif sync_token:
        start = decode_sync_token(token_key, principal, sync_token, chosen)
        end, after = current_position(conn), None
    else:
        raise ValidationFailed([FieldError("syncToken", "must not be empty")])
    _check_age(start, now, retention_days)
    result: dict[str, Any] = {}
    if shown:  # MCP's "now", as the list gives it
        default = next((c for c in calendars if c.is_default), calendars[0] if calendars else None)
        result["now"] = format_in(now, zone(default.time_zone) if default else UTC)
    result["calendars"] = [calendar_public(c) for c in calendars]
    filed = [c.id for c in calendars]
    if principal.calendar_id is None and chosen is None:
        # The tombstones of a deleted calendar's events are filed under the owner
        # (``calendar_changes``): only a key that reached every calendar reached it, and a
        # sync narrowed to some calendars (``calendarIds``) did not name it.
        filed.append(principal.user_id)
    rows = _changes(conn, filed, start, end, after, size)
    by_id = {c.id: c for c in calendars}
    zones = {c.id: zone(c.time_zone) for c in calendars}
    events = []
    for row in rows[:size]:
        if row.id is None:  # deleted: its tombstone
            events.append({"id": row.sync_event_id, "status": CANCELLED})
            continue
        calendar = by_id[row.sync_calendar_id]
        tz = zones[calendar.id]
        if row.status == CANCELLED:  # a cancelled occurrence of a series
            events.append(
                {
                    "id": row.id,
                    "status": CANCELLED,
                    "recurringEventId": row.recurring_event_id,
                    "originalStartsAt": format_in(row.original_starts_at, tz),
                }
            )
        else:
            events.append(event_public(row, calendar_name=calendar.name, tz=tz))
    result["events"] = events
    if len(rows) > size:
        last = rows[size - 1]
        payload = [start.compact(), end.compact(), last.sync_seq, last.sync_event_id]
        result["nextPageToken"] = _encode_page(token_key, principal, payload, chosen)
    else:
        result["nextSyncToken"] = encode_sync_token(token_key, principal, end, chosen)
    return result


def purge_changes(conn: Connection, *, now: datetime, keep_days: int) -> int:
    """Forget the changes (tombstones included) older than any token still honoured: a token
    is refused once ``keep_days`` old, so no sync can ask for them any more. It reads the
    table whole (no index on ``changed_at``, which every write would pay for: migration
    0023); it holds the changes of the last ``keep_days`` and runs once an hour off the
    request path."""
    cutoff = now - timedelta(days=keep_days) - PURGE_MARGIN
    done = conn.execute(delete(event_sync_t).where(event_sync_t.c.changed_at < cutoff))
    return int(done.rowcount or 0)
