"""The gateway (``gateway.perform``): the one path of every key-authenticated call, run as the
fronts run it (``Database.run_grouped``) but without HTTP. It identifies and authorizes the key,
spends its rate budget, runs the operation and records the call, whatever the outcome."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

import pytest
from sqlalchemy import Connection, func, select

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.access.keys import Principal
from calendar_service.access.ratelimit import RateLimiter
from calendar_service.calendar import events
from calendar_service.operations import catalog as operations
from calendar_service.operations import gateway
from calendar_service.operations.gateway import CallContext, Outcome
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    AuthError,
    ExpiredKey,
    InsufficientScope,
    MalformedKey,
    MissingKey,
    NotFound,
    RateLimited,
    RevokedKey,
    UnknownKey,
)
from calendar_service.platform.models import EventCreate, calls_t, rate_buckets_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner, call_context

EVENT_BODY = {
    "title": "Planning",
    "startsAt": "2026-03-02T09:00:00Z",
    "endsAt": "2026-03-02T10:00:00Z",
}


class Keyed(NamedTuple):
    owner: Owner
    key_id: str
    secret: str


@pytest.fixture
def keyed(factory: Factory) -> Keyed:
    """A new owner and a write key of theirs."""
    owner = factory.owner()
    return Keyed(owner, *factory.key(owner))


# A step of a test: what an operation does, and the status it answers.
Step = Callable[[Connection, Principal], tuple[int, Any]]


async def perform(
    db: Database,
    secret: str | None,
    step: Step,
    *,
    ctx: CallContext | None = None,
    limiter: RateLimiter | None = None,
) -> Outcome[Any]:
    """``gateway.perform`` the way the REST and MCP fronts call it, with ``step`` run as the
    operation the context names (its declared permission and status)."""
    ctx = ctx or call_context()
    declared = next(op for op in operations.OPERATIONS if op.name == ctx.operation)
    op = operations.Operation(
        declared.name, declared.needs, lambda conn, principal, **_: step(conn, principal)[1]
    )
    return await db.run_grouped(
        gateway.perform,
        secret=secret,
        ctx=ctx,
        op=op,
        args={},
        limiter=limiter,
        status=declared.status,
    )


async def recorded(db: Database, key_id: str, **filters: Any) -> list[dict[str, Any]]:
    """The key's call history, newest first. Read with ``db.run``, as the fronts read: on
    SQLite it first commits the group a refused call may have left open on the loop's
    connection (``Database.run_grouped``)."""
    return await db.run(history.list_calls, key_id=key_id, **filters)


async def statuses(db: Database, key_id: str) -> list[int]:
    return [c["status"] for c in await recorded(db, key_id)]


def list_op(conn: Connection, principal: Principal) -> tuple[int, Any]:
    return 200, events.list_events(conn, principal=principal, token_key=b"test page-token key")


async def events_of(db: Database, owner: Owner) -> list[dict[str, Any]]:
    principal = events.owner_principal(owner.id)
    return (await db.run(events.list_events, principal=principal, token_key=b"k"))["events"]


# ---------------------------------------------------------------------------------------------
# Success and failure are both recorded


async def test_a_call_that_succeeds_answers_its_outcome_and_is_recorded_once(
    db: Database, keyed: Keyed
) -> None:
    owner, key_id, secret = keyed
    ctx = call_context()
    outcome = await perform(db, secret, list_op, ctx=ctx)
    assert outcome.status == 200
    assert outcome.value["events"] == []
    assert (outcome.principal.key_id, outcome.principal.user_id) == (key_id, owner.id)
    assert outcome.rate is None
    [call] = await recorded(db, key_id)
    assert {k: call[k] for k in ("transport", "operation", "method", "path", "status")} == {
        "transport": "rest",
        "operation": "listCalendarEvents",
        "method": "GET",
        "path": "/api/v1/calendar/events",
        "status": 200,
    }
    assert (call["clientAddr"], call["userAgent"]) == ("127.0.0.1", "core-test/1.0")
    assert call["requestId"] == ctx.request_id
    assert call["latencyMs"] >= 0


async def test_the_status_recorded_is_the_one_the_operation_answered(
    db: Database, keyed: Keyed
) -> None:
    owner, key_id, secret = keyed

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        event, _ = events.create_event_from_input(
            conn, principal=principal, body=EVENT_BODY, now=utcnow()
        )
        return 201, event

    outcome = await perform(db, secret, op, ctx=call_context("createCalendarEvent", "POST"))
    assert outcome.status == 201
    assert await events_of(db, owner) == [outcome.value]
    assert await statuses(db, key_id) == [201]


async def test_a_call_whose_operation_fails_is_undone_and_recorded_with_the_errors_status(
    db: Database, keyed: Keyed
) -> None:
    owner, key_id, secret = keyed

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        events.create_event(
            conn, principal=principal, data=EventCreate.model_validate(EVENT_BODY), now=utcnow()
        )
        raise NotFound("No such thing, after a write.")

    with pytest.raises(NotFound):
        await perform(db, secret, op, ctx=call_context("createCalendarEvent", "POST"))
    assert await events_of(db, owner) == []  # the write before the error was rolled back
    assert await statuses(db, key_id) == [404]


async def test_an_unexpected_error_is_recorded_as_a_500_and_raised_as_it_was(
    db: Database, factory: Factory
) -> None:
    key_id, secret = factory.key(factory.owner())

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        await perform(db, secret, op)
    assert await statuses(db, key_id) == [500]


async def test_the_query_string_is_never_recorded(db: Database, factory: Factory) -> None:
    key_id, secret = factory.key(factory.owner())
    ctx = call_context(path="/api/v1/calendar/events?timeMin=2026-03-02&note=private")
    await perform(db, secret, list_op, ctx=ctx)
    [call] = await recorded(db, key_id)
    assert call["path"] == "/api/v1/calendar/events"


async def test_mcp_calls_are_recorded_under_their_transport(db: Database, factory: Factory) -> None:
    key_id, secret = factory.key(factory.owner())
    ctx = call_context(method="POST", path="/mcp", transport="mcp")
    await perform(db, secret, list_op, ctx=ctx)
    assert [(c["transport"], c["path"]) for c in await recorded(db, key_id)] == [("mcp", "/mcp")]
    assert await recorded(db, key_id, transport="rest") == []


# ---------------------------------------------------------------------------------------------
# The rate budget


async def test_each_call_spends_the_keys_budget_and_one_over_it_is_refused_and_recorded(
    db: Database, factory: Factory
) -> None:
    key_id, secret = factory.key(factory.owner())
    limiter = RateLimiter(2, 3600)
    ran: list[str] = []

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        ran.append(principal.key_id)
        return list_op(conn, principal)

    first = await perform(db, secret, op, limiter=limiter)
    second = await perform(db, secret, op, limiter=limiter)
    assert first.rate is not None and second.rate is not None
    assert (first.rate.remaining, second.rate.remaining) == (1, 0)
    assert second.rate.headers()["RateLimit-Policy"] == "2;w=3600"
    with pytest.raises(RateLimited) as refused:
        await perform(db, secret, op, limiter=limiter)
    assert refused.value.retry_after > 0
    assert ran == [key_id, key_id]  # the refused call never reached the operation
    assert await statuses(db, key_id) == [429, 200, 200]


async def test_keys_of_one_owner_have_budgets_of_their_own(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    (_, one), (_, other) = factory.key(owner), factory.key(owner)
    limiter = RateLimiter(1, 3600)
    await perform(db, one, list_op, limiter=limiter)
    with pytest.raises(RateLimited):
        await perform(db, one, list_op, limiter=limiter)
    outcome = await perform(db, other, list_op, limiter=limiter)
    assert outcome.rate is not None and outcome.rate.remaining == 0


async def test_a_refused_key_spends_no_budget(db: Database, keyed: Keyed) -> None:
    owner, key_id, secret = keyed
    await db.run(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    limiter = RateLimiter(1, 3600)
    for _ in range(3):
        with pytest.raises(RevokedKey):
            await perform(db, secret, list_op, limiter=limiter)
    assert db.call(limiter.spend, key_id=key_id, now=time.time()).remaining == 0  # still its one


async def test_a_call_that_fails_still_spends_the_budget_it_leased(
    db: Database, keyed: Keyed
) -> None:
    _, key_id, secret = keyed
    limiter = RateLimiter(1, 3600)  # every request leases its one token from the database

    def missing(conn: Connection, principal: Principal) -> tuple[int, Any]:
        raise NotFound("event")

    with pytest.raises(NotFound):
        await perform(db, secret, missing, limiter=limiter)
    # Another process (a limiter of its own) finds the budget spent: the lease was committed
    # in a transaction of its own, not rolled back with the failed call.
    with pytest.raises(RateLimited):
        await perform(db, secret, list_op, limiter=RateLimiter(1, 3600))
    assert await statuses(db, key_id) == [429, 404]


async def test_the_next_batch_is_leased_ahead_so_that_no_request_runs_twice(
    db: Database, keyed: Keyed
) -> None:
    _, _, secret = keyed
    # 100 tokens a lease, the next one ahead at 25 left; a token back every 26 minutes, so
    # that none comes back while the test runs, however busy the machine (at 20,000 a day,
    # one came back every 4.3 s: a loaded machine took longer, and the count was off by one).
    limiter = RateLimiter(20_000, 365 * 86_400)
    runs = 0

    def counted(conn: Connection, principal: Principal) -> tuple[int, Any]:
        nonlocal runs
        runs += 1
        return list_op(conn, principal)

    for _ in range(250):
        await perform(db, secret, counted, limiter=limiter)
    # The first request leased (before its operation ran); every later batch came ahead of
    # need, so no request gave up its transaction to lease and ran again.
    assert runs == 250
    leased = db.call(
        lambda conn: conn.execute(
            select(rate_buckets_t.c.tokens).where(rate_buckets_t.c.key_id == keyed.key_id)
        ).scalar_one()
    )
    # The first and two ahead (at 75 and 175 requests), less what refilled meanwhile.
    assert 299 < 20_000 - leased <= 300


# ---------------------------------------------------------------------------------------------
# Keys refused


def never(conn: Connection, principal: Principal) -> tuple[int, Any]:
    raise AssertionError("the operation ran for a refused key")


async def test_a_revoked_key_is_refused_at_once_and_the_refusal_is_in_its_history(
    db: Database, keyed: Keyed
) -> None:
    owner, key_id, secret = keyed
    await perform(db, secret, list_op)
    await db.run(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    with pytest.raises(RevokedKey):
        await perform(db, secret, never)
    assert await statuses(db, key_id) == [401, 200]


async def test_an_expired_key_is_refused_and_the_refusal_is_in_its_history(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    then = utcnow() - timedelta(days=2)
    record, secret = factory.key_record(owner, name="lapsed", now=then)  # expired a day ago
    with pytest.raises(ExpiredKey):
        await perform(db, secret, never)
    assert await statuses(db, record["id"]) == [401]


def _count_calls(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(calls_t)).scalar_one())


async def count_calls(db: Database) -> int:
    return await db.run(_count_calls)


@pytest.mark.parametrize(
    ("secret", "error"),
    [
        (None, MissingKey),
        ("", MissingKey),
        ("calsk_short", MalformedKey),
        (keys.generate_secret(), UnknownKey),
    ],
    ids=["none", "empty", "malformed", "unknown"],
)
async def test_a_call_without_an_existing_key_is_refused_and_leaves_no_history(
    db: Database, secret: str | None, error: type[AuthError]
) -> None:
    before = await count_calls(db)
    with pytest.raises(error):
        await perform(db, secret, never, limiter=RateLimiter(1, 3600))
    assert await count_calls(db) == before


# ---------------------------------------------------------------------------------------------
# Permission and scope, through the path a front takes


async def test_a_read_only_key_cannot_create_change_or_delete_and_each_refusal_is_recorded(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    event, _ = await db.run(
        events.create_event_from_input,
        principal=events.owner_principal(owner.id),
        body=EVENT_BODY,
        now=utcnow(),
    )
    key_id, secret = factory.key(owner, permission="read")

    def create(conn: Connection, principal: Principal) -> tuple[int, Any]:
        made, _ = events.create_event_from_input(
            conn, principal=principal, body=EVENT_BODY, now=utcnow(), idempotency_key="k1"
        )
        return 201, made

    def change(conn: Connection, principal: Principal) -> tuple[int, Any]:
        body = {"title": "Changed"}
        return 200, events.update_event(
            conn, principal=principal, event_id=event["id"], body=body, now=utcnow()
        )

    def remove(conn: Connection, principal: Principal) -> tuple[int, Any]:
        events.delete_event(conn, principal=principal, event_id=event["id"], now=utcnow())
        return 204, None

    for op, name in ((create, "create"), (change, "update"), (remove, "delete")):
        with pytest.raises(InsufficientScope) as refused:
            await perform(db, secret, op, ctx=call_context(f"{name}CalendarEvent", "POST"))
        assert refused.value.required_scope == "calendar:write"
    assert await events_of(db, owner) == [event]
    assert await statuses(db, key_id) == [401, 401, 401]
    # It may still read.
    assert (await perform(db, secret, list_op)).value["events"] == [event]


async def test_a_one_calendar_key_writing_to_another_calendar_is_refused_and_recorded(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    work = factory.calendar(owner, name="Work")
    key_id, secret = factory.key(owner, calendar_id=work)

    def create(conn: Connection, principal: Principal) -> tuple[int, Any]:
        body = {**EVENT_BODY, "calendarId": owner.default_calendar_id}
        made, _ = events.create_event_from_input(conn, principal=principal, body=body, now=utcnow())
        return 201, made

    with pytest.raises(InsufficientScope):
        await perform(db, secret, create, ctx=call_context("createCalendarEvent", "POST"))
    assert await events_of(db, owner) == []
    assert await statuses(db, key_id) == [401]


# ---------------------------------------------------------------------------------------------
# authenticate: MCP's transport-level check


async def test_authenticate_checks_a_key_without_recording_a_call(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, permission="read")
    principal = await db.run(gateway.authenticate, secret=secret)
    assert (principal.key_id, principal.permission) == (key_id, "read")
    assert await recorded(db, key_id) == []
    await db.run(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    with pytest.raises(RevokedKey):
        await db.run(gateway.authenticate, secret=secret)
    assert await recorded(db, key_id) == []


def test_whether_a_key_may_perform_an_operation_is_told_without_recording_a_call(
    db: Database, factory: Factory
) -> None:
    owner = factory.owner()
    secrets = {
        permission: factory.key(owner, name=permission, permission=permission)[1]
        for permission in ("read", "write", "freebusy")
    }
    for op, allowed in (
        (operations.IMPORT, {"write"}),
        (operations.LIST, {"read", "write"}),
        (operations.FREE_BUSY, {"read", "write", "freebusy"}),
    ):
        told = {p for p, s in secrets.items() if db.call(gateway.may_perform, secret=s, op=op)}
        assert told == allowed, op.name
    for secret in (None, "calsk_nothing", secrets["write"] + "x"):
        assert not db.call(gateway.may_perform, secret=secret, op=operations.IMPORT)
    key_id = factory.key(owner, name="quiet", permission="write")
    assert db.call(gateway.may_perform, secret=key_id[1], op=operations.CREATE)
    with db.engine.connect() as conn:
        assert not conn.execute(calls_t.select().where(calls_t.c.key_id == key_id[0])).first()
