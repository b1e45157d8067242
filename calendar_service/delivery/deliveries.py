"""The webhook delivery state machine in SQL: claim due deliveries, record each attempt
(``AttemptResult``, what the sender in ``webhooks/`` reports of one).

Claiming takes a *lease*: ``lease_until`` is set in the future and the row is skipped by other
workers until it passes; the worker renews it (``renew``) while it holds the delivery, so a
short lease (15 s) never runs out under a slow receiver, and a worker killed mid-send strands
nothing for long (another worker re-sends with the same ``webhook-id`` once the lease expires:
at least once, and twice only for a delivery in flight when its worker died). On PostgreSQL
the claim locks the rows it picks with ``FOR UPDATE SKIP LOCKED``, so concurrent workers never
pick the same row; on SQLite the single writer does the same job. The lease value is also the
claim's token: an outcome is written only while the row still carries it (``renew`` moves both).

Retries follow the configured schedule with ±10 % jitter; ``Retry-After`` is honoured up to the
schedule's longest delay; 410 disables the endpoint; a delivery whose endpoint failed through
its whole schedule disables the endpoint too. An endpoint is the owner's own or a key's
subscription (``subscriptions``): a subscription's delivery claimed after its key was revoked
or expired, or after it was deleted, is failed instead of sent.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, or_, select, update

from calendar_service.access import keys
from calendar_service.delivery.webhook_settings import (
    OPEN_STATUSES,
    attempts_t,
    deliveries_t,
    disable_endpoint_by_id,
    endpoints_t,
    signing_secrets,
)
from calendar_service.platform.models import keys_t
from calendar_service.platform.timeutil import format_utc

# What an attempt keeps of the answer: its first characters, and of an error its message.
RESPONSE_EXCERPT_CHARS = 1000
ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one attempt did: ``status_code`` None means no HTTP answer (see ``error``)."""

    at: datetime
    duration_ms: float
    status_code: int | None = None
    response_excerpt: str | None = None
    error: str | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return self.status_code is not None and 200 <= self.status_code < 300


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
    failing: bool = False  # its endpoint's last attempt had failed when it was claimed
    stamped: bool = False  # ``payload`` was stamped at its send (a time trigger's ``late``)


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
    failing_limit: int | None = None,
) -> list[Claim]:
    """Lease up to ``limit`` due deliveries and return them, skipping the endpoints in
    ``exclude_endpoints`` (those this worker already has enough of): the oldest due of the
    endpoints in good standing first (up to ``limit - failing_limit``), then the oldest due of
    the endpoints failing now (whose last attempt failed: ``failing_since``), at most
    ``failing_limit`` of them (None: only when fewer than ``limit`` others are due). So a
    receiver that fails or hangs never stands between the others and their deliveries,
    whichever worker claims, and its own still go out, a few a claim, however busy the others."""
    lease_until = now + lease
    failing = select(endpoints_t.c.id).where(endpoints_t.c.failing_since.is_not(None))
    reserved = 0 if failing_limit is None else max(0, min(failing_limit, limit - 1))
    rows = _lease(
        conn,
        now=now,
        limit=limit - reserved,
        lease_until=lease_until,
        exclude_endpoints=exclude_endpoints,
        endpoints=deliveries_t.c.endpoint_id.not_in(failing),
    )
    room = limit - len(rows)
    if failing_limit is not None:
        room = min(room, failing_limit)
    if room > 0:
        rows += _lease(
            conn,
            now=now,
            limit=room,
            lease_until=lease_until,
            exclude_endpoints=exclude_endpoints,
            endpoints=deliveries_t.c.endpoint_id.in_(failing),
        )
    if not rows:
        return []
    endpoints = {
        e.id: e
        for e in conn.execute(
            _ENDPOINTS_WITH_KEYS.where(endpoints_t.c.id.in_({r.endpoint_id for r in rows}))
        )
    }
    claims: list[Claim] = []
    stranded: dict[str, list[str]] = {}  # why → deliveries failed for it
    for row in sorted(rows, key=lambda r: r.id):
        endpoint = endpoints[row.endpoint_id]
        why = _why_not_sent(endpoint, now)
        if why is not None:
            stranded.setdefault(why, []).append(row.id)
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
                failing=endpoint.failing_since is not None,
            )
        )
    for why, ids in stranded.items():
        conn.execute(
            update(deliveries_t)
            .where(deliveries_t.c.id.in_(ids))
            .values(status="failed", lease_until=None, last_error=why, completed_at=now)
        )
    return claims


