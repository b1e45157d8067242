"""Planning the time triggers a horizon ahead, from the change feed, never from a scan of every
event.

``plan`` is one tick of the planner (the job runs it about every second, on whichever process
gets the lock; PostgreSQL: ``pg_try_advisory_xact_lock``, SQLite: its one writer):

1. **Who asks.** The owners whose endpoints (their own webhook, their keys' subscriptions whose
   key is in force) take ``calendar.event.starting`` or ``calendar.event.ended``, with the
   offsets they ask for (``trigger_users`` keeps what each owner's plan was made for). An owner
   who asks for other offsets than before is planned again up to the horizon; one who asks for
   none any more has their planned rows deleted.
2. **What changed.** The rows of the change feed (``event_sync``, the table sync tokens read)
   written since the position the planner keeps (``trigger_state``), in those owners'
   calendars, read as a sync reads them (``events.sync.Position``: on PostgreSQL a change
   committed out of order is still seen). Each event changed is planned again over the stretch
   already planned (a series with all its occurrences there, its changed ones as changed and
   its cancelled ones not); a deleted one loses its planned rows.
3. **The horizon.** When the plan reaches less than ``HORIZON`` less ``STEP`` ahead, the next
   stretch is planned: for each offset, the events starting in it that much later (two indexed
   queries a calendar, ``triggers.occurrences``), and for ``ended`` those ending in it.

A row's key is (occurrence, kind, offset): planning again is an upsert, which keeps a row
already fired when its due time is the same and plans it anew when the event moved. Rows due
before ``now`` are never written (a new event or subscription does not fire for the past); an
outage's stretch (planned late, up to ``CATCH_UP_MOST`` back) is planned so that the firing
can skip and count what it missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, case, delete, insert, literal, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from calendar_service.calendar.events.queries import EVENT_COLUMNS
from calendar_service.calendar.events.sync import Position, current_position
from calendar_service.delivery.triggers.kinds import wanted_triggers
from calendar_service.delivery.triggers.occurrences import (
    Calendar,
    Occurrence,
    in_stretch,
    longest,
    of_event,
)
from calendar_service.delivery.triggers.tables import PLANNED, plan_t, state_t, trigger_users_t
from calendar_service.platform.models import (
    calendars_t,
    endpoints_t,
    event_sync_t,
    events_t,
    keys_t,
)
from calendar_service.platform.models.webhooks import ENDPOINT_DELETED as DELETED
from calendar_service.platform.timeutil import joined

HORIZON = timedelta(hours=24)
"""How far ahead the plan reaches (due times)."""
STEP = timedelta(hours=1)
"""How much further it is planned at a time."""
CATCH_UP_MOST = timedelta(days=7)
"""After an outage, how far back the stretch not yet planned is planned (to be skipped)."""
SAVE_EVERY = timedelta(minutes=5)
"""How often the position is written when nothing planned changed."""
STARTING, ENDED = "starting", "ended"
_LOCK = 7210412907  # one planner at a time (PostgreSQL advisory lock)
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Wanted:
    """What an owner's endpoints ask for: ``starting``'s offsets (minutes), and ``ended``."""

    offsets: tuple[int, ...]
    ended: bool


@dataclass(slots=True)
class Planned:
    """What a tick did."""

    owners: int = 0
    replanned_owners: int = 0
    changes: int = 0
    written: int = 0
    deleted: int = 0
    planned_until: datetime | None = None


def plan(
    conn: Connection, *, now: datetime, grace: timedelta, horizon: timedelta = HORIZON
) -> Planned | None:
    """One tick of the planner (see the module's docstring); ``None`` when another process
    holds the planner's lock. Runs in the caller's transaction."""
    if conn.dialect.name == "postgresql":
        locked = conn.execute(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _LOCK})
        if not locked.scalar():
            return None
    report = Planned()
    end = current_position(conn)
    state = conn.execute(select(state_t).where(state_t.c.id == 1)).first()
    if state is None:
        start, until, saved = end, now, None
        conn.execute(
            insert(state_t).values(id=1, position=_dumped(end), planned_until=now, updated_at=now)
        )
    else:
        start = Position.from_compact(orjson.loads(state.position)) or end
        until, saved = state.planned_until, state.updated_at
    wanted = wanted_by_owner(conn, now=now)
    have = {
        r.user_id: Wanted(tuple(orjson.loads(r.offsets)), bool(r.ended))
        for r in conn.execute(select(trigger_users_t))
    }
    report.owners = len(wanted)
    gone = [u for u in have if u not in wanted]
    renew = [u for u, w in wanted.items() if have.get(u) != w]
    steady = [u for u in wanted if u not in renew]
    if gone:
        report.deleted += _delete_owners(conn, gone)
    calendars = _calendars(conn, wanted)
    by_id = {c.id: c for found in calendars.values() for c in found}
    low = now - grace
    ahead = until if until >= now + horizon - STEP else now + horizon
    # 2. what changed in the steady owners' calendars, over the stretch already planned
    watched = [c.id for u in steady for c in calendars.get(u, [])] + steady
    changed = _changes(conn, start, end, watched)
    report.changes = len(changed)
    if changed and until > low:
        written, deleted = _replan_events(
            conn, changed, by_id, wanted, now=now, low=low, high=until
        )
        report.written += written
        report.deleted += deleted
    # 1. owners asking for other offsets: their whole horizon again
    for user_id in renew:
        report.deleted += _delete_planned(conn, plan_t.c.user_id == user_id, since=now)
        report.written += _plan_stretch(
            conn, calendars.get(user_id, []), wanted[user_id], now, ahead, now=now
        )
        _remember(conn, user_id, wanted[user_id], now)
    report.replanned_owners = len(renew)
    # 3. the horizon, a step further
    if ahead > until:
        first = max(until, now - CATCH_UP_MOST)
        for user_id in steady:
            report.written += _plan_stretch(
                conn, calendars.get(user_id, []), wanted[user_id], first, ahead, now=now
            )
    report.planned_until = ahead
    if changed or gone or renew or ahead != until or saved is None or now - saved > SAVE_EVERY:
        conn.execute(
            update(state_t)
            .where(state_t.c.id == 1)
            .values(position=_dumped(end), planned_until=ahead, updated_at=now)
        )
    return report


def _dumped(position: Position) -> str:
    return orjson.dumps(position.compact()).decode()


# ---------------------------------------------------------------------------------------------
# Who asks


def wanted_by_owner(conn: Connection, *, now: datetime) -> dict[str, Wanted]:
    """Each owner whose endpoints ask for time triggers, and the union of what they ask."""
    rows = conn.execute(
        select(
            endpoints_t.c.user_id,
            endpoints_t.c.key_id,
            endpoints_t.c.events,
            endpoints_t.c.minutes_before,
        )
        .select_from(endpoints_t.outerjoin(keys_t, keys_t.c.id == endpoints_t.c.key_id))
        .where(
            endpoints_t.c.status != DELETED,
            endpoints_t.c.events.is_not(None),
            or_(
                endpoints_t.c.key_id.is_(None),
                (keys_t.c.revoked_at.is_(None)) & (keys_t.c.expires_at > now),
            ),
        )
    )
    offsets: dict[str, set[int]] = {}
    ended: dict[str, bool] = {}
    for row in rows:
        minutes, ends = wanted_triggers(row)
        if not minutes and not ends:
            continue
        offsets.setdefault(row.user_id, set()).update(minutes)
        ended[row.user_id] = ended.get(row.user_id, False) or ends
    return {u: Wanted(tuple(sorted(offsets[u])), ended[u]) for u in offsets}


def _calendars(conn: Connection, wanted: dict[str, Wanted]) -> dict[str, list[Calendar]]:
    found: dict[str, list[Calendar]] = {}
    users = list(wanted)
    for at in range(0, len(users), _CHUNK):
        for row in conn.execute(
            select(
                calendars_t.c.id,
                calendars_t.c.user_id,
                calendars_t.c.name,
                calendars_t.c.time_zone,
                calendars_t.c.max_event_seconds,
            ).where(calendars_t.c.user_id.in_(users[at : at + _CHUNK]))
        ):
            found.setdefault(row.user_id, []).append(
                Calendar(row.id, row.user_id, row.name, row.time_zone, int(row.max_event_seconds))
            )
    return found


def _remember(conn: Connection, user_id: str, wanted: Wanted, now: datetime) -> None:
    values = {
        "user_id": user_id,
        "offsets": orjson.dumps(list(wanted.offsets)).decode(),
        "ended": wanted.ended,
        "planned_at": now,
    }
    statement = _insert_for(conn)(trigger_users_t).values(**values)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[trigger_users_t.c.user_id],
            set_={k: v for k, v in values.items() if k != "user_id"},
        )
    )


def _delete_owners(conn: Connection, users: Sequence[str]) -> int:
    deleted = 0
    for at in range(0, len(users), _CHUNK):
        chunk = users[at : at + _CHUNK]
        deleted += _delete_planned(conn, plan_t.c.user_id.in_(chunk))
        conn.execute(delete(trigger_users_t).where(trigger_users_t.c.user_id.in_(chunk)))
    return deleted


def _delete_planned(conn: Connection, which: Any, *, since: datetime | None = None) -> int:
    query = delete(plan_t).where(which, plan_t.c.status == PLANNED)
    if since is not None:
        query = query.where(plan_t.c.due_at >= since)
    return int(conn.execute(query).rowcount or 0)


# ---------------------------------------------------------------------------------------------
# What changed


def _changes(
    conn: Connection, start: Position, end: Position, calendar_ids: Sequence[str]
) -> dict[str, str]:
    """The events changed (or deleted) in these calendars that ``end`` saw and ``start`` did
    not (``events.sync``'s rule), by id: their calendar (a deleted calendar's: its owner)."""
    seq = event_sync_t.c.seq
    unseen = seq >= start.xmax
    if start.xip:
        unseen = or_(unseen, seq.in_(start.xip))
    found: dict[str, str] = {}
    for at in range(0, len(calendar_ids), _CHUNK):
        query = select(event_sync_t.c.event_id, event_sync_t.c.calendar_id).where(
            event_sync_t.c.calendar_id.in_(calendar_ids[at : at + _CHUNK]),
            seq >= start.xmin,
            unseen,
            seq < end.xmax,
        )
        if end.xip:
            query = query.where(seq.not_in(end.xip))
        found.update(dict(conn.execute(query).all()))
    return found


def _replan_events(
    conn: Connection,
    changed: dict[str, str],
    calendars: dict[str, Calendar],
    wanted: dict[str, Wanted],
    *,
    now: datetime,
    low: datetime,
    high: datetime,
) -> tuple[int, int]:
    """Plan each changed event again over ``[low, high)``; returns (rows written, deleted)."""
    ids = list(changed)
    rows: dict[str, Any] = {}
    for at in range(0, len(ids), _CHUNK):
        for found in conn.execute(
            select(*EVENT_COLUMNS).where(events_t.c.id.in_(ids[at : at + _CHUNK]))
        ):
            rows[found.id] = found
    roots: dict[str, Any] = {}  # a single event's or series' id → its row (None: deleted)
    wanted_series = set()
    for event_id in ids:
        row = rows.get(event_id)
        if row is None:
            roots.setdefault(event_id, None)
        elif row.recurring_event_id is not None:
            wanted_series.add(row.recurring_event_id)
        else:
            roots[row.id] = row
    missing = [s for s in wanted_series if s not in roots]
    for at in range(0, len(missing), _CHUNK):
        for found in conn.execute(
            select(*EVENT_COLUMNS).where(events_t.c.id.in_(missing[at : at + _CHUNK]))
        ):
            roots[found.id] = found
    for series_id in missing:
        roots.setdefault(series_id, None)  # deleted with its exceptions
    written = deleted = 0
    for root_id, row in roots.items():
        mine = or_(plan_t.c.event_id == root_id, plan_t.c.series_id == root_id)
        calendar = calendars.get(row.calendar_id) if row is not None else None
        if row is None or calendar is None:
            deleted += _delete_planned(conn, mine)
            continue
        want = wanted[calendar.user_id]
        start, before = _starts_for(want, calendar, low, high)
        occurrences = of_event(conn, row, calendar, start, before)
        rows_due = _due(occurrences, want, low, high)
        keep = {(r["event_id"], r["kind"], r["minutes_before"]) for r in rows_due}
        stale = [
            r.id
            for r in conn.execute(
                select(
                    plan_t.c.id, plan_t.c.event_id, plan_t.c.kind, plan_t.c.minutes_before
                ).where(mine, plan_t.c.status == PLANNED, plan_t.c.due_at >= low)
            )
            if (r.event_id, r.kind, r.minutes_before) not in keep
        ]
        for at in range(0, len(stale), _CHUNK):
            deleted += _delete_planned(conn, plan_t.c.id.in_(stale[at : at + _CHUNK]))
        written += _upsert(conn, [r for r in rows_due if r["due_at"] >= now])
    return written, deleted


# ---------------------------------------------------------------------------------------------
# Planning a stretch


def _starts_for(
    want: Wanted, calendar: Calendar, low: datetime, high: datetime
) -> tuple[datetime, datetime]:
    """Where the occurrences due in ``[low, high)`` start, at the widest."""
    starts, befores = [], []
    if want.offsets:
        starts.append(low + timedelta(minutes=want.offsets[0]))
        befores.append(high + timedelta(minutes=want.offsets[-1]))
    if want.ended:
        starts.append(low - longest(calendar))
        befores.append(high)
    return min(starts), max(befores)


def _stretches(
    want: Wanted, calendar: Calendar, low: datetime, high: datetime
) -> list[tuple[datetime, datetime]]:
    """The stretches of start times whose occurrences fall due in ``[low, high)``: one per
    offset (and one for ``ended``), those that overlap merged."""
    spans = [(low + timedelta(minutes=m), high + timedelta(minutes=m)) for m in want.offsets]
    if want.ended:
        spans.append((low - longest(calendar), high))
    return joined(spans)


def _plan_stretch(
    conn: Connection,
    calendars: Iterable[Calendar],
    want: Wanted,
    low: datetime,
    high: datetime,
    *,
    now: datetime,
) -> int:
    """Plan what falls due in ``[low, high)`` in these calendars; returns the rows written.
    What fell due before ``now`` (an outage's stretch) is written to be skipped by the firing
    only when it was not already planned."""
    written = 0
    for calendar in calendars:
        for start, before in _stretches(want, calendar, low, high):
            occurrences = in_stretch(conn, calendar, start, before)
            written += _upsert(conn, _due(occurrences, want, low, high))
    return written


def _due(
    occurrences: Iterable[Occurrence], want: Wanted, low: datetime, high: datetime
) -> list[dict[str, Any]]:
    """The plan's rows of these occurrences that fall due in ``[low, high)``."""
    rows = []
    for occurrence in occurrences:
        event = orjson.dumps(occurrence.event).decode()
        due_times = [
            (STARTING, m, occurrence.starts_at - timedelta(minutes=m)) for m in want.offsets
        ]
        if want.ended:
            due_times.append((ENDED, 0, occurrence.ends_at))
        for kind, minutes, due in due_times:
            if low <= due < high:
                rows.append(
                    {
                        "user_id": occurrence.calendar.user_id,
                        "calendar_id": occurrence.calendar.id,
                        "event_id": occurrence.event_id,
                        "series_id": occurrence.series_id,
                        "kind": kind,
                        "minutes_before": minutes,
                        "due_at": due,
                        "status": PLANNED,
                        "event": event,
                        "fired_at": None,
                    }
                )
    return rows


def _insert_for(conn: Connection) -> Any:
    return pg_insert if conn.dialect.name == "postgresql" else sqlite_insert


def _upsert(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Write the plan's rows: a row of the same occurrence, kind and offset is replaced, but
    one already fired or skipped for the same due time stays so (it is not fired twice)."""
    if not rows:
        return 0
    statement = _insert_for(conn)(plan_t)
    same_time = plan_t.c.due_at == statement.excluded.due_at
    statement = statement.on_conflict_do_update(
        index_elements=[plan_t.c.event_id, plan_t.c.kind, plan_t.c.minutes_before],
        set_={
            "user_id": statement.excluded.user_id,
            "calendar_id": statement.excluded.calendar_id,
            "series_id": statement.excluded.series_id,
            "event": statement.excluded.event,
            "due_at": statement.excluded.due_at,
            "status": case((same_time, plan_t.c.status), else_=literal(PLANNED)),
            "fired_at": case((same_time, plan_t.c.fired_at), else_=None),
        },
    )
    for at in range(0, len(rows), _CHUNK):
        conn.execute(statement, rows[at : at + _CHUNK])
    return len(rows)
