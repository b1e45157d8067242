from __future__ import annotations

from datetime import timedelta

from calendar_service.access import call_history as history
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory


def test_call_history_is_kept_for_the_configured_days_then_purged(
    db: Database, factory: Factory
) -> None:
    key_id, _ = factory.key(factory.owner())
    now = utcnow()
    for age in (0, 89, 91):
        db.call(
            record_call,
            CallRecord(
                key_id=key_id,
                at=now - timedelta(days=age),
                transport="rest",
                operation="op",
                method="GET",
                path=f"/age/{age}",
                status=200,
                latency_ms=1.0,
                client_addr=None,
                user_agent=None,
                request_id=None,
            ),
        )
    purged = db.call(purge_expired, now=now, call_history_days=90)
    assert purged["calls"] >= 1
    kept = [c["path"] for c in db.call(history.list_calls, key_id=key_id)]
    assert kept == ["/age/89", "/age/0"]
