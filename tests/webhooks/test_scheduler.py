"""The scheduler's housekeeping job."""

from __future__ import annotations

from datetime import timedelta

from calendar_service import history
from calendar_service.db import Database
from calendar_service.history import CallRecord, record_call
from calendar_service.timeutil import utcnow
from tests.support import Factory
from webhooks.scheduler import housekeeping


async def test_the_scheduled_housekeeping_job_purges_through_the_database(
    db: Database, factory: Factory
) -> None:
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
    purged = await housekeeping(db.config, db)
    assert purged["calls"] >= 1
    assert db.call(history.list_calls, key_id=key_id) == []
