"""Undoing a key's work as a job (migration 0024): kept in the database, done a batch at a time.

``start_undo_job`` (the owner's *Undo work*, ``changes undo --key``) revokes the key if asked
and writes down, in one transaction, which changes the job undoes: every change of the key
(or connected app) since a time and still in force, newest first, one ``undo_job_items`` row
each (its ``position`` in that order and the change's ``seq``). Nothing is undone yet.

``undo_batch`` then undoes the next ``size`` of them (``governance.undo.undo_row``, never forced),
each read by its primary key, so the work of a change is the same whatever its place in the
job; it writes each one's outcome (``undone``, or ``refused`` with its code and reason) and
the job's progress, in the caller's transaction: one short transaction a batch, so that other
writes go on between them. The last batch marks the job ``done``.

A job is run by one runner at a time (a process: ``background.UndoJobs``, or the CLI), which
holds it for ``lease`` (``claim``, renewed by every batch). A runner that dies (a kill) leaves
the job ``running`` with its lease to run out: then any runner may claim it (``resumable``)
and go on from the first item not done, as every batch commits its items with the progress.

``undo_job`` is the job as the pages show it (progress, counts); ``undo_job_results`` its
outcomes, a page at a time or all (the CLI's ``--json``); ``preview_undo`` what a job would
undo, counted, and the newest changes (the confirm page: no dry run).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Index,
    Integer,
    String,
    Text,
    and_,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlmodel import Field, SQLModel

from calendar_service.access import keys
from calendar_service.governance.change_list import change_public, change_rows_by_seq, since_instant
from calendar_service.governance.undo import key_changes, undo_row
from calendar_service.journal.change_record import Via
from calendar_service.platform.db import owned_row
from calendar_service.platform.errors import CalendarError, NotFound
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import UTCDateTime
from calendar_service.platform.timeutil import format_utc, utcnow

RUNNING = "running"
DONE = "done"
UNDONE = "undone"
REFUSED = "refused"

BATCH = 25  # changes a batch: some tens of milliseconds on SQLite
LEASE = timedelta(seconds=20)  # how long a runner holds a job without a batch
PREVIEWED = 50  # the newest changes the confirm page lists


class UndoJob(SQLModel, table=True):
    """One undo of a key's work (``start_undo_job``)."""

    __tablename__ = "undo_jobs"
    __table_args__ = (Index("ix_undo_jobs_state", "state"),)

    id: str = Field(primary_key=True, max_length=40)
    user_id: str = Field(max_length=40)  # the owner
    key_id: str = Field(max_length=40)  # whose work is undone
    since: datetime | None = Field(default=None, sa_column=Column(UTCDateTime(), nullable=True))
    # Who undoes (``journal.change_record.Via``): the owner, through ``settings`` or ``cli``.
    actor_type: str = Field(max_length=16)
    actor_id: str | None = Field(default=None, max_length=40)
    transport: str = Field(max_length=16)
    request_id: str | None = Field(default=None, max_length=64)
    state: str = Field(max_length=16)  # RUNNING, DONE
    total: int = Field(sa_column=Column(Integer, nullable=False))
    position: int = Field(sa_column=Column(Integer, nullable=False))  # items handled
    undone: int = Field(sa_column=Column(Integer, nullable=False))
    refused: int = Field(sa_column=Column(Integer, nullable=False))
    created_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False))
    finished_at: datetime | None = Field(
        default=None, sa_column=Column(UTCDateTime(), nullable=True)
    )
    runner: str | None = Field(default=None, max_length=40)  # who holds it, till lease_until
    lease_until: datetime | None = Field(
        default=None, sa_column=Column(UTCDateTime(), nullable=True)
    )


class UndoJobItem(SQLModel, table=True):
    """One change a job undoes, and what came of it."""

    __tablename__ = "undo_job_items"

    job_id: str = Field(primary_key=True, max_length=40)
    position: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    change_seq: int = Field(sa_column=Column(Integer, nullable=False))
    outcome: str | None = Field(default=None, sa_column=Column(String(16), nullable=True))
    code: str | None = Field(default=None, sa_column=Column(String(40), nullable=True))
    reason: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


undo_jobs_t: Any = UndoJob.__table__  # type: ignore[attr-defined]
undo_job_items_t: Any = UndoJobItem.__table__  # type: ignore[attr-defined]


