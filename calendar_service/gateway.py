"""The one path every key-authenticated operation takes, for REST and MCP alike.

``perform`` identifies the key, authorizes it (revoked and expired keys are refused at once:
nothing is cached), spends its rate budget, runs the operation and records the call in the
history, all in one transaction, so that each request costs at most one commit (on SQLite the
requests of one turn of the event loop share it: ``Database.run_grouped``). A request that
fails is rolled back and its call is recorded in a transaction of its own. Requests whose key
does not exist (missing, malformed, unknown) have no history to be recorded in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sqlalchemy import Connection

from calendar_service.db.transactions import atomic
from calendar_service.errors import CalendarError
from calendar_service.history import CallRecord, record_call
from calendar_service.keys import Principal, authorize, identify
from calendar_service.ratelimit import RateLimiter, RateState
from calendar_service.timeutil import utcnow

T = TypeVar("T")


@dataclass(slots=True)
class CallContext:
    """What the front knows about the request (never the query string or the body)."""

    transport: str  # "rest" | "mcp"
    operation: str
    method: str
    path: str
    client_addr: str | None
    user_agent: str | None
    request_id: str | None
    started: float  # time.perf_counter() when the request arrived


@dataclass(slots=True)
class Outcome(Generic[T]):
    status: int
    value: T
    principal: Principal
    rate: RateState | None


Operation = Callable[[Connection, Principal], tuple[int, T]]
"""The work of one call: ``op(conn, principal) -> (status, value)``, run by ``perform`` inside the
transaction it opened, once the key is authorized and before the call is recorded.

An operation may run more than once for one request. Under ``Database.run_grouped`` (how the
REST and MCP fronts run ``perform``) the calls of one turn of the event loop share one
transaction on SQLite; when it is rolled back (another call of the group failed after writing,
or the commit failed), ``perform`` runs again, and ``op`` with it, in a transaction of its own.
The first run's writes are undone; only the last run's are committed, and only its value or
error is answered. So an operation must:

- act only through ``conn``, inside the transaction, so that a rollback undoes all it did: no
  effect outside it (no network, files, other connections; no change to caches, globals or
  objects the caller shares), unless repeating it is harmless, such as setting a variable the
  caller reads afterwards, which the last run sets last;
- not open, commit, roll back or end a transaction, ``atomic`` and savepoints included:
  ``perform`` owns them, and inside a group an end of its own would end the other calls' work;
- return a value that needs neither ``conn`` nor the transaction (it reaches the caller after
  the commit) and carries nothing over from an earlier run (a rerun makes new ids and reads
  the clock again, and the earlier run's rows are gone);
- check before it writes where it can: a failure after a write rolls back the whole group, and
  every other call of it runs again.
"""


def _record(conn: Connection, ctx: CallContext, key_id: str, status: int) -> None:
    record_call(
        conn,
        CallRecord(
            key_id=key_id,
            at=utcnow(),
            transport=ctx.transport,
            operation=ctx.operation,
            method=ctx.method,
            path=ctx.path,
            status=status,
            latency_ms=(time.perf_counter() - ctx.started) * 1000.0,
            client_addr=ctx.client_addr,
            user_agent=ctx.user_agent,
            request_id=ctx.request_id,
        ),
    )


def perform(
    conn: Connection,
    *,
    secret: str | None,
    ctx: CallContext,
    op: Operation[T],
    limiter: RateLimiter | None = None,
) -> Outcome[T]:
    """Run ``op(conn, principal)`` for the key ``secret`` and record the call, in one
    transaction; a call that fails is rolled back, then recorded (in a transaction of its own,
    or in the group's if it failed before writing).

    ``conn`` must not be in a transaction, except a group commit's (``Database.run_grouped``):
    this function opens and ends them (with ``atomic``, which joins the group), and ``op`` must
    not open or end any itself.

    Under ``Database.run_grouped`` this whole function may run twice for one request, the
    second time on its own, when the group it ran in is rolled back; it is safe to run again
    as long as ``op`` keeps the contract written at ``Operation``. The run that counts is the
    last: its writes are committed, its call is the one recorded, its ``Outcome`` or error is
    the caller's. A rerun spends the key's rate budget again (``limiter`` lives in memory,
    outside the transaction)."""
    key_id: str | None = None
    try:
        with atomic(conn):
            row = identify(conn, secret=secret)
            key_id = row.id
            principal = authorize(row, now=utcnow())
            rate = limiter.take(principal.key_id, time.monotonic()) if limiter else None
            status, value = op(conn, principal)
            _record(conn, ctx, principal.key_id, status)
        return Outcome(status, value, principal, rate)
    except CalendarError as exc:
        if key_id is not None:
            with atomic(conn):
                _record(conn, ctx, key_id, exc.status)
        raise
    except Exception:
        if key_id is not None:
            with atomic(conn):
                _record(conn, ctx, key_id, 500)
        raise


def authenticate(conn: Connection, *, secret: str | None) -> Principal:
    """Verify a key without recording a call (MCP's transport-level check)."""
    return authorize(identify(conn, secret=secret), now=utcnow())


__all__ = ["CallContext", "Outcome", "authenticate", "perform"]
