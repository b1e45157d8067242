"""Recording a change, in the change's own transaction: who made it (``Via``), what it did to
the event as the API shows it (``before``, ``after``), and the rows it touched (``Unit``): as
they were stored before (what an undo puts back) and after (what an undo checks is still
so).

A *unit* is what one change may touch, named by row ids: an event, a series or an
occurrence's exception row by its id (``ids``), and every exception row of the series named
in ``series`` (a series and its changed occurrences go together: deleting a series deletes
them, changing its rule may drop some). Rows are kept as plain values, date-times as the
stored UTC text, so that they compare and travel as JSON.
"""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, delete, insert, select

from calendar_service.access.keys import Principal
from calendar_service.journal.change_table import CREATED, KEY, OWNER, changes_t
from calendar_service.platform.db import Statement
from calendar_service.platform.models import UTCDateTime, events_t, to_db, users_t
from calendar_service.platform.timeutil import format_utc, utc_text

OWNER_KEY_ID = "owner"  # ``keys.owner_principal``'s key id: the owner acting in person


@dataclass(slots=True)
class Via:
    """Who makes a change and through what: ``actor_type`` (``table.KEY``, ``OWNER``,
    ``SYSTEM``) and ``actor_id`` (the key's id, the owner's id), ``transport`` (``rest``,
    ``mcp``, ``settings``, ``cli``, ``import``) and the request's id.

    ``made`` collects the changes recorded with it, as ``record`` returns them: the front reads
    it once the call is done (the ``Calendar-Change-Id`` header, a tool's ``changeId``, a dry
    run's answer); ``replayed``, the change of the first request when an ``Idempotency-Key``
    replays it. One ``Via`` per call (a rerun makes a new one).

    For a write that may wait for the owner (``governance.proposals``): ``if_free``, the write
    asked for its time to be free (``ifFree``: an approval checks it again); ``idempotency``,
    the ``Idempotency-Key`` record it would store (the gateway stores the proposal under it
    instead); ``replayed_proposal``, the proposal the first request with that key made."""

    actor_type: str
    actor_id: str | None
    transport: str
    request_id: str | None = None
    made: list[dict[str, Any]] = field(default_factory=list)
    replayed: str | None = None
    if_free: bool = False
    idempotency: Any = None  # ``idempotency.Pending``
    replayed_proposal: str | None = None

    @classmethod
    def of(cls, principal: Principal, transport: str, request_id: str | None = None) -> Via:
        """The key ``principal`` (or the owner in person, ``keys.owner_principal``)."""
        if principal.key_id == OWNER_KEY_ID:
            return cls(OWNER, principal.user_id, transport, request_id)
        return cls(KEY, principal.key_id, transport, request_id)

    @property
    def change_id(self) -> str | None:
        """The id of the last change recorded with it (or replayed), if any."""
        return self.made[-1]["id"] if self.made else self.replayed


def default_via(principal: Principal) -> Via:
    """When a caller names none (the core called directly): the owner through the CLI, a key
    through REST."""
    return Via.of(principal, "cli" if principal.key_id == OWNER_KEY_ID else "rest")


# ---------------------------------------------------------------------------------------------
# Rows

EVENT_FIELDS = tuple(c.name for c in events_t.c)
_DATE_TIMES = frozenset(c.name for c in events_t.c if isinstance(c.type, UTCDateTime))


def plain(row: Any) -> dict[str, Any]:
    """An event row (fetched, a ``shapes.Row``, or a dict of columns as written) as plain
    values: date-times as the stored UTC text, ``all_day`` a bool."""
    values = row if isinstance(row, dict) else row._asdict()
    out: dict[str, Any] = {}
    for name in EVENT_FIELDS:
        value = values.get(name)
        if value is not None and name in _DATE_TIMES and type(value) is not str:
            value = utc_text(value)
        out[name] = value
    out["all_day"] = bool(out["all_day"])
    return out


_COMPARED = tuple(name for name in EVENT_FIELDS if name != "updated_at")


def same_content(one: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]]) -> bool:
    """Whether two sets of plain rows hold the same events, field for field but
    ``updated_at``: an undo sets it to when it restored a row, so the event a change left and
    the same event put back by the undo of a later change are the same."""
    if len(one) != len(other):
        return False
    mine = {r["id"]: r for r in one}
    for row in other:
        found = mine.get(row["id"])
        if found is None or any(found.get(name) != row.get(name) for name in _COMPARED):
            return False
    return True


@dataclass(slots=True)
class Unit:
    """What a change touched (see the module's docstring): the rows by id, the series whose
    exceptions belong to it, and its plain rows before and after. A create keeps no rows
    after (``None``): its one row is what its ``after`` shows (``CREATED_UNIT``)."""

    ids: list[str]
    series: list[str]
    before: list[dict[str, Any]]
    after: list[dict[str, Any]] | None = field(default_factory=list)

    def changed(self) -> bool:
        """Whether anything was written (a PATCH that sends the values an event has is still
        a write, with its webhook and sync change; one that sends no field is not)."""
        return _by_id(self.before) != _by_id(self.after or ())

    def encoded(self) -> str:
        return orjson.dumps(
            {"ids": self.ids, "series": self.series, "before": self.before, "after": self.after}
        ).decode()

    @classmethod
    def decoded(cls, text: str) -> Unit:
        value = orjson.loads(text)
        return cls(value["ids"], value["series"], value["before"], value["after"])