def start_undo_job(
    conn: Connection,
    *,
    user_id: str,
    key_id: str,
    since: str,
    revoke: bool,
    via: Via,
    now: datetime,
) -> dict[str, Any]:
    """A new job undoing the owner's key ``key_id``'s changes since ``since`` (404: not a key
    of theirs; 400 naming ``since``), the key revoked first if ``revoke``; returns it as
    ``undo_job`` shows it."""
    keys.get_key(conn, user_id=user_id, key_id=key_id)
    changes = key_changes(user_id, key_id, since).subquery()
    if revoke:
        keys.revoke_key(conn, user_id=user_id, key_id=key_id, now=now)
    job_id = new_id("undo")
    order = func.row_number().over(order_by=(changes.c.at.desc(), changes.c.seq.desc()))
    listed = select(literal(job_id), changes.c.seq, order).select_from(changes)
    conn.execute(insert(undo_job_items_t).from_select(["job_id", "change_seq", "position"], listed))
    total = conn.execute(
        select(func.count()).where(undo_job_items_t.c.job_id == job_id)
    ).scalar_one()
    conn.execute(
        insert(undo_jobs_t).values(
            id=job_id,
            user_id=user_id,
            key_id=key_id,
            since=since_instant(since),
            actor_type=via.actor_type,
            actor_id=via.actor_id,
            transport=via.transport,
            request_id=via.request_id,
            state=RUNNING if total else DONE,
            total=total,
            position=0,
            undone=0,
            refused=0,
            created_at=now,
            finished_at=None if total else now,
        )
    )
    return undo_job(conn, user_id=user_id, job_id=job_id)


def undo_job(conn: Connection, *, user_id: str | None, job_id: str) -> dict[str, Any]:
    """The job ``job_id`` of the owner ``user_id`` (``None``: anyone's, the CLI) as the pages
    show it: ``{id, keyId, state, total, done, undone, refused, since?, createdAt,
    finishedAt?}`` (``done``: undone and refused). 404 if there is none."""
    row = owned_row(conn, undo_jobs_t, job_id, user_id=user_id, missing=f"No undo job {job_id!r}.")
    job: dict[str, Any] = {
        "id": row.id,
        "userId": row.user_id,
        "keyId": row.key_id,
        "state": row.state,
        "total": row.total,
        "done": row.position,
        "undone": row.undone,
        "refused": row.refused,
        "createdAt": format_utc(row.created_at),
    }
    if row.since is not None:
        job["since"] = format_utc(row.since)
    if row.finished_at is not None:
        job["finishedAt"] = format_utc(row.finished_at)
    return job


def claim(
    conn: Connection, *, job_id: str, runner: str, now: datetime, lease: timedelta = LEASE
) -> bool:
    """Take the running job ``job_id`` for ``runner`` until ``now + lease``, if no other
    runner holds it (or its lease ran out); whether it is ``runner``'s now."""
    taken = conn.execute(
        update(undo_jobs_t)
        .where(
            undo_jobs_t.c.id == job_id,
            undo_jobs_t.c.state == RUNNING,
            or_(
                undo_jobs_t.c.runner.is_(None),
                undo_jobs_t.c.runner == runner,
                undo_jobs_t.c.lease_until < now,
            ),
        )
        .values(runner=runner, lease_until=now + lease)
    )
    return bool(taken.rowcount)


def release(conn: Connection, *, runner: str) -> None:
    """Let go of every job ``runner`` holds (a clean stop): the next runner need not wait
    for the leases to run out."""
    conn.execute(
        update(undo_jobs_t)
        .where(undo_jobs_t.c.runner == runner)
        .values(runner=None, lease_until=None)
    )


def resumable(conn: Connection, *, now: datetime) -> list[str]:
    """The running jobs no runner holds (or whose runner's lease ran out: it died), oldest
    first."""
    found = conn.execute(
        select(undo_jobs_t.c.id)
        .where(
            undo_jobs_t.c.state == RUNNING,
            or_(undo_jobs_t.c.runner.is_(None), undo_jobs_t.c.lease_until < now),
        )
        .order_by(undo_jobs_t.c.created_at)
    )
    return [r.id for r in found]


