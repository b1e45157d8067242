"""Housekeeping run periodically by the scheduler: retention of history and of the change log,
idempotency keys, the changes kept for sync tokens, expired OAuth codes and tokens, time
triggers fired, undo jobs finished, and proposals (writes that waited for the owner) expired
and, once decided, purged."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection

from calendar_service.access import call_history as history
from calendar_service.access import idempotency, oauth, ratelimit
from calendar_service.calendar.events.search import merge_search_index
from calendar_service.calendar.events.sync import DEFAULT_RETENTION_DAYS, purge_changes
from calendar_service.delivery.triggers.firing import purge_fired
from calendar_service.governance import proposals
from calendar_service.governance.undo_jobs import purge_undo_jobs
from calendar_service.interop.ical import feeds
from calendar_service.journal import change_record as change_log


def purge_expired(
    conn: Connection,
    *,
    now: datetime,
    call_history_days: int,
    sync_retention_days: int = DEFAULT_RETENTION_DAYS,
) -> dict[str, int]:
    """Delete call history, the change log and feeds' fetch history past their retention (the
    same), idempotency records past 24 hours, rate buckets idle for a day (full again), the
    changes (tombstones) no sync token still honoured can ask for, OAuth requests, codes and
    tokens expired a day ago, undo jobs finished as long ago as the call history kept, and
    the time triggers fired or skipped two days ago. Pending proposals past their expiry are
    written expired, and decided ones purged with the call history. On SQLite the search
    index's segments are merged (``search.merge_search_index``: 1, else 0)."""
    return {
        "proposalsExpired": proposals.expire(conn, now=now),
        "proposals": proposals.purge(conn, now=now, keep_days=call_history_days),
        "calls": history.purge_calls(conn, now=now, keep_days=call_history_days),
        "changes": change_log.purge(conn, now=now, keep_days=call_history_days),
        "undoJobs": purge_undo_jobs(conn, before=now - timedelta(days=call_history_days)),
        "feedFetches": feeds.purge_fetches(conn, now=now, keep_days=call_history_days),
        "idempotencyKeys": idempotency.purge(conn, now=now),
        "syncChanges": purge_changes(conn, now=now, keep_days=sync_retention_days),
        "rateBuckets": ratelimit.purge_idle(conn, now=now.timestamp()),
        "oauth": oauth.purge(conn, now=now),
        "triggers": purge_fired(conn, now=now),
        "searchIndexMerged": merge_search_index(conn),
    }