def _by_id(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows}


CREATED_UNIT = '{"ids":["%s"],"series":["%s"],"before":[],"after":null}'
"""A create's unit (``%`` its event's id twice, which holds no character JSON escapes): every
create writes one, so it is written out by hand, and keeps no row: the row a create wrote is
the event its change's ``after`` shows, and an undo compares it so
(``governance.undo``)."""


# ---------------------------------------------------------------------------------------------
# Ids

PREFIX = "chg_"
_TIME_DIGITS = 14  # hexadecimal microseconds since 1970: enough until the year 4000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX = frozenset("0123456789abcdef")
_random = random.Random(secrets.randbits(128))  # noqa: S311 - see new_change_id
os.register_at_fork(after_in_child=lambda: _random.seed(secrets.randbits(128)))


def new_change_id(now: datetime) -> str:
    """``chg_`` + the change's time (``at``, to the microsecond: 14 hexadecimal digits) + 16
    drawn ones. The time lets a change be found by id through the (owner, time) index, so the
    table needs no index of its ids (every create writes a row); it says no more than the
    change's ``at``, which whoever may see the change sees. The drawn part tells apart changes
    made in the same microsecond: an id is not a secret (a change outside the caller's reach
    is a 404 whatever its id), so it is drawn from a fast generator seeded from the OS's (in
    each process), not from the OS's."""
    since = now - _EPOCH
    micros = (since.days * 86400 + since.seconds) * 1_000_000 + since.microseconds
    return f"chg_{micros:014x}{_random.getrandbits(64):016x}"


def instant_of(change_id: str) -> datetime | None:
    """When the change ``change_id`` was made (its ``at``), or ``None`` if it is not a change
    id this service makes."""
    body = change_id[len(PREFIX) :]
    if not change_id.startswith(PREFIX) or len(body) != _TIME_DIGITS + 16 or set(body) - _HEX:
        return None
    try:
        return _EPOCH + timedelta(microseconds=int(body[:_TIME_DIGITS], 16))
    except OverflowError:
        return None


# ---------------------------------------------------------------------------------------------
# The row

_INSERT = Statement(
    insert(changes_t).values({c.name: bindparam(c.name) for c in changes_t.c if c.name != "seq"})
)


def record(
    conn: Connection,
    *,
    via: Via,
    user_id: str,
    kind: str,
    event_id: str,
    calendar_id: str,
    now: datetime,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    rows: str,
    recurring_event_id: str | None = None,
    new_series_id: str | None = None,
    detail: dict[str, Any] | None = None,
    undoes: str | None = None,
) -> dict[str, Any]:
    """Write one change (``rows``: its ``Unit``, encoded) in the caller's transaction; returns
    it as the API shows it, but for the actor's name (read with the list), and adds it to
    ``via.made``."""
    change_id = new_change_id(now)
    at = to_db(now, conn.dialect.name)
    _INSERT.run(
        conn,
        id=change_id,
        user_id=user_id,
        at=at,
        kind=kind,
        event_id=event_id,
        recurring_event_id=recurring_event_id,
        new_series_id=new_series_id,
        calendar_id=calendar_id,
        actor_type=via.actor_type,
        actor_id=via.actor_id,
        transport=via.transport,
        request_id=via.request_id,
        before=None if before is None else orjson.dumps(before).decode(),
        after=None if after is None else orjson.dumps(after).decode(),
        detail=None if detail is None else orjson.dumps(detail).decode(),
        rows=rows,
        undoes=undoes,
        undone_by=None,
    )
    # The stored text formatted (no datetime formatting: every create runs this).
    change: dict[str, Any] = {
        "id": change_id,
        "at": format_utc(at if type(at) is str else utc_text(now)),
        "kind": kind,
        "eventId": event_id,
    }
    if recurring_event_id is not None:
        change["recurringEventId"] = recurring_event_id
    change["calendarId"] = calendar_id
    change["actor"] = {"type": via.actor_type, "id": via.actor_id}
    change["transport"] = via.transport
    if via.request_id is not None:
        change["requestId"] = via.request_id
    change["before"] = before
    change["after"] = after
    if detail:
        change.update(detail)
    if undoes is not None:
        change["undoes"] = undoes
    via.made.append(change)
    return change


def created_change_id(conn: Connection, *, user_id: str, event_id: str) -> str | None:
    """The id of the change that created ``event_id`` (an ``Idempotency-Key``'s replay names
    it), if it is still kept."""
    found = conn.execute(
        select(changes_t.c.id)
        .where(
            changes_t.c.user_id == user_id,
            changes_t.c.event_id == event_id,
            changes_t.c.kind == CREATED,
        )
        .order_by(changes_t.c.seq)
        .limit(1)
    ).first()
    return None if found is None else str(found[0])


def purge(conn: Connection, *, now: datetime, keep_days: int) -> int:
    """Delete the changes older than the retention (the call history's: the log of what keys
    did is kept as long as the log of what they asked); how many went. Owner by owner through
    the (owner, time) index, as the call history is purged."""
    done = conn.execute(
        delete(changes_t).where(
            changes_t.c.user_id.in_(select(users_t.c.id).scalar_subquery()),
            changes_t.c.at < now - timedelta(days=keep_days),
        )
    )
    return int(done.rowcount or 0)