def _lease(
    conn: Connection,
    *,
    now: datetime,
    limit: int,
    lease_until: datetime,
    exclude_endpoints: Sequence[str],
    endpoints: Any,
) -> list[Any]:
    """Lease up to ``limit`` due deliveries of the ``endpoints`` chosen (a condition on the
    delivery's endpoint), the oldest due first, none another worker holds."""
    due = select(deliveries_t.c.id).where(
        deliveries_t.c.status.in_(OPEN_STATUSES),
        deliveries_t.c.next_attempt_at <= now,
        or_(deliveries_t.c.lease_until.is_(None), deliveries_t.c.lease_until < now),
        endpoints,
    )
    if exclude_endpoints:
        due = due.where(deliveries_t.c.endpoint_id.not_in(exclude_endpoints))
    due = (
        due.order_by(deliveries_t.c.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has one writer anyway
    )
    return list(
        conn.execute(
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
    )


# The endpoints with their keys (a subscription's: revoked, expiry), in one statement.
_ENDPOINTS_WITH_KEYS = select(
    endpoints_t,
    keys_t.c.id.label("key_row_id"),
    keys_t.c.revoked_at.label("key_revoked_at"),
    keys_t.c.expires_at.label("key_expires_at"),
).select_from(endpoints_t.outerjoin(keys_t, keys_t.c.id == endpoints_t.c.key_id))


def _why_not_sent(endpoint: Any, now: datetime) -> str | None:
    """Why a delivery to ``endpoint`` (a row of ``_ENDPOINTS_WITH_KEYS``) is failed instead of
    sent, or None: the endpoint is not active, or it is a subscription whose key was revoked or
    has expired since it was queued (a key's subscriptions stop at once)."""
    if endpoint.status == "deleted":
        return "subscription deleted"
    if endpoint.status != "active":
        return "webhook disabled"
    if endpoint.key_id is not None:
        if endpoint.key_row_id is None:
            return "the subscription's key was revoked"
        state = keys.state_of(
            revoked_at=endpoint.key_revoked_at, expires_at=endpoint.key_expires_at, now=now
        )
        if state == keys.REVOKED:
            return "the subscription's key was revoked"
        if state == keys.EXPIRED:
            return "the subscription's key has expired"
    return None


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


def renew(conn: Connection, *, held: dict[str, datetime], lease_until: datetime) -> list[str]:
    """Move the leases of the deliveries in ``held`` (id → the lease this worker holds) to
    ``lease_until``; the ids renewed (a lease that has passed and been taken by another worker
    is not: that worker holds the delivery now)."""
    renewed: list[str] = []
    for current in set(held.values()):
        ids = [i for i, lease in held.items() if lease == current]
        renewed += conn.execute(
            update(deliveries_t)
            .where(deliveries_t.c.id.in_(ids), deliveries_t.c.lease_until == current)
            .values(lease_until=lease_until)
            .returning(deliveries_t.c.id)
        ).scalars()
    return renewed


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


def record_attempts(
    conn: Connection,
    *,
    items: Sequence[tuple[Claim, AttemptResult]],
    now: datetime,
    schedule: Sequence[timedelta],
    rng: random.Random,
) -> list[Outcome]:
    """Write the attempt rows and move each delivery (and maybe its endpoint) on, in a few
    statements for the whole batch. A claim whose lease has passed is reported ``lost``: its
    attempt is recorded, its delivery left to the worker that holds it now."""
    if not items:
        return []
    conn.execute(
        insert(attempts_t),
        [
            {
                "delivery_id": claim.id,
                "at": result.at,
                "status_code": result.status_code,
                "duration_ms": result.duration_ms,
                "response_excerpt": _clip(result.response_excerpt, RESPONSE_EXCERPT_CHARS),
                "error": _clip(result.error, ERROR_CHARS),
            }
            for claim, result in items
        ],
    )
    ids = [claim.id for claim, _ in items]
    # The deliveries' leases, locked (no late claim can slip in before the update below), with
    # their endpoints' state (not locked), in one statement.
    leases: dict[str, datetime] = {}
    endpoints: dict[str, _EndpointState] = {}
    for row in conn.execute(
        select(
            deliveries_t.c.id,
            deliveries_t.c.lease_until,
            endpoints_t.c.id.label("endpoint_id"),
            endpoints_t.c.status,
            endpoints_t.c.failing_since,
        )
        .join(endpoints_t, endpoints_t.c.id == deliveries_t.c.endpoint_id)
        .where(deliveries_t.c.id.in_(ids))
        .with_for_update(of=deliveries_t)
    ):
        leases[row.id] = row.lease_until
        if row.endpoint_id not in endpoints:
            endpoints[row.endpoint_id] = _EndpointState(row.status, row.failing_since)
    decisions: list[tuple[str, datetime, _EndpointState] | None] = []  # None: lease lost
    rows: list[dict[str, Any]] = []
    exhausted: list[tuple[Claim, _EndpointState]] = []
    for claim, result in items:
        if leases.get(claim.id) != claim.lease_until:
            decisions.append(None)
            continue
        endpoint = endpoints[claim.endpoint_id]
        number = claim.attempts + 1
        next_attempt_at = now
        if result.ok:
            status = "succeeded"
            endpoint.failing_since = None
        else:
            endpoint.failing_since = endpoint.failing_since or result.at
            delay = None
            if result.status_code == 410:
                endpoint.disable_reason = (
                    endpoint.disable_reason or "the receiver answered 410 Gone"
                )
            elif endpoint.status == "active":
                delay = next_delay(
                    attempt_number=number,
                    schedule=schedule,
                    retry_after=result.retry_after,
                    rng=rng,
                )
            if delay is None:
                status = "failed"
                if result.status_code != 410:
                    exhausted.append((claim, endpoint))
            else:
                status, next_attempt_at = "retrying", now + delay
        rows.append(
            {
                "b_id": claim.id,
                "b_status": status,
                "b_attempts": number,
                "b_code": result.status_code,
                "b_error": _clip(result.error, ERROR_CHARS),
                "b_next": next_attempt_at,
                "b_completed": None if status == "retrying" else now,
            }
        )
        decisions.append((status, next_attempt_at, endpoint))
    if rows:
        conn.execute(_UPDATE_DELIVERY, rows)
    # A body stamped at its first attempt's send is the body from then on: a retry sends the
    # same bytes (Standard Webhooks), its ``late`` saying when the first was sent.
    stamped = [
        {"b_id": claim.id, "b_payload": claim.payload}
        for (claim, _), decision in zip(items, decisions, strict=True)
        if claim.stamped and decision is not None
    ]
    if stamped:
        conn.execute(_UPDATE_PAYLOAD, stamped)
    _disable_exhausted(conn, exhausted)
    for endpoint_id, endpoint in endpoints.items():
        if endpoint.failing_since != endpoint.was_failing_since:
            conn.execute(
                update(endpoints_t)
                .where(endpoints_t.c.id == endpoint_id)
                .values(failing_since=endpoint.failing_since)
            )
        if endpoint.status == "active" and endpoint.disable_reason:
            disable_endpoint_by_id(
                conn, endpoint_id=endpoint_id, reason=endpoint.disable_reason, now=now
            )
    return [
        Outcome(status="lost")
        if decision is None
        else Outcome(
            status=decision[0],
            next_attempt_at=decision[1] if decision[0] == "retrying" else None,
            endpoint_disabled=decision[0] == "failed"
            and decision[2].status == "active"
            and decision[2].disable_reason is not None,
        )
        for decision in decisions
    ]


_UPDATE_DELIVERY = (
    update(deliveries_t)
    .where(deliveries_t.c.id == bindparam("b_id"))
    .values(
        status=bindparam("b_status"),
        attempts=bindparam("b_attempts"),
        last_status_code=bindparam("b_code"),
        last_error=bindparam("b_error"),
        next_attempt_at=bindparam("b_next"),
        completed_at=bindparam("b_completed"),
        lease_until=None,
    )
)


_UPDATE_PAYLOAD = (
    update(deliveries_t)
    .where(deliveries_t.c.id == bindparam("b_id"))
    .values(payload=bindparam("b_payload"))
)


class _EndpointState:
    """An endpoint as a batch of outcomes changes it."""

    def __init__(self, status: str, failing_since: datetime | None) -> None:
        self.status = status
        self.failing_since = failing_since
        self.was_failing_since = failing_since
        self.disable_reason: str | None = None


def _disable_exhausted(conn: Connection, exhausted: list[tuple[Claim, _EndpointState]]) -> None:
    """A delivery that used up its schedule disables its endpoint when the endpoint has failed
    without a break since that delivery's first attempt (so: for a whole schedule)."""
    candidates = [(c, e) for c, e in exhausted if e.status == "active" and e.failing_since]
    if not candidates:
        return
    firsts: dict[str, datetime] = dict(
        conn.execute(
            select(attempts_t.c.delivery_id, func.min(attempts_t.c.at))
            .where(attempts_t.c.delivery_id.in_([c.id for c, _ in candidates]))
            .group_by(attempts_t.c.delivery_id)
        ).all()
    )
    for claim, endpoint in candidates:
        since = endpoint.failing_since
        if since is not None and since <= firsts[claim.id] and not endpoint.disable_reason:
            endpoint.disable_reason = (
                f"every delivery failed since {format_utc(since)}, through a whole retry schedule"
            )


def _clip(text: str | None, size: int) -> str | None:
    return None if text is None else text[:size]
