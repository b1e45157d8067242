"""``Idempotency-Key`` for event creation (IETF httpapi draft; Stripe's behaviour).

The same key with the same request within 24 h returns the first response; with a different
request, 422; while the first is still in flight, 409. A create that waits for the owner's
approval (``governance.proposals``) is stored as its proposal (status 202, ``{proposalId}``): a
retry with the same key answers that proposal as it is then, and proposes nothing new.

The lookup, the work and the stored response share one transaction, so a durable 201 always
has its record and a failed request (a validation error, a crash) leaves nothing behind: the key
can be reused once the request is fixed. On PostgreSQL a transaction-scoped advisory lock on
(key, Idempotency-Key) tells a concurrent duplicate that the first is in flight (409); SQLite
runs write transactions one at a time, so there a duplicate simply waits and replays.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, delete, insert, select, text

from calendar_service.platform.errors import (
    FieldError,
    IdempotencyInFlight,
    IdempotencyMismatch,
    ValidationFailed,
)
from calendar_service.platform.models.keys import records_t

RETENTION = timedelta(hours=24)
MAX_KEY_LENGTH = 255
HEADER = "Idempotency-Key"  # REST's header, and the field the core's errors name
ARGUMENT = "idempotencyKey"  # the MCP tool's argument (its errors are renamed to it)


PROPOSED = 202  # the stored status of a create that waits for the owner (``store_proposal``)


@dataclass(slots=True)
class Replay:
    status: int
    body: Any


@dataclass(frozen=True, slots=True)
class Pending:
    """The record a request is about to store under its key (``store``, ``store_proposal``)."""

    key_id: str
    idem_key: str
    print_: str


def fingerprint(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def given_key(value: object) -> tuple[str | None, list[FieldError]]:
    """The key a front was given (``None`` when none), and the error when it is no string:
    the call then runs without a key, and the error is reported with the body's."""
    if value is None or isinstance(value, str):
        return value, []
    return None, [FieldError(HEADER, "must be a string")]


def check_key(idem_key: str) -> str:
    if not 1 <= len(idem_key) <= MAX_KEY_LENGTH or not idem_key.isprintable():
        raise ValidationFailed(
            [FieldError(HEADER, f"must be 1 to {MAX_KEY_LENGTH} printable characters")]
        )
    return idem_key


def lookup(
    conn: Connection, *, key_id: str, idem_key: str, print_: str, now: datetime
) -> Replay | None:
    """The stored response to replay, or None when this request should run (and be stored)."""
    _lock(conn, key_id, idem_key)
    row = conn.execute(
        select(records_t).where(records_t.c.key_id == key_id, records_t.c.idem_key == idem_key)
    ).first()
    if row is None:
        return None
    if row.created_at <= now - RETENTION:
        conn.execute(delete(records_t).where(records_t.c.id == row.id))
        return None
    if row.fingerprint != print_:
        raise IdempotencyMismatch()
    return Replay(row.status_code, orjson.loads(row.response))


def _lock(conn: Connection, key_id: str, idem_key: str) -> None:
    """PostgreSQL: hold (key, Idempotency-Key) until the transaction ends, or 409 when a
    concurrent request holds it (``lookup``'s; taken again by ``store_proposal``, since a
    savepoint rolled back may have let it go)."""
    if conn.dialect.name != "postgresql":
        return
    lock = int.from_bytes(
        hashlib.sha256(f"{key_id}\0{idem_key}".encode()).digest()[:8], "big", signed=True
    )
    if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": lock}).scalar():
        raise IdempotencyInFlight()


def store_proposal(conn: Connection, pending: Pending, *, proposal_id: str, now: datetime) -> None:
    """Store, under the request's key, that it waits for the owner as the proposal
    ``proposal_id`` (the create it would have stored was undone with its write)."""
    _lock(conn, pending.key_id, pending.idem_key)
    store(
        conn,
        key_id=pending.key_id,
        idem_key=pending.idem_key,
        print_=pending.print_,
        status=PROPOSED,
        body={"proposalId": proposal_id},
        now=now,
    )


def store(
    conn: Connection,
    *,
    key_id: str,
    idem_key: str,
    print_: str,
    status: int,
    body: Any,
    now: datetime,
) -> None:
    conn.execute(
        insert(records_t).values(
            key_id=key_id,
            idem_key=idem_key,
            fingerprint=print_,
            status_code=status,
            response=orjson.dumps(body).decode(),
            created_at=now,
            completed_at=now,
        )
    )


def purge(conn: Connection, *, now: datetime) -> int:
    result = conn.execute(delete(records_t).where(records_t.c.created_at < now - RETENTION))
    return int(result.rowcount or 0)
