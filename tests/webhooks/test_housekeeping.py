"""The housekeeping job: the core's purges, hourly, in a thread, wherever the delivery job runs."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from pathlib import Path

import pytest

from calendar_service.access import call_history as history
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.support import Factory, fresh_database_url, migrated_database, wait_for
from webhooks.housekeeping import HOUSEKEEPING_INTERVAL, housekeeping, housekeeping_job


def _old_call(db: Database, factory: Factory) -> str:
    """A key with one call recorded 400 days ago (past any retention); its id."""
    key_id, _ = factory.key(factory.owner())
    db.call(
        record_call,
        CallRecord(
            key_id=key_id,
            at=utcnow() - timedelta(days=400),
            transport="mcp",
            operation="op",
            method="POST",
            path="/mcp",
            status=200,
            latency_ms=1.0,
            client_addr=None,
            user_agent=None,
            request_id=None,
        ),
    )
    return key_id


async def test_the_housekeeping_job_purges_through_the_database(
    db: Database, factory: Factory
) -> None:
    key_id = _old_call(db, factory)
    purged = await housekeeping(db.config, db)
    assert purged["calls"] >= 1
    assert db.call(history.list_calls, key_id=key_id) == []


async def test_the_housekeeping_job_runs_on_its_schedule(db: Database, factory: Factory) -> None:
    key_id = _old_call(db, factory)
    assert timedelta(hours=1) == HOUSEKEEPING_INTERVAL
    async with housekeeping_job(db.config, db, first_run_after=timedelta(0)):
        await asyncio.to_thread(
            wait_for,
            lambda: db.call(history.list_calls, key_id=key_id) == [],
            what="the scheduled purge",
        )


async def test_the_app_schedules_housekeeping_with_the_delivery_job_and_not_without(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On a database of its own: the delivery job it starts finds nothing of the other tests'."""
    caplog.set_level(logging.INFO, logger="apscheduler")
    with fresh_database_url(tmp_path) as url, migrated_database(make_config(url)) as own_db:
        for run_webhooks in (True, False):
            caplog.clear()
            app = create_app(own_db.config, db=own_db, run_webhooks=run_webhooks)
            async with app.router.lifespan_context(app):
                added = caplog.text
            assert ('Added job "housekeeping"' in added) is run_webhooks
            assert ('Added job "Dispatcher.tick"' in added) is run_webhooks
