"""Housekeeping run periodically by the scheduler: retention of history and idempotency keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection

from calendar_service import history, idempotency
from calendar_service.ical import feeds


def purge_expired(conn: Connection, *, now: datetime, call_history_days: int) -> dict[str, int]:
    """Delete call history and feeds' fetch history past their retention (the same), and
    idempotency records past 24 hours."""
    return {
        "calls": history.purge_calls(conn, now=now, keep_days=call_history_days),
        "feedFetches": feeds.purge_fetches(conn, now=now, keep_days=call_history_days),
        "idempotencyKeys": idempotency.purge(conn, now=now),
    }
