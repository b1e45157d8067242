"""The one path every key-authenticated operation takes, for REST and MCP alike.

``perform`` identifies the key, authorizes it (revoked and expired keys are refused at once:
nothing is cached), spends its rate budget, checks that the key may do the operation (its
``needs``), runs it and records the call in the history, all in one transaction, so that each
request costs at most one commit (on SQLite the requests of one turn of the event loop share it:
``Database.run_grouped``). A request that fails is rolled back and its call is recorded in a
transaction of its own. Requests whose key does not exist (missing, malformed, unknown) have no
history to be recorded in.

A front that has already verified the key for this very request (MCP over HTTP checks it before
the SDK runs, to answer a bad key with HTTP 401) passes the principal instead of the secret, so
that the key is checked once per call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection

from calendar_service.access import idempotency, oauth
from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.access.keys import READ, REVOKED_BY_APP, WRITE, Principal, authorize, identify
from calendar_service.access.ratelimit import LeaseNeeded, RateLimiter, RateState
from calendar_service.governance import proposals
from calendar_service.journal.change_record import Via
from calendar_service.operations.catalog import Operation
from calendar_service.platform.config import DEFAULT_PROPOSAL_TTL
from calendar_service.platform.db.transactions import atomic, rolled_back, tentative
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import CalendarError, RateLimited
from calendar_service.platform.timeutil import utcnow

T = TypeVar("T")

Arguments = Mapping[str, Any] | Callable[[], Mapping[str, Any]]
"""An operation's keyword arguments (but ``conn`` and ``principal``), or a function that makes
them from the request's input: it runs once the permission is checked, so that a read-only key
hears about its permission before its input, and the errors it raises are the call's."""


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
    change_id: str | None = None  # a write's change (``changes``): its id, if it made one
    proposal_id: str | None = None  # a write that waits for the owner: its proposal's id
    replayed: bool = False  # the proposal of an earlier request with the same Idempotency-Key


def _record(
    conn: Connection,
    ctx: CallContext,
    key_id: str,
    status: int,
    at: datetime | None = None,
    dry_run: bool = False,
) -> None:
    record_call(
        conn,
        CallRecord(
            key_id=key_id,
            at=utcnow() if at is None else at,
            transport=ctx.transport,
            operation=ctx.operation,
            method=ctx.method,
            path=ctx.path,
            status=status,
            latency_ms=(time.perf_counter() - ctx.started) * 1000.0,
            client_addr=ctx.client_addr,
            user_agent=ctx.user_agent,
            request_id=ctx.request_id,
            dry_run=dry_run,
        ),
    )


