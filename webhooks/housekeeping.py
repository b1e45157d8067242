"""The housekeeping job: an APScheduler interval job running the core's retention purges.

Hourly, on a database thread (a large purge must not hold up the event loop), ``housekeeping`` runs
``operations.retention.purge_expired``: call history, the change log and feeds' fetch history past
``CALENDAR_CALL_HISTORY_DAYS``, idempotency records past 24 hours, idle rate buckets, the
changes kept for sync tokens past ``CALENDAR_SYNC_RETENTION_DAYS``, OAuth requests, codes
and tokens expired a day ago; and it writes as expired the proposals (writes that waited for
the owner) past ``CALENDAR_PROPOSAL_TTL``, purging decided ones with the call history. The
first run is a minute after start.

It runs wherever the webhook delivery job (``webhooks.scheduler``) runs, entered beside it:
by the app's lifespan in ``serve`` (unless ``--no-webhooks``) and by ``calendar-service
worker``. A front (the worker's), not the core, which uses no scheduler: this module only
schedules it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from sqlalchemy import Connection

from calendar_service.operations.retention import purge_expired
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.db.transactions import atomic
from calendar_service.platform.timeutil import utcnow

HOUSEKEEPING_JOB_ID = "housekeeping"
HOUSEKEEPING_INTERVAL = timedelta(hours=1)
FIRST_RUN_AFTER = timedelta(minutes=1)


@contextlib.asynccontextmanager
async def housekeeping_job(
    config: Config, db: Database, *, first_run_after: timedelta = FIRST_RUN_AFTER
) -> AsyncIterator[None]:
    """Run ``housekeeping`` every ``HOUSEKEEPING_INTERVAL`` on the running event loop for the
    duration of the block, the first time ``first_run_after`` from now."""
    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.add_job(
        housekeeping,
        "interval",
        seconds=HOUSEKEEPING_INTERVAL.total_seconds(),
        args=(config, db),
        id=HOUSEKEEPING_JOB_ID,
        next_run_time=datetime.now(UTC) + first_run_after,
        coalesce=True,
        max_instances=1,
    )
    scheduler.start()
    try:
        yield
    finally:
        scheduler.shutdown(wait=False)


async def housekeeping(config: Config, db: Database) -> dict[str, int]:
    """Purge what is kept only for a while (``maintenance.purge_expired``), on a database
    thread as a long write (``Database.run_off_loop``: on SQLite the loop's own calls await its
    end instead of waiting for SQLite's lock on the loop); how many rows of each kind went."""
    return await db.run_off_loop(
        _purged,
        now=utcnow(),
        call_history_days=config.call_history_days,
        sync_retention_days=config.sync_retention_days,
    )


def _purged(conn: Connection, **purge: Any) -> dict[str, int]:
    with atomic(conn):
        return purge_expired(conn, **purge)
