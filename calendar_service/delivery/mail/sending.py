"""The mail outbox's state machine in SQL: claim due messages, record each attempt; and the
owner's view of it.

Claiming works as for webhook deliveries (``delivery.deliveries``): a short *lease* set in the
future, skipped by other workers until it passes (on PostgreSQL the claim also locks the rows
it picks, ``FOR UPDATE SKIP LOCKED``, so two processes never claim one message; on SQLite the
single writer does). An outcome is written only while the row still carries the claim's lease.
A worker killed mid-send leaves its lease to run out; the message is sent again by the next
worker (at least once; twice only for one whose server accepted it just before the kill, and
then with the same ``Message-ID``, which mail clients take as one message).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, or_, select, update

from calendar_service.journal.mail_queue import FAILED, OPEN, RETRYING, SENT, mail_t
from calendar_service.platform.timeutil import format_utc

JITTER = 0.1
ERROR_CHARS = 500
LIST_MOST = 200


@dataclass(frozen=True, slots=True)
class MailClaim:
    id: str
    attempts: int
    lease_until: datetime
    recipient: str
    payload: str = field(repr=False)


def claim_due(conn: Connection, *, now: datetime, limit: int, lease: timedelta) -> list[MailClaim]:
    """Lease up to ``limit`` due messages (oldest due first) and return them."""
    due = (
        select(mail_t.c.id)
        .where(
            mail_t.c.status.in_(OPEN),
            mail_t.c.next_attempt_at <= now,
            or_(mail_t.c.lease_until.is_(None), mail_t.c.lease_until < now),
        )
        .order_by(mail_t.c.next_attempt_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    lease_until = now + lease
    rows = conn.execute(
        update(mail_t)
        .where(mail_t.c.id.in_(due))
        .values(lease_until=lease_until)
        .returning(mail_t.c.id, mail_t.c.attempts, mail_t.c.recipient, mail_t.c.payload)
    ).all()
    return [
        MailClaim(row.id, row.attempts, lease_until, row.recipient, row.payload)
        for row in sorted(rows, key=lambda r: r.id)
    ]


def renew(conn: Connection, *, claims: Sequence[MailClaim], lease_until: datetime) -> None:
    """Move the leases this worker holds to ``lease_until`` (while a slow server takes its
    time); a lease another worker took since stays theirs."""
    for claim in claims:
        conn.execute(
            update(mail_t)
            .where(mail_t.c.id == claim.id, mail_t.c.lease_until == claim.lease_until)
            .values(lease_until=lease_until)
        )


def record_attempt(
    conn: Connection,
    *,
    claim: MailClaim,
    lease_until: datetime,
    error: str | None,
    permanent: bool,
    now: datetime,
    schedule: Sequence[timedelta],
    rng: random.Random,
) -> str:
    """Record one attempt (``error`` ``None``: the server took it); the message's new status,
    or ``lost`` when its lease has passed to another worker."""
    number = claim.attempts + 1
    values: dict[str, Any] = {"attempts": number, "lease_until": None}
    if error is None:
        values.update(status=SENT, sent_at=now, last_error=None)
    elif permanent or number > len(schedule):
        values.update(status=FAILED, last_error=error[:ERROR_CHARS])
    else:
        delay = schedule[number - 1] * rng.uniform(1 - JITTER, 1 + JITTER)
        values.update(status=RETRYING, next_attempt_at=now + delay, last_error=error[:ERROR_CHARS])
    done = conn.execute(
        update(mail_t)
        .where(mail_t.c.id == claim.id, mail_t.c.lease_until == lease_until)
        .values(**values)
    )
    return str(values["status"]) if done.rowcount else "lost"


def next_due(conn: Connection) -> datetime | None:
    """When the next open message falls due (for the worker's wake-up), if any."""
    found = conn.execute(
        select(mail_t.c.next_attempt_at)
        .where(mail_t.c.status.in_(OPEN))
        .order_by(mail_t.c.next_attempt_at)
        .limit(1)
    ).scalar()
    return found


def list_mail(conn: Connection, *, user_id: str, limit: int = LIST_MOST) -> list[dict[str, Any]]:
    """The owner's messages, newest first: to whom, what, its state and attempts."""
    rows = conn.execute(
        select(mail_t)
        .where(mail_t.c.user_id == user_id)
        .order_by(mail_t.c.created_at.desc(), mail_t.c.id.desc())
        .limit(limit)
    )
    return [
        {
            "id": r.id,
            "recipient": r.recipient,
            "method": r.method,
            "subject": r.subject,
            "eventId": r.event_id,
            "changeId": r.change_id,
            "keyId": r.key_id,
            "status": r.status,
            "attempts": r.attempts,
            "lastError": r.last_error,
            "createdAt": format_utc(r.created_at),
            "sentAt": format_utc(r.sent_at) if r.sent_at else None,
            "nextAttemptAt": format_utc(r.next_attempt_at) if r.status in OPEN else None,
        }
        for r in rows
    ]