def undo_batch(
    conn: Connection,
    *,
    job_id: str,
    runner: str,
    size: int = BATCH,
    lease: timedelta = LEASE,
) -> dict[str, Any] | None:
    """Undo the next ``size`` changes of the job ``job_id`` (see the module's docstring), as
    ``runner``, in the caller's transaction; the job's progress (``undo_job``), or ``None``
    if ``runner`` no longer holds it or it is done."""
    job = conn.execute(
        select(undo_jobs_t).where(undo_jobs_t.c.id == job_id).with_for_update()
    ).first()
    if job is None or job.state != RUNNING or job.runner != runner:
        return None
    items = conn.execute(
        select(undo_job_items_t.c.position, undo_job_items_t.c.change_seq)
        .where(undo_job_items_t.c.job_id == job_id, undo_job_items_t.c.position > job.position)
        .order_by(undo_job_items_t.c.position)
        .limit(size)
    ).all()
    principal = keys.owner_principal(job.user_id)
    via = Via(job.actor_type, job.actor_id, job.transport, job.request_id)
    rows = change_rows_by_seq(conn, principal=principal, seqs=[i.change_seq for i in items])
    undone = refused = 0
    for item in items:
        outcome: dict[str, Any] = {"outcome": UNDONE, "code": None, "reason": None}
        try:
            row = rows.get(item.change_seq)
            if row is None:  # purged since (older than the change log keeps)
                raise NotFound("The change is no longer in the change log.")
            # Each undo at its own instant, as made.
            undo_row(conn, principal=principal, row=row, now=utcnow(), via=via)
        except CalendarError as exc:
            outcome = {"outcome": REFUSED, "code": exc.code, "reason": exc.message}
            refused += 1
        else:
            undone += 1
        conn.execute(
            update(undo_job_items_t)
            .where(
                undo_job_items_t.c.job_id == job_id, undo_job_items_t.c.position == item.position
            )
            .values(**outcome)
        )
    now = utcnow()
    position = items[-1].position if items else job.position
    finished = position >= job.total
    conn.execute(
        update(undo_jobs_t)
        .where(undo_jobs_t.c.id == job_id)
        .values(
            position=position,
            undone=job.undone + undone,
            refused=job.refused + refused,
            state=DONE if finished else RUNNING,
            finished_at=now if finished else None,
            lease_until=None if finished else now + lease,
            runner=None if finished else runner,
        )
    )
    return undo_job(conn, user_id=None, job_id=job_id)


def undo_job_results(
    conn: Connection,
    *,
    user_id: str,
    job_id: str,
    outcome: str,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """The changes of the job with ``outcome`` (``UNDONE``, ``REFUSED``), in the job's order,
    ``limit`` of them from ``offset`` (all: ``None``): ``{change, reason?, code?}``; each change
    as it is now (``undoneBy``)."""
    query = (
        select(undo_job_items_t.c.change_seq, undo_job_items_t.c.code, undo_job_items_t.c.reason)
        .where(
            undo_job_items_t.c.job_id == job_id,
            undo_job_items_t.c.outcome == outcome,
            undo_job_items_t.c.job_id.in_(
                select(undo_jobs_t.c.id).where(undo_jobs_t.c.user_id == user_id)
            ),
        )
        .order_by(undo_job_items_t.c.position)
        .offset(offset)
    )
    if limit is not None:
        query = query.limit(limit)
    items = conn.execute(query).all()
    principal = keys.owner_principal(user_id)
    found: dict[int, Any] = {}
    seqs = [i.change_seq for i in items]
    for start in range(0, len(seqs), 500):  # bounded IN lists
        found.update(change_rows_by_seq(conn, principal=principal, seqs=seqs[start : start + 500]))
    results = []
    for item in items:
        row = found.get(item.change_seq)
        if row is None:
            continue
        result: dict[str, Any] = {"change": change_public(row)}
        if outcome == REFUSED:
            result["reason"] = item.reason
            result["code"] = item.code
        results.append(result)
    return results


def preview_undo(
    conn: Connection, *, user_id: str, key_id: str, since: str, limit: int = PREVIEWED
) -> dict[str, Any]:
    """What a job would undo, without undoing anything: ``{count, changes: [the newest
    limit]}`` (a change another hand changed since is refused when the job reaches it)."""
    keys.get_key(conn, user_id=user_id, key_id=key_id)
    changes = key_changes(user_id, key_id, since).subquery()
    count = conn.execute(select(func.count()).select_from(changes)).scalar_one()
    seqs = [
        r.seq
        for r in conn.execute(
            select(changes.c.seq).order_by(changes.c.at.desc(), changes.c.seq.desc()).limit(limit)
        )
    ]
    rows = change_rows_by_seq(conn, principal=keys.owner_principal(user_id), seqs=seqs)
    return {"count": count, "changes": [change_public(rows[s]) for s in seqs if s in rows]}


def purge_undo_jobs(conn: Connection, *, before: datetime) -> int:
    """Forget the jobs finished before ``before`` (with their items); how many went."""
    old = select(undo_jobs_t.c.id).where(
        and_(undo_jobs_t.c.state == DONE, undo_jobs_t.c.finished_at < before)
    )
    conn.execute(undo_job_items_t.delete().where(undo_job_items_t.c.job_id.in_(old)))
    return int(conn.execute(undo_jobs_t.delete().where(undo_jobs_t.c.id.in_(old))).rowcount)
