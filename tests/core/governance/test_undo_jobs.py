"""Undoing a key's work as a job (``governance.undo_jobs``): a batch at a time, each change's
outcome kept, and the work of a change the same at the job's end as at its start."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from calendar_service.access import keys
from calendar_service.calendar.events.existing import update_event
from calendar_service.governance import undo_jobs
from calendar_service.journal.change_record import Via
from calendar_service.journal.change_table import OWNER
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, changes_of_key

RUNNER = "run_test"


def _start(db: Database, owner_id: str, key_id: str) -> dict[str, Any]:
    return db.call(
        undo_jobs.start_undo_job,
        user_id=owner_id,
        key_id=key_id,
        since="2020-01-01",
        revoke=False,
        via=Via(OWNER, owner_id, "cli"),
        now=utcnow(),
    )


def _rows_read(conn: Any) -> int:
    """Work the database did in this transaction so far: SQLite's virtual machine steps (a
    progress handler), PostgreSQL's tuples read from the change log."""
    if conn.dialect.name == "sqlite":
        return int(conn.info.get("steps", 0))
    return int(
        conn.execute(
            text(
                "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                "FROM pg_stat_xact_user_tables WHERE relname = 'changes'"
            )
        ).scalar_one()
    )


def _measured_batch(conn: Any, *, job_id: str, size: int) -> tuple[dict[str, Any] | None, int]:
    """One batch, and the work it took (``_rows_read``)."""
    if conn.dialect.name == "sqlite":
        raw = conn.connection.dbapi_connection
        conn.info["steps"] = 0

        def step() -> int:
            conn.info["steps"] += 1
            return 0

        raw.set_progress_handler(step, 100)
    else:
        # A table of a few hundred rows may be read whole once autovacuum's statistics say
        # so (cheaper at that size, and under load it happens mid-job); the indexes are what
        # a long job's work rests on, so they are what is measured.
        conn.execute(text("SET LOCAL enable_seqscan = off"))
    try:
        before = _rows_read(conn)
        progress = undo_jobs.undo_batch(conn, job_id=job_id, runner=RUNNER, size=size)
        return progress, _rows_read(conn) - before
    finally:
        if conn.dialect.name == "sqlite":
            conn.connection.dbapi_connection.set_progress_handler(None, 100)


def test_the_work_of_an_undo_is_the_same_at_the_end_of_a_long_job_as_at_its_start(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    changes_of_key(db, owner, key_id, 600)
    job = _start(db, owner.id, key_id)
    assert job["total"] == 600 and job["state"] == "running"
    assert db.call(undo_jobs.claim, job_id=job["id"], runner=RUNNER, now=utcnow())
    work = []
    while True:
        progress, cost = db.call(_measured_batch, job_id=job["id"], size=50)
        assert progress is not None
        work.append(cost)
        if progress["state"] == "done":
            break
    assert len(work) == 12 and progress["undone"] == 600  # twelve transactions of fifty
    # The undos of one job share no look-up that grows with the job (it grew with every undo
    # already made: they shared one instant, and the change log is indexed by instant).
    # Medians of three: a plan the database picks once mid-job under load (autovacuum's new
    # statistics) is one batch's; work that grows with the job is every late batch's.
    assert sorted(work[-3:])[1] < 2 * sorted(work[:3])[1], work


def test_a_job_keeps_what_each_change_came_to_and_ends_when_all_are_handled(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    first, second, third = changes_of_key(db, owner, key_id, 3)
    db.call(  # someone else changes the first since: its undo is refused
        update_event,
        principal=keys.owner_principal(owner.id),
        event_id=first,
        body={"title": "Mine now"},
        now=utcnow(),
    )
    job = _start(db, owner.id, key_id)
    assert db.call(undo_jobs.claim, job_id=job["id"], runner=RUNNER, now=utcnow())
    assert not db.call(undo_jobs.claim, job_id=job["id"], runner="run_other", now=utcnow())
    seen = []
    while done := db.call(undo_jobs.undo_batch, job_id=job["id"], runner=RUNNER, size=1):
        seen.append((done["done"], done["state"]))
    assert seen == [(1, "running"), (2, "running"), (3, "done")]
    undone = db.call(undo_jobs.undo_job_results, user_id=owner.id, job_id=job["id"],
                     outcome="undone")  # fmt: skip
    assert [r["change"]["eventId"] for r in undone] == [third, second]  # newest first
    assert all("undoneBy" in r["change"] for r in undone)
    [refused] = db.call(undo_jobs.undo_job_results, user_id=owner.id, job_id=job["id"],
                        outcome="refused")  # fmt: skip
    assert refused["change"]["eventId"] == first and refused["code"] == "conflict"
    stranger = factory.owner()
    assert db.call(undo_jobs.undo_job_results, user_id=stranger.id, job_id=job["id"],
                   outcome="undone") == []  # fmt: skip


def test_a_job_no_runner_holds_any_more_is_resumable_from_where_it_was(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner)
    changes_of_key(db, owner, key_id, 4)
    job = _start(db, owner.id, key_id)
    now = utcnow()
    assert job["id"] in db.call(undo_jobs.resumable, now=now)
    assert db.call(undo_jobs.claim, job_id=job["id"], runner=RUNNER, now=now)
    db.call(undo_jobs.undo_batch, job_id=job["id"], runner=RUNNER, size=3)
    assert job["id"] not in db.call(undo_jobs.resumable, now=utcnow())  # held
    later = utcnow() + undo_jobs.LEASE * 2  # the runner died: its lease ran out
    assert job["id"] in db.call(undo_jobs.resumable, now=later)
    assert db.call(undo_jobs.claim, job_id=job["id"], runner="run_next", now=later)
    done = db.call(undo_jobs.undo_batch, job_id=job["id"], runner="run_next", size=3)
    assert done is not None and (done["state"], done["undone"]) == ("done", 4)
    assert db.call(undo_jobs.undo_batch, job_id=job["id"], runner=RUNNER, size=3) is None