def perform(
    conn: Connection,
    /,
    *,
    secret: str | None = None,
    principal: Principal | None = None,
    ctx: CallContext,
    op: Operation,
    args: Arguments,
    present: Callable[[Any], T] | None = None,
    status: int | None = None,
    refused: CalendarError | None = None,
    limiter: RateLimiter | None = None,
    dry_run: bool = False,
    proposal_ttl: timedelta = DEFAULT_PROPOSAL_TTL,
) -> Outcome[T]:
    """Run ``op`` for the key ``secret`` (or the ``principal`` the front verified for this
    request) and record the call, in one transaction; a call that fails is rolled back, then
    recorded (in a transaction of its own, or in the group's if it failed before writing).

    In order: the key, its rate budget, ``refused`` (a request the front refused before any
    operation, such as a body too large: raised once the key is known, so that the refusal is
    in its history), ``op.needs``, ``args``, ``op.run``, then ``present`` (the front's answer
    made of the result, inside the transaction; the result itself without it). The call is
    recorded with ``status``, else ``op.status_of`` the answer, else ``op.status``; the
    ``Outcome`` carries it. An operation that leaves work for later
    (``later.Later``) gives a ``Later`` that ends with ``present``: the caller completes it
    with ``finished``, off the event loop.

    ``conn`` must not be in a transaction, except a group commit's (``Database.run_grouped``):
    this function opens and ends them (with ``atomic``, which joins the group), and the
    operation must not open or end any itself.

    Under ``Database.run_grouped`` this whole function may run twice for one request, the
    second time on its own, when the group it ran in is rolled back; it is safe to run again
    as long as the operation, ``args`` and ``present`` keep the contract written at
    ``operations.Operation``. The run that counts is the last: its writes are committed, its
    call is the one recorded, its ``Outcome`` or error is the caller's. A rerun spends the
    key's rate budget again (``limiter`` lives in memory, outside the transaction).

    When this process's allowance of the key's budget is used up (``ratelimit``), the request's
    transaction is given up before it writes anything, the allowance is leased from the shared
    budget in a transaction of its own (so that it counts even if the request then fails),
    spending the request's token (or answering its refusal), and the request starts again
    with it. The request that the limiter asks to lease ahead (``RateState.refill``) does so
    after its own work, in a transaction of its own, so that others rarely start again.

    A write (``op.needs`` ``write``) gets ``via``: who makes its change (the key) and through
    what (``ctx``), and the change it recorded comes back as ``Outcome.change_id``.
    ``dry_run``: a write runs every check it makes by making the write, in a savepoint that is
    rolled back (``db.rolled_back``: no event, change, webhook, idempotency record or sync
    change is kept); the answer is ``op.dry`` of what it would have done, with status 200, and
    the call is recorded as a dry run.

    A write of a key whose writes may wait for the owner (``Principal.approval``) is made in
    a savepoint (``db.tentative``); if its change waits (``governance.proposals.waits``), it is
    undone and kept as a proposal, which is the answer, with status 202 (``Outcome.proposal_id``;
    ``proposal_ttl``: how long it waits). A dry run says whether it would wait
    (``awaitsApproval``)."""
    options: dict[str, Any] = dict(
        secret=secret,
        principal=principal,
        ctx=ctx,
        op=op,
        args=args,
        present=present,
        status=status,
        refused=refused,
        limiter=limiter,
        dry_run=dry_run,
        proposal_ttl=proposal_ttl,
    )
    try:
        outcome = _perform(conn, spent=None, **options)
    except LeaseNeeded as needed:
        assert limiter is not None  # only the limiter raises it
        with atomic(conn):
            spent = limiter.lease(conn, key_id=needed.key_id, now=time.time())
        return _perform(conn, spent=spent, **options)
    if outcome.rate is not None and outcome.rate.refill and limiter is not None:
        with atomic(conn):  # the next batch, before the allowance runs out
            limiter.lease_ahead(conn, key_id=outcome.principal.key_id, now=time.time())
    return outcome


