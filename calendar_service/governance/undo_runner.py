"""``UndoJobs``: the undo jobs (``governance.undo_jobs``) a serving process runs, off the event
loop.

The settings pages start a job and hand it here (``start``); the app's lifespan enters
``running`` once, which also takes up the jobs no live runner holds (left by a process that
was killed: their lease ran out), at start and every ``poll`` seconds after. Each job runs
as a task of the event loop: a batch (``undo_batch``, one short transaction) on a database
thread (``Database.run_off_loop``), then the requests that waited for it
(``Database.let_waiting_through``) and a pause in which other connections' writes take
SQLite's lock (``PAUSE_SECONDS``), then the next batch; ``/healthz`` answers all along. On
leaving ``running`` the tasks stop after their batch and the jobs are let go (``release``), for
the next start to go on with.

Core: asyncio only, no scheduler (the jobs' module ``jobs`` holds APScheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection

from calendar_service.governance import undo_jobs
from calendar_service.platform.db import Database
from calendar_service.platform.db.transactions import atomic
from calendar_service.platform.ids import new_id
from calendar_service.platform.timeutil import utcnow

log = logging.getLogger(__name__)

POLL_SECONDS = 5.0  # how often a runner looks for jobs another left
# Between two batches: the writes of other connections (another process, the CLI, a thread),
# which SQLite's busy handler retries every few milliseconds, take the lock in this time.
PAUSE_SECONDS = 0.02


class UndoJobs:
    """This process's runner of undo jobs (see the module's docstring)."""

    def __init__(
        self,
        db: Database,
        *,
        batch: int = undo_jobs.BATCH,
        lease: timedelta = undo_jobs.LEASE,
        poll: float = POLL_SECONDS,
    ) -> None:
        self.db = db
        self.batch = batch
        self.lease = lease
        self.poll = poll
        self.runner = new_id("run")
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._open = False

    def start(self, job_id: str) -> None:
        """Run the job ``job_id`` (just begun) in this process, unless it runs already; a
        process not running jobs (``running`` not entered) leaves it for one that does."""
        if not self._open or job_id in self._tasks:
            return
        task = asyncio.get_running_loop().create_task(self._run(job_id), name=f"undo {job_id}")
        self._tasks[job_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(job_id, None))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run jobs for the duration of the block: those ``start`` is given, and those no live
        runner holds."""
        self._open = True
        watcher = asyncio.get_running_loop().create_task(self._watch(), name="undo jobs")
        try:
            yield
        finally:
            self._open = False
            watcher.cancel()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(watcher, *tasks, return_exceptions=True)
            # A batch cancelled while it ran on the database thread runs to its end: let it.
            await self.db.run_off_loop(_release, runner=self.runner)

    async def _watch(self) -> None:
        while True:
            try:
                for job_id in await self.db.run(undo_jobs.resumable, now=utcnow()):
                    self.start(job_id)
            except Exception:
                log.exception("looking for undo jobs to resume failed")
            await asyncio.sleep(self.poll)

    async def _run(self, job_id: str) -> None:
        try:
            claimed = await self.db.run(
                undo_jobs.claim, job_id=job_id, runner=self.runner, now=utcnow(), lease=self.lease
            )
            while claimed:
                progress = await self.db.run_off_loop(
                    _batch, job_id=job_id, runner=self.runner, size=self.batch, lease=self.lease
                )
                if progress is None or progress["state"] != undo_jobs.RUNNING:
                    return
                await self.db.let_waiting_through()
                await asyncio.sleep(PAUSE_SECONDS)
        except asyncio.CancelledError:
            raise
        except Exception:  # its lease runs out, and a runner tries it again then
            log.exception("undo job %s stopped", job_id)


def _batch(conn: Connection, **options: Any) -> dict[str, Any] | None:
    with atomic(conn):
        return undo_jobs.undo_batch(conn, **options)


def _release(conn: Connection, *, runner: str) -> None:
    with atomic(conn):
        undo_jobs.release(conn, runner=runner)
