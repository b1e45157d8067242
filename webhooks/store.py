"""The delivery state machine in SQL: claim due deliveries, record each attempt.

Claiming takes a *lease*: ``lease_until`` is set in the future and the row is skipped by other
workers until it passes, so a worker killed mid-send strands nothing (another worker re-sends
with the same ``webhook-id`` once the lease expires). On PostgreSQL the claim locks the rows it
picks with ``FOR UPDATE SKIP LOCKED``, so concurrent workers never pick the same row; on SQLite
the single writer does the same job. The lease value is also the claim's token: an outcome is
written only while the row still carries it.

Retries follow the configured schedule with ±10 % jitter; ``Retry-After`` is honoured up to the
schedule's longest delay; 410 disables the endpoint; a delivery whose endpoint failed through
its whole schedule disables the endpoint too.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, insert, or_, select, update

from calendar_service.timeutil import format_utc
from calendar_service.webhook_config import (
    OPEN_STATUSES,
    attempts_t,
    deliveries_t,
    disable_endpoint,
    endpoints_t,
    signing_secrets,
)
from webhooks.sender import ERROR_CHARS, RESPONSE_EXCERPT_CHARS, AttemptResult

JITTER = 0.1


@dataclass(frozen=True, slots=True)
class Claim:
    """A delivery this worker holds until ``lease_until``, with what it needs to send it."""

    id: str
    user_id: str
    endpoint_id: str
    url: str
    attempts: int
    lease_until: datetime
    payload: str = field(repr=False)
    secrets: tuple[str, ...] = field(repr=False)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What recording an attempt decided: the delivery's new status and next attempt."""

    status: str  # "succeeded" | "retrying" | "failed" | "lost" (the lease had passed)
    next_attempt_at: datetime | None = None
    endpoint_disabled: bool = False


def claim_due(
    conn: Connection,
    *,
    now: datetime,
    limit: int,
    lease: timedelta,
    exclude_endpoints: Sequence[str] = (),
) -> list[Claim]:
    """Lease up to ``limit`` due deliveries (oldest due first) and return them, skipping the
    endpoints in ``exclude_endpoints`` (those this worker already has enough of)."""
    due = select(deliveries_t.c.id).where(
        deliveries_t.c.status.in_(OPEN_STATUSES),
        deliveries_t.c.next_attempt_at <= now,
        or_(deliveries_t.c.lease_until.is_(None), deliveries_t.c.lease_until < now),
    )
    if exclude_endpoints:
        due = due.where(deliveries_t.c.endpoint_id.not_in(exclude_endpoints))
    due = (
        due.order_by(deliveries_t.c.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has one writer anyway
    )
    lease_until = now + lease
    rows = conn.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id.in_(due))
        .values(lease_until=lease_until)
        .returning(
            deliveries_t.c.id,
            deliveries_t.c.user_id,
            deliveries_t.c.endpoint_id,
            deliveries_t.c.payload,
            deliveries_t.c.attempts,
        )
    ).all()
    if not rows:
        return []
    endpoints = {
        e.id: e
        for e in conn.execute(
            select(endpoints_t).where(endpoints_t.c.id.in_({r.endpoint_id for r in rows}))
        )
    }
    claims: list[Claim] = []
    stranded: list[str] = []
    for row in sorted(rows, key=lambda r: r.id):
        endpoint = endpoints[row.endpoint_id]
        if endpoint.status != "active":
            stranded.append(row.id)
            continue
        claims.append(
            Claim(
                id=row.id,
                user_id=row.user_id,
                endpoint_id=row.endpoint_id,
                url=endpoint.url,
                attempts=row.attempts,
                lease_until=lease_until,
                payload=row.payload,
                secrets=tuple(signing_secrets(endpoint, now=now)),
            )
        )
    if stranded:
        conn.execute(
            update(deliveries_t)
            .where(deliveries_t.c.id.in_(stranded))
            .values(
                status="failed",
                lease_until=None,
                last_error="webhook disabled",
                completed_at=now,
            )
        )
    return claims


