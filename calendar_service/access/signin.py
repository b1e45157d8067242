"""An owner signing in to the settings pages: throttling repeated failed attempts, per email
address and per client address, and an attempt let through (``begin_attempt``) that opens a
session (``owner_sessions``) once its password proves right (``complete_attempt``). The page
(``account.signin``) checks the password in between, off the event loop and outside any
transaction, and says what a lockout means.

A sliding window: more than ``EMAIL_LIMIT`` failures for one email, or ``ADDRESS_LIMIT`` from one
client address, within ``WINDOW`` lock further attempts (right password or not) until the oldest
of those failures leaves the window. Attempts refused while locked do not count, so somebody
hammering an owner's email cannot keep the owner out for longer than one window. A successful
sign-in clears the email's failures (the address's other failures stay).

The counters live in the database, so every server process shares them. Buckets are stored as
keyed hashes (HMAC with the session-signing secret): a mistyped password pasted into the email
field never lands in the table as text.

Checking the count and counting the attempt are one step (``admit``), one at a time per bucket
across every process: on PostgreSQL under a transaction-scoped advisory lock on each bucket
(under READ COMMITTED, attempts made together would otherwise each count the failures committed
before any of theirs, and all pass); on SQLite the transaction is a write transaction from its
first statement (``BEGIN IMMEDIATE``, see ``db``), which already runs them one at a time.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import Connection, bindparam, delete, insert, select, text

from calendar_service.access import owner_sessions
from calendar_service.access import owners as users
from calendar_service.platform.db import Statement
from calendar_service.platform.errors import NotFound
from calendar_service.platform.models.columns import from_db, to_db
from calendar_service.platform.models.owners import failures_t

WINDOW = timedelta(minutes=15)
EMAIL_LIMIT = 5
ADDRESS_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Lockout:
    """Sign-in is refused until ``retry_at`` because of too many failures for ``scope``."""

    scope: Literal["email", "address"]
    retry_at: datetime


def _bucket(pepper: str, kind: str, value: str) -> str:
    return hmac.new(pepper.encode(), f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()


def _buckets(pepper: str, email: str, client_addr: str | None) -> list[tuple[str, str, int]]:
    found = [("email", _bucket(pepper, "email", users.normalize_email(email)), EMAIL_LIMIT)]
    if client_addr:
        found.append(("address", _bucket(pepper, "addr", client_addr), ADDRESS_LIMIT))
    return found


def admit(
    conn: Connection, *, pepper: str, email: str, client_addr: str | None, now: datetime
) -> tuple[Lockout | None, list[int]]:
    """Let one sign-in attempt through the throttle, or not: ``(lockout, [])`` when a lockout is
    in force, else ``(None, ids)`` with the failures counted for the attempt (see
    ``record_failure``). Atomic per bucket across processes (see the module's docstring); the
    locks last until the caller's transaction ends, so keep it short."""
    _lock_buckets(conn, [bucket for _, bucket, _ in _buckets(pepper, email, client_addr)])
    lockout = check(conn, pepper=pepper, email=email, client_addr=client_addr, now=now)
    if lockout is not None:
        return lockout, []
    return None, record_failure(conn, pepper=pepper, email=email, client_addr=client_addr, now=now)


def _lock_buckets(conn: Connection, buckets: list[str]) -> None:
    """On PostgreSQL, take each bucket's advisory lock until the transaction ends, in one
    order for every process (so two attempts never wait on each other's second lock)."""
    if conn.dialect.name != "postgresql":
        return
    for key in sorted({int.from_bytes(bytes.fromhex(b[:16]), "big", signed=True) for b in buckets}):
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})


# Read at every CalDAV request (an app signs in with each): compiled once (``db.Statement``).
_RECENT = Statement(
    select(failures_t.c.at)
    .where(failures_t.c.bucket == bindparam("bucket"), failures_t.c.at > bindparam("since"))
    .order_by(failures_t.c.at.desc())
    .limit(bindparam("limit"))
)


def check(
    conn: Connection, *, pepper: str, email: str, client_addr: str | None, now: datetime
) -> Lockout | None:
    """The lockout in force for this email or address, if any (the later one wins)."""
    worst: Lockout | None = None
    since = to_db(now - WINDOW, conn.dialect.name)
    for scope, bucket, limit in _buckets(pepper, email, client_addr):
        recent = _RECENT.all(conn, bucket=bucket, since=since, limit=limit)
        if len(recent) >= limit:
            retry_at = from_db(recent[-1][0]) + WINDOW
            if worst is None or retry_at > worst.retry_at:
                worst = Lockout(scope, retry_at)  # type: ignore[arg-type]
    return worst


def record_failure(
    conn: Connection, *, pepper: str, email: str, client_addr: str | None, now: datetime
) -> list[int]:
    """Count a failure for the email and the address; returns the rows' ids.

    Sign-in records each attempt as a failure *before* checking the password (which takes a
    good fraction of a second) and takes it back (``forget``) on success, so that attempts made in
    parallel cannot all slip past the limit while their passwords are being checked."""
    ids = [
        int(
            conn.execute(
                insert(failures_t).values(bucket=bucket, at=now).returning(failures_t.c.id)
            ).scalar_one()
        )
        for _, bucket, _ in _buckets(pepper, email, client_addr)
    ]
    conn.execute(delete(failures_t).where(failures_t.c.at <= now - WINDOW))
    return ids


def forget(conn: Connection, *, ids: list[int]) -> None:
    """Take back failures recorded for an attempt that succeeded."""
    if ids:
        conn.execute(delete(failures_t).where(failures_t.c.id.in_(ids)))


def clear_email(conn: Connection, *, pepper: str, email: str) -> None:
    bucket = _bucket(pepper, "email", users.normalize_email(email))
    conn.execute(delete(failures_t).where(failures_t.c.bucket == bucket))


@dataclass(frozen=True, slots=True)
class Attempt:
    """A sign-in attempt let through the throttle, counted as a failure until it succeeds."""

    lockout: Lockout | None
    failure_ids: list[int]
    user_id: str | None
    password_hash: str | None


def begin_attempt(
    conn: Connection, *, pepper: str, email: str, client_addr: str | None, now: datetime
) -> Attempt:
    """Check the throttle and count the attempt (one step, see ``admit``), and read the
    owner's password hash."""
    lockout, ids = admit(conn, pepper=pepper, email=email, client_addr=client_addr, now=now)
    if lockout is not None:
        return Attempt(lockout, [], None, None)
    try:
        user = users.get_user_by_email(conn, email=email)
    except NotFound:
        return Attempt(None, ids, None, None)
    return Attempt(None, ids, user["id"], user["password_hash"])


def complete_attempt(
    conn: Connection, *, pepper: str, email: str, attempt: Attempt, now: datetime
) -> tuple[str, datetime] | None:
    """The password was right: take back the failure and open a session (unless the password
    changed while it was being checked)."""
    assert attempt.user_id is not None
    current = users.get_user(conn, user_id=attempt.user_id)["password_hash"]
    if current != attempt.password_hash:
        return None
    forget(conn, ids=attempt.failure_ids)
    clear_email(conn, pepper=pepper, email=email)
    return owner_sessions.start_session(conn, user_id=attempt.user_id, now=now)
