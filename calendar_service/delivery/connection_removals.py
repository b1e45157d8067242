"""A connection's mirror removed as a job (docs/connections.md, "Busy again, or removed"): the
request that switches a connection to ``busy`` or removes it does a few row writes, whatever
the size of the mirror; the job deletes the rest a step at a time (migration 0033).

- ``detach`` (in the request): the mirror calendar's keys and feeds are revoked, its
  ``user_id`` becomes NULL and its ``connection_id`` the job's id. Every reader of an owner's
  calendars (the list, search, sync, feeds, CalDAV, availability, the settings pages) asks for
  ``user_id = …``: from the next request on no key sees the mirror, and the connection may get
  a new one. A ``mirror_removals`` row is the job.
- ``step`` (one short transaction, by the runner holding the job): first the calendar, by the
  stepped deletion of any calendar (``calendar_edits.delete_calendar_step``, ``most`` events a
  step, tombstones filed under the owner so that a sync of all the owner's calendars reports
  them deleted; no ``calendar.event.deleted`` webhooks, as the poller's writes into a mirror
  queue none), then the connection's copy ``most`` rows a step: its event mapping (unless the
  connection has a mirror again: that mirror's poll rewrites it) and, when the connection was
  removed, its busy rows and objects. The job's row goes with its last step.
- One runner at a time holds a job (``claim``: a conditional update, as the undo jobs do), for
  ``LEASE``, renewed by every step; a runner that dies leaves the lease to run out, and any
  runner (``webhooks.connections.ConnectionPoller``, on every host) takes the job up from
  where its steps left it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, or_, select, tuple_, update

from calendar_service.calendar.calendar_edits import delete_calendar_step, revoke_calendar_access
from calendar_service.delivery.connection_mirror import mirror_of
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.connections import (
    connection_busy_t,
    connection_events_t,
    connection_objects_t,
    connections_t,
    mirror_removals_t,
)

LEASE = timedelta(seconds=30)
"""How long a runner holds a job without a step: a step is well within it."""
STEP = 500
"""Events (single events and series), or rows of the copy, a step deletes at most."""


def detach(
    conn: Connection, *, connection_id: str, user_id: str, removed: bool, now: datetime
) -> str | None:
    """Hide the connection's mirror at once and leave its deletion to a job (the module's
    docstring); ``removed``: the connection is gone, its copy goes too. The job's id, or
    None when there is nothing to delete."""
    mirror = mirror_of(conn, connection_id)
    if mirror is None and not removed:
        return None
    removal_id = new_id("rm")
    if mirror is not None:
        revoke_calendar_access(conn, calendar_id=mirror.id, now=now)
        conn.execute(
            update(calendars_t)
            .where(calendars_t.c.id == mirror.id)
            .values(user_id=None, connection_id=removal_id)
        )
    conn.execute(
        insert(mirror_removals_t).values(
            id=removal_id,
            user_id=user_id,
            connection_id=connection_id,
            calendar_id=mirror.id if mirror is not None else None,
            removed=removed,
            steps=0,
            created_at=now,
        )
    )
    return removal_id


def claim(conn: Connection, *, runner: str, now: datetime, lease: timedelta = LEASE) -> str | None:
    """The oldest job no live runner holds, taken for ``runner`` until ``now + lease``; None
    when there is none (or another runner took it first)."""
    r = mirror_removals_t.c
    free = or_(r.runner.is_(None), r.lease_until < now)
    found = conn.execute(select(r.id).where(free).order_by(r.created_at).limit(1)).scalar()
    if found is None:
        return None
    taken = conn.execute(
        update(mirror_removals_t)
        .where(r.id == found, free)
        .values(runner=runner, lease_until=now + lease)
    ).rowcount
    return str(found) if taken == 1 else None


def step(
    conn: Connection,
    *,
    removal_id: str,
    runner: str,
    now: datetime,
    most: int = STEP,
    lease: timedelta = LEASE,
) -> bool | None:
    """One step of the job, in the caller's transaction: True if more remain, False once the
    job is done (its row gone), None if ``runner`` no longer holds it."""
    r = mirror_removals_t.c
    job = conn.execute(
        select(mirror_removals_t).where(r.id == removal_id).with_for_update()
    ).first()
    if job is None or job.runner != runner:
        return None
    values: dict[str, Any] = {"steps": job.steps + 1, "lease_until": now + lease}
    if job.calendar_id is not None:
        deleted = delete_calendar_step(
            conn,
            user_id=None,
            calendar_id=job.calendar_id,
            now=now,
            most=most,
            detached_owner=job.user_id,
        )
        if deleted["done"]:
            values["calendar_id"] = None
    elif not _delete_copy(conn, job, most):
        conn.execute(delete(mirror_removals_t).where(r.id == removal_id))
        return False
    conn.execute(update(mirror_removals_t).where(r.id == removal_id).values(**values))
    return True


def _delete_copy(conn: Connection, job: Any, most: int) -> bool:
    """Up to ``most`` rows of the connection's copy deleted; False when none was left. The
    connection's row is locked meanwhile (PostgreSQL; SQLite has one writer): a poll, which
    holds it while it writes, and the test of a new mirror do not interleave with the step."""
    held = select(connections_t.c.id).where(connections_t.c.id == job.connection_id)
    if conn.dialect.name == "postgresql":
        held = held.with_for_update()
    conn.execute(held)
    tables = [] if mirror_of(conn, job.connection_id) is not None else [connection_events_t]
    if job.removed:
        tables += [connection_busy_t, connection_objects_t]
    for table in tables:
        key = tuple_(*table.primary_key.columns)
        some = (
            select(*table.primary_key.columns)
            .where(table.c.connection_id == job.connection_id)
            .limit(most)
        )
        if conn.execute(delete(table).where(key.in_(some))).rowcount:
            return True
    return False


def pending(conn: Connection, *, connection_id: str | None = None) -> int:
    """How many removals are not done (of ``connection_id``'s, if given)."""
    query = select(func.count()).select_from(mirror_removals_t)
    if connection_id is not None:
        query = query.where(mirror_removals_t.c.connection_id == connection_id)
    return int(conn.execute(query).scalar_one())