def release(conn: Connection, *, claims: Sequence[Claim]) -> None:
    """Give claims back unsent (their leases end now; any worker may claim them again)."""
    for lease_until in {c.lease_until for c in claims}:
        conn.execute(
            update(deliveries_t)
            .where(
                deliveries_t.c.id.in_([c.id for c in claims if c.lease_until == lease_until]),
                deliveries_t.c.lease_until == lease_until,
            )
            .values(lease_until=None)
        )


def next_delay(
    *,
    attempt_number: int,
    schedule: Sequence[timedelta],
    retry_after: float | None,
    rng: random.Random,
) -> timedelta | None:
    """The wait after failed attempt ``attempt_number`` (1-based), or None when none is left."""
    if attempt_number > len(schedule):
        return None
    delay = schedule[attempt_number - 1] * rng.uniform(1 - JITTER, 1 + JITTER)
    if retry_after is not None:
        delay = max(delay, min(timedelta(seconds=retry_after), max(schedule)))
    return delay


def record_attempt(
    conn: Connection,
    *,
    claim: Claim,
    result: AttemptResult,
    now: datetime,
    schedule: Sequence[timedelta],
    rng: random.Random,
) -> Outcome:
    """Write the attempt row and move the delivery (and maybe its endpoint) on."""
    conn.execute(
        insert(attempts_t).values(
            delivery_id=claim.id,
            at=result.at,
            status_code=result.status_code,
            duration_ms=result.duration_ms,
            response_excerpt=_clip(result.response_excerpt, RESPONSE_EXCERPT_CHARS),
            error=_clip(result.error, ERROR_CHARS),
        )
    )
    endpoint = conn.execute(
        select(endpoints_t.c.status, endpoints_t.c.failing_since).where(
            endpoints_t.c.id == claim.endpoint_id
        )
    ).one()
    number = claim.attempts + 1
    values: dict[str, Any] = {
        "attempts": number,
        "last_status_code": result.status_code,
        "last_error": _clip(result.error, ERROR_CHARS),
        "lease_until": None,
    }
    disable_reason = None
    delay = None
    if result.ok:
        values.update(status="succeeded", completed_at=now)
    elif result.status_code == 410:
        disable_reason = "the receiver answered 410 Gone"
    elif endpoint.status == "active":
        delay = next_delay(
            attempt_number=number, schedule=schedule, retry_after=result.retry_after, rng=rng
        )
    if not result.ok:
        if delay is None:
            values.update(status="failed", completed_at=now)
        else:
            values.update(status="retrying", next_attempt_at=now + delay)
    written = conn.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id == claim.id, deliveries_t.c.lease_until == claim.lease_until)
        .values(**values)
    ).rowcount
    if not written:
        return Outcome(status="lost")
    failing_since = endpoint.failing_since
    if result.ok and failing_since is not None:
        _set_failing_since(conn, claim.endpoint_id, None)
    elif not result.ok and failing_since is None:
        failing_since = result.at
        _set_failing_since(conn, claim.endpoint_id, failing_since)
    if disable_reason is None and values["status"] == "failed" and endpoint.status == "active":
        first = conn.execute(
            select(func.min(attempts_t.c.at)).where(attempts_t.c.delivery_id == claim.id)
        ).scalar_one()
        if failing_since is not None and failing_since <= first:
            disable_reason = (
                f"every delivery failed since {format_utc(failing_since)}, through a whole "
                "retry schedule"
            )
    if disable_reason is not None and endpoint.status == "active":
        disable_endpoint(conn, user_id=claim.user_id, reason=disable_reason, now=now)
    return Outcome(
        status=values["status"],
        next_attempt_at=values.get("next_attempt_at"),
        endpoint_disabled=disable_reason is not None,
    )


def _set_failing_since(conn: Connection, endpoint_id: str, value: datetime | None) -> None:
    conn.execute(
        update(endpoints_t).where(endpoints_t.c.id == endpoint_id).values(failing_since=value)
    )


def _clip(text: str | None, size: int) -> str | None:
    return None if text is None else text[:size]