def _perform(
    conn: Connection,
    /,
    *,
    secret: str | None,
    principal: Principal | None,
    ctx: CallContext,
    op: Operation,
    args: Arguments,
    present: Callable[[Any], T] | None,
    status: int | None,
    refused: CalendarError | None,
    limiter: RateLimiter | None,
    spent: RateState | RateLimited | None,
    dry_run: bool,
    proposal_ttl: timedelta,
) -> Outcome[T]:
    """``perform``'s one run; ``spent``: the key's budget already spent by a lease (or its
    refusal), instead of ``limiter.take``."""
    key_id: str | None = None if principal is None else principal.key_id
    via: Via | None = None
    proposal: dict[str, Any] | None = None
    value: Any
    try:
        with atomic(conn):
            if principal is None:
                row = identify(conn, secret=secret)
                key_id = row.id
                principal = authorize(row, now=utcnow())
            rate = _spend(limiter, principal.key_id, spent)
            if refused is not None:
                raise refused
            _require(principal, op)
            kwargs = args() if callable(args) else args
            if op.needs == WRITE:
                via = Via.of(principal, ctx.transport, ctx.request_id)
                kwargs = {**kwargs, "via": via}
            if dry_run and via is not None:
                value, status = _dry_run(conn, principal, op, kwargs, via), 200
            elif via is not None and proposals.may_wait(principal.approval):
                done, proposal = _proposed(conn, principal, op, kwargs, via, proposal_ttl)
                if proposal is not None:
                    value, status = proposal, 202
                else:
                    value = _present(done, present)
            else:
                value = op.run(conn, principal=principal, **kwargs)
                if present is not None:
                    value = value.then(present) if isinstance(value, Later) else present(value)
            if via is not None and via.replayed_proposal is not None and not dry_run:
                # An Idempotency-Key whose first request waits: the same proposal, as it is now.
                proposal = proposals.get_proposal(
                    conn, principal=principal, proposal_id=via.replayed_proposal, now=utcnow()
                )
                value, status = proposal, 202
            if status is None:
                status = op.status if op.status_of is None else op.status_of(value)
            _record(conn, ctx, principal.key_id, status, dry_run=dry_run)
        change_id = None if via is None or dry_run or proposal else via.change_id
        proposal_id = None if proposal is None else proposal["id"]
        replayed = via is not None and via.replayed_proposal is not None
        return Outcome(status, value, principal, rate, change_id, proposal_id, replayed)
    except LeaseNeeded:
        raise  # before any write (``perform`` leases and comes back): nothing to record
    except CalendarError as exc:
        if key_id is not None:
            with atomic(conn):
                _record(conn, ctx, key_id, exc.status, dry_run=dry_run)
        raise
    except Exception:
        if key_id is not None:
            with atomic(conn):
                _record(conn, ctx, key_id, 500, dry_run=dry_run)
        raise


def _dry_run(
    conn: Connection, principal: Principal, op: Operation, kwargs: Mapping[str, Any], via: Via
) -> Any:
    """A write's dry run: made in a savepoint rolled back (``db.rolled_back``), answered with
    ``op.dry`` of what it did (or the proposal an idempotency key replays), saying whether it
    would wait for the owner."""
    with rolled_back(conn):
        done = op.run(conn, principal=principal, **kwargs)
    if via.replayed_proposal is not None:
        value = _dry_replayed(conn, principal, via.replayed_proposal)
    else:
        value = op.dry(done, via.made)
    if proposals.waits(principal.approval, via.made):
        value = {**value, "awaitsApproval": True}
    return value


def _proposed(
    conn: Connection,
    principal: Principal,
    op: Operation,
    kwargs: Mapping[str, Any],
    via: Via,
    ttl: timedelta,
) -> tuple[Any, dict[str, Any] | None]:
    """Make the write in a savepoint: if its change waits for the owner, undo it and keep a
    proposal: ``(None, the proposal)``; else keep it: ``(its result, None)``."""
    items: list[dict[str, Any]] = []
    with tentative(conn) as trial:
        done = op.run(conn, principal=principal, **kwargs)
        if proposals.waits(principal.approval, via.made):
            items = proposals.items_of(conn, user_id=principal.user_id, made=via.made)
            trial.discard()
    if not trial.discarded:
        return done, None
    via.made.clear()
    now = utcnow()
    proposal = proposals.propose(
        conn,
        principal=principal,
        via=via,
        operation=op.name,
        items=items,
        now=now,
        ttl=ttl,
        if_free=via.if_free,
    )
    if via.idempotency is not None:  # a retry with the same key gets this proposal
        idempotency.store_proposal(conn, via.idempotency, proposal_id=proposal["id"], now=now)
    return None, proposal


def _dry_replayed(conn: Connection, principal: Principal, proposal_id: str) -> dict[str, Any]:
    """A dry run of a create whose Idempotency-Key's first request waits for the owner: it
    would change nothing (the retry answers that proposal), and says that it waits."""
    proposal = proposals.get_proposal(
        conn, principal=principal, proposal_id=proposal_id, now=utcnow()
    )
    shown = proposal["before"]
    return {
        "dryRun": True,
        "kind": None,
        "eventId": proposal["eventId"],
        "before": shown,
        "after": shown,
        "awaitsApproval": True,
    }


