"""Call history: one row per request that presented an existing key, whatever its outcome.

Stored: time, key, transport, operation, method, path (never the query string), status,
latency, client address, user agent, request id, and whether it was a dry run (``dryRun``:
every check ran, nothing was written). Never a secret or a body.

A key's *last use* is its last call that was let through (``last_use``): whatever the answer
(a 404 or a 400 is the key at work), except the refusals of the key itself, 401 (revoked,
expired, a grant withdrawn), 403 (a scope or calendar it lacks) and 429 (over its rate).
A stolen key that is refused, or a revoked one still knocking, is not "used".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, case, delete, func, insert, select

from calendar_service.platform.db import Statement
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.models.columns import to_db
from calendar_service.platform.models.keys import calls_t, keys_t
from calendar_service.platform.timeutil import format_utc

STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
TRANSPORTS = ("rest", "mcp", "caldav")
REFUSALS = (401, 403, 429)
"""The statuses of a call the key was refused: never its last use."""


@dataclass(slots=True)
class CallRecord:
    key_id: str
    at: datetime
    transport: str
    operation: str
    method: str
    path: str
    status: int
    latency_ms: float
    client_addr: str | None
    user_agent: str | None
    request_id: str | None
    dry_run: bool = False


# Every request writes one; run straight from the driver (see db.Statement).
_INSERT = Statement(
    insert(calls_t).values({c.name: bindparam(c.name) for c in calls_t.c if c.name != "id"})
)


def client_columns(client_addr: str | None, user_agent: str | None) -> dict[str, str | None]:
    """Who asked, as the histories store it (a key's calls, a feed's fetches): empty as
    ``None``, cut to the columns' sizes."""
    return {
        "client_addr": (client_addr or None) and client_addr[:64],
        "user_agent": (user_agent or None) and user_agent[:512],
    }


def record_call(conn: Connection, record: CallRecord) -> None:
    # Never a query string; a NUL (``%00`` in the URL, refused with a 400) stored as sent.
    path = record.path.split("?", 1)[0].replace("\x00", "%00")[:512]
    _INSERT.run(
        conn,
        **{
            "key_id": record.key_id,
            "at": to_db(record.at, conn.dialect.name),
            "transport": record.transport,
            "operation": record.operation[:64],
            "method": record.method[:16],
            "path": path,
            "status": record.status,
            "latency_ms": round(record.latency_ms, 3),
            **client_columns(record.client_addr, record.user_agent),
            "request_id": record.request_id,
            "dry_run": record.dry_run,
        },
    )


def last_use(key_id: ColumnElement[Any] | str) -> ColumnElement[Any]:
    """When the key ``key_id`` (an id, or a column of one) was last used: the time of its last
    call that was not a refusal (``REFUSALS``), or NULL. Read backwards through the
    (key_id, at) index from the newest call, so it stops at the first one let through."""
    return (
        select(calls_t.c.at)
        .where(calls_t.c.key_id == key_id, calls_t.c.status.not_in(REFUSALS))
        .order_by(calls_t.c.at.desc())
        .limit(1)
        .scalar_subquery()
    )


def call_public(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "at": format_utc(row.at),
        "transport": row.transport,
        "operation": row.operation,
        "method": row.method,
        "path": row.path,
        "status": row.status,
        "latencyMs": row.latency_ms,
        "clientAddr": row.client_addr,
        "userAgent": row.user_agent,
        "requestId": row.request_id,
        "dryRun": bool(row.dry_run),
    }


def list_calls(
    conn: Connection,
    *,
    key_id: str,
    status_class: str | None = None,
    transport: str | None = None,
    limit: int = 50,
    before_id: int | None = None,
    since: datetime | None = None,
) -> list[dict[str, Any]]:
    """A key's calls, newest first; ``before_id`` pages further back."""
    errors = []
    if status_class is not None and status_class not in STATUS_CLASSES:
        errors.append(FieldError("status", f"must be one of {', '.join(STATUS_CLASSES)}"))
    if transport is not None and transport not in TRANSPORTS:
        errors.append(FieldError("transport", "must be 'rest', 'mcp' or 'caldav'"))
    if errors:
        raise ValidationFailed(errors)
    query = select(calls_t).where(calls_t.c.key_id == key_id)
    if status_class is not None:
        low = int(status_class[0]) * 100
        query = query.where(calls_t.c.status >= low, calls_t.c.status < low + 100)
    if transport is not None:
        query = query.where(calls_t.c.transport == transport)
    if before_id is not None:
        query = query.where(calls_t.c.id < before_id)
    if since is not None:
        query = query.where(calls_t.c.at >= since)
    rows = conn.execute(query.order_by(calls_t.c.id.desc()).limit(limit))
    return [call_public(r) for r in rows]


def calls_per_day(conn: Connection, *, key_id: str, since: datetime) -> dict[str, tuple[int, int]]:
    """A key's calls since ``since``, counted per UTC day: ``{"2026-03-02": (ok, failed)}``.

    A call succeeded when its status is below 400."""
    if conn.dialect.name == "sqlite":
        day = func.substr(calls_t.c.at, 1, 10)  # stored as UTC text "YYYY-MM-DDTHH:MM:SS…"
    else:
        day = func.to_char(func.timezone("UTC", calls_t.c.at), "YYYY-MM-DD")
    failed = func.sum(case((calls_t.c.status >= 400, 1), else_=0))
    rows = conn.execute(
        select(day.label("day"), func.count().label("total"), failed.label("failed"))
        .where(calls_t.c.key_id == key_id, calls_t.c.at >= since)
        .group_by(day)
    )
    return {str(r.day): (int(r.total) - int(r.failed), int(r.failed)) for r in rows}


def purge_calls(conn: Connection, *, now: datetime, keep_days: int) -> int:
    """Delete history older than the retention period; returns how many rows went.

    Key by key, through the (key_id, at) index: calls has no index on ``at`` alone, which
    would cost every request one more index write
    (tests/core/calendar/events/test_query_plan.py)."""
    result = conn.execute(
        delete(calls_t).where(
            calls_t.c.key_id.in_(select(keys_t.c.id).scalar_subquery()),
            calls_t.c.at < now - timedelta(days=keep_days),
        )
    )
    return int(result.rowcount or 0)
