"""The time triggers' job: plan, then fire what fell due, about every second and at the very
moment the next trigger falls due.

``TriggerJob.tick`` runs the core's planner (``triggers.planner.plan``) and then claims what
is due (``triggers.firing.fire_due``, in batches, each its own transaction) on a database
thread (``Database.run_off_loop``: planning expands series, which is not for the event loop).
After each batch that queued deliveries it wakes the dispatcher (``wake_deliveries``), which
sends them at once; the first batch is small (``FIRST_BATCH`` rows) and each next one twice
as large, so that a burst's first deliveries go out while the rest are being fired. It then
looks up when the next planned trigger falls due and, if that is before the next poll, asks
for a tick at that moment: a trigger is fired within milliseconds of its time, not up to a poll
later.

Every process that runs the delivery job (``serve``, ``calendar-service worker``) runs it; the
planner's lock and the claim's ``SKIP LOCKED`` make one of them do each piece of work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection

from calendar_service.delivery.triggers import firing, planner
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database, atomic
from calendar_service.platform.timeutil import utcnow

logger = logging.getLogger("webhooks")

DEFAULT_POLL_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class TickReport:
    """What one tick did (tests, benchmarks)."""

    planned: planner.Planned | None
    fired: int
    skipped: int
    deliveries: int
    next_due: datetime | None


FIRST_BATCH = 8
"""Plan rows in a tick's first claim; each next claim takes up to twice as many, up to
``batch`` rows and about ``BATCH_DELIVERIES`` deliveries: the first deliveries of a burst are
queued (and sent) within milliseconds, and the rest follow in transactions short enough that
the dispatcher never runs dry waiting for a large one."""
BATCH_DELIVERIES = 500


def _next_size(size: int, claim: firing.Fired, batch: int) -> int:
    """The next claim's rows: twice ``size``, at most ``batch`` and, at the fan-out the last
    claim saw, about ``BATCH_DELIVERIES`` deliveries."""
    per_row = claim.deliveries / max(1, claim.fired + claim.skipped)
    return max(1, min(batch, size * 2, int(BATCH_DELIVERIES / max(1.0, per_row))))


Step = tuple[Callable[..., Any], dict[str, Any]]
"""A step of a tick: a function of a connection (``plan_step``, ``fire_step``,
``next_due_step``) and its keyword arguments."""


def _tick(
    now: Callable[[], datetime],
    grace: timedelta,
    horizon: timedelta,
    batch: int,
    wake: Callable[[], None] | None,
    stop: Callable[[], bool] = lambda: False,
) -> Generator[Step, Any, TickReport]:
    """One tick as its steps, each to be run in a transaction of its own by whoever drives it
    (``run_tick`` on one connection, ``TriggerJob`` on database threads): plan, fire in
    growing claims (waking the dispatcher after each that queued deliveries), find the next
    due time. Each step's result is sent back in."""
    planned = yield plan_step, {"now": now(), "grace": grace, "horizon": horizon}
    fired = skipped = deliveries = 0
    size = min(batch, FIRST_BATCH)
    while True:
        claim = yield fire_step, {"now": now(), "grace": grace, "limit": size}
        fired, skipped = fired + claim.fired, skipped + claim.skipped
        deliveries += claim.deliveries
        if claim.deliveries and wake is not None:
            wake()
        if not claim.full or stop():
            break
        size = _next_size(size, claim, batch)
    next_due = yield next_due_step, {}
    return TickReport(planned, fired, skipped, deliveries, next_due)


def run_tick(
    conn: Connection,
    *,
    now: Callable[[], datetime],
    grace: timedelta,
    horizon: timedelta = planner.HORIZON,
    batch: int = firing.BATCH,
    wake: Callable[[], None] | None = None,
) -> TickReport:
    """One tick (``_tick``) on ``conn``, each step in a transaction of its own."""
    steps = _tick(now, grace, horizon, batch, wake)
    result = None
    try:
        while True:
            fn, kwargs = steps.send(result)
            result = fn(conn, **kwargs)
    except StopIteration as done:
        report: TickReport = done.value
        return report


def plan_step(
    conn: Connection, *, now: datetime, grace: timedelta, horizon: timedelta
) -> planner.Planned | None:
    """The planner's work, in a transaction of its own."""
    with atomic(conn):
        return planner.plan(conn, now=now, grace=grace, horizon=horizon)


def fire_step(conn: Connection, *, now: datetime, grace: timedelta, limit: int) -> firing.Fired:
    """One claim of due rows and their deliveries, in a transaction of its own."""
    with atomic(conn):
        return firing.fire_due(conn, now=now, grace=grace, limit=limit)


def next_due_step(conn: Connection) -> datetime | None:
    """When the next planned trigger falls due."""
    with atomic(conn):
        return firing.next_due(conn)


class TriggerJob:
    """Runs the ticks of one process (see the module's docstring)."""

    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        wake_deliveries: Callable[[], None] | None = None,
        now: Callable[[], datetime] = utcnow,
        poll_interval: float = DEFAULT_POLL_SECONDS,
        horizon: timedelta = planner.HORIZON,
        batch: int = firing.BATCH,
    ) -> None:
        self.db = db
        self.config = config
        self.wake_deliveries = wake_deliveries
        self.now = now
        self.poll_interval = poll_interval
        self.horizon = horizon
        self.batch = batch
        self.last: TickReport | None = None
        self._running = False
        self._again = False
        self._closed = False
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._idle: asyncio.Event | None = None  # set while no tick runs (made on the loop)

    async def tick(self) -> TickReport | None:
        """One tick (a tick asked for while one runs makes it run once more instead)."""
        if self._closed:
            return None
        if self._running:
            self._again = True
            return None
        self._running = True
        if self._idle is None:
            self._idle = asyncio.Event()
        self._idle.clear()
        report = None
        try:
            while True:
                self._again = False
                report = await self._run_once()
                self.last = report
                if not self._again or self._closed:
                    break
        except Exception:
            logger.exception("time triggers: the tick failed; trying again at the next poll")
        finally:
            self._running = False
            self._idle.set()
        if report is not None and report.next_due is not None:
            self._tick_at(report.next_due)
        return report

    async def _run_once(self) -> TickReport:
        """A tick (``_tick``), each step on a database thread by itself (``run_off_loop``), so
        that on SQLite the dispatcher's claims run between two claims of a burst, not after
        all; it stops claiming once the job is closed."""
        steps = _tick(
            self.now,
            self.config.trigger_grace,
            self.horizon,
            self.batch,
            self.wake_deliveries,
            stop=lambda: self._closed,
        )
        result = None
        try:
            while True:
                fn, kwargs = steps.send(result)
                result = await self.db.run_off_loop(fn, **kwargs)
        except StopIteration as done:
            report: TickReport = done.value
            return report

    def _tick_at(self, when: datetime) -> None:
        """Ask for a tick at ``when`` if that comes before the next poll."""
        delay = (when - self.now()).total_seconds()
        if self._closed or delay >= self.poll_interval:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(0.0, delay), self._spawn)

    def _spawn(self) -> None:
        self._timer = None
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(self.tick())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self, grace: float = 30.0) -> None:
        """Stop ticking; wait (up to ``grace`` seconds) for a tick under way to end: its
        transactions commit or roll back whole either way."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        if self._running and self._idle is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), grace)
        for task in list(self._tasks):
            with contextlib.suppress(Exception):
                await task