def _present(value: Any, present: Callable[[Any], T] | None) -> Any:
    if present is None:
        return value
    return value.then(present) if isinstance(value, Later) else present(value)


def _spend(
    limiter: RateLimiter | None, key_id: str, spent: RateState | RateLimited | None
) -> RateState | None:
    if isinstance(spent, RateLimited):
        raise spent
    if spent is not None or limiter is None:
        return spent
    return limiter.take(key_id, time.time())


def refuse(
    conn: Connection, *, secret: str | None, ctx: CallContext, refusal: CalendarError
) -> None:
    """Record a request refused before it reached any operation (a key in the URL, a revoked
    key at the MCP transport) in the history of the key ``secret``, if that key exists: with
    the refusal's status, or the key's own refusal's if it is revoked or expired. Raises the
    key's ``CalendarError`` when there is no such key (nothing to record)."""
    with atomic(conn):
        row = identify(conn, secret=secret)
        status = refusal.status
        try:
            authorize(row, now=utcnow())
        except CalendarError as exc:
            status = exc.status
        _record(conn, ctx, row.id, status)


def refuse_known(conn: Connection, *, key_id: str, ctx: CallContext, status: int) -> None:
    """Record a request refused before any operation for the key ``key_id`` (an OAuth grant
    revoked or expired: the token found it, the secret cannot)."""
    with atomic(conn):
        _record(conn, ctx, key_id, status)


def revoke_by_app(conn: Connection, *, key_id: str, ctx: CallContext) -> None:
    """RFC 7009: a connected app revokes its own grant ``key_id`` (a token of it, and so the
    grant), which keeps who revoked it (``revoked_by`` ``app``: its later refusals say so).
    The request is in the grant's history, at the time the grant ended, so that its owner sees
    when the app disconnected. Answered 200 either way, as RFC 7009 asks."""
    now = utcnow()
    with atomic(conn):
        oauth.revoke_grant(conn, key_id=key_id, now=now, by=REVOKED_BY_APP)
        _record(conn, ctx, key_id, 200, at=now)


async def finished(outcome: Outcome[T]) -> Outcome[T]:
    """``outcome``, with the work its operation left for after the transaction (a
    ``later.Later``: expanding series) done on a thread, off the event loop."""
    if isinstance(outcome.value, Later):
        outcome.value = await asyncio.to_thread(outcome.value.finish)
    return outcome


def _require(principal: Principal, op: Operation) -> None:
    """Refuse ``principal`` an operation its permission does not cover (``op.needs``)."""
    if op.needs == WRITE:
        principal.require_write()
    elif op.needs == READ:
        principal.require_read()


def permits(principal: Principal, op: Operation) -> bool:
    """Whether ``principal``'s permission covers ``op`` (the one rule ``perform`` applies),
    for a front that asks before work that costs (CalDAV parses a PUT's body only for a key
    that may write). ``perform`` still decides, and records."""
    try:
        _require(principal, op)
    except CalendarError:
        return False
    return True


def may_perform(conn: Connection, *, secret: str | None, op: Operation) -> bool:
    """Whether the key ``secret`` would be let through to ``op`` (known, in force, with the
    permission it needs), told without recording a call or spending its rate budget: a front
    asks before work that costs (parsing an import) that only such a key should have done for
    it. ``perform`` still decides, and records."""
    try:
        principal = authorize(identify(conn, secret=secret), now=utcnow())
    except CalendarError:
        return False
    return permits(principal, op)


def authenticate(conn: Connection, *, secret: str | None) -> Principal:
    """Verify a key without recording a call (MCP's transport-level check)."""
    return authorize(identify(conn, secret=secret), now=utcnow())


__all__ = [
    "Arguments",
    "CallContext",
    "Outcome",
    "authenticate",
    "finished",
    "may_perform",
    "perform",
    "refuse",
    "refuse_known",
    "revoke_by_app",
]
