"""The per-key budgets (``ratelimit.RateLimiter``): one token bucket per key in the database,
leased in batches by each process, driven by an injected clock: the budget, its refill, the
headers it answers with, the Retry-After it refuses with, and one budget shared by several
limiters (processes) within the documented bound.

The budgets below refill one request per second (3 requests per 3 seconds), so every figure is
exact in floating point. Each test uses keys of its own (the buckets are shared rows)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from calendar_service.access.ratelimit import (
    IDLE_SECONDS,
    LeaseNeeded,
    RateLimiter,
    RateState,
    most_held,
)
from calendar_service.operations.retention import purge_expired
from calendar_service.platform.db import Database
from calendar_service.platform.errors import RateLimited
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import rate_buckets_t

T0 = 1_000_000.0  # a Unix time; only differences matter


@pytest.fixture
def key() -> str:
    return new_id("key")


def spender(db: Database, limiter: RateLimiter) -> Callable[[str, float], RateState]:
    def spend(key_id: str, now: float) -> RateState:
        return db.call(limiter.spend, key_id=key_id, now=now)

    return spend


def bucket_tokens(db: Database, key_id: str) -> float:
    return db.call(
        lambda conn: conn.execute(
            select(rate_buckets_t.c.tokens).where(rate_buckets_t.c.key_id == key_id)
        ).scalar_one()
    )


def test_a_new_key_starts_with_the_whole_budget_and_each_request_spends_one(
    db: Database, key: str
) -> None:
    spend = spender(db, RateLimiter(3, 3))
    states = [spend(key, T0) for _ in range(3)]
    assert [s.remaining for s in states] == [2, 1, 0]
    # Seconds until the bucket is full again: one per request spent.
    assert [s.reset_seconds for s in states] == [1, 2, 3]
    assert {(s.limit, s.period) for s in states} == {(3, 3)}


def test_a_key_over_its_budget_is_refused_with_the_seconds_until_one_request_is_back(
    db: Database, key: str
) -> None:
    spend = spender(db, RateLimiter(3, 3))
    for _ in range(3):
        spend(key, T0)
    with pytest.raises(RateLimited) as refused:
        spend(key, T0)
    assert refused.value.retry_after == 1
    assert (refused.value.limit, refused.value.period) == (3, 3)
    assert refused.value.status == 429
    assert "more than 3 requests in 3 seconds" in refused.value.message
    assert "retry after 1 seconds" in refused.value.message


def test_retry_after_rounds_up_and_is_never_zero(db: Database, key: str) -> None:
    spend = spender(db, RateLimiter(2, 20))  # one request back every 10 s
    spend(key, T0)
    spend(key, T0)
    with pytest.raises(RateLimited) as refused:
        spend(key, T0 + 2.5)  # a quarter of a request back: 7.5 s to go
    assert refused.value.retry_after == 8
    with pytest.raises(RateLimited) as almost:
        spend(key, T0 + 9.999)
    assert almost.value.retry_after == 1


def test_the_budget_refills_at_the_configured_rate(db: Database, key: str) -> None:
    spend = spender(db, RateLimiter(3, 3))
    for _ in range(3):
        spend(key, T0)
    with pytest.raises(RateLimited):
        spend(key, T0 + 0.5)
    assert spend(key, T0 + 1.0).remaining == 0
    assert spend(key, T0 + 3.0).remaining == 1


def test_refused_requests_spend_nothing(db: Database, key: str) -> None:
    spend = spender(db, RateLimiter(3, 3))
    for _ in range(3):
        spend(key, T0)
    for _ in range(5):
        with pytest.raises(RateLimited):
            spend(key, T0 + 0.25)
    assert spend(key, T0 + 1.0).remaining == 0


def test_a_refused_key_is_refused_from_memory_until_a_token_is_back(db: Database, key: str) -> None:
    limiter = RateLimiter(2, 20)
    spend = spender(db, limiter)
    for _ in range(2):
        spend(key, T0)
    with pytest.raises(RateLimited):
        spend(key, T0)
    # Until the bucket has a whole token again, ``take`` answers without the database.
    with pytest.raises(RateLimited):
        limiter.take(key, T0 + 9.0)
    with pytest.raises(LeaseNeeded):
        limiter.take(key, T0 + 10.0)


def test_an_idle_key_never_saves_up_more_than_the_limit(db: Database, key: str) -> None:
    spend = spender(db, RateLimiter(3, 3))
    spend(key, T0)
    state = spend(key, T0 + 3_600)
    assert state.remaining == 2
    assert state.reset_seconds == 1


def test_each_key_has_a_budget_of_its_own(db: Database) -> None:
    spend = spender(db, RateLimiter(1, 60))
    one, other = new_id("key"), new_id("key")
    spend(one, T0)
    with pytest.raises(RateLimited):
        spend(one, T0)
    assert spend(other, T0).remaining == 0


def test_the_headers_state_the_policy_and_what_is_left(db: Database, key: str) -> None:
    spend = spender(db, RateLimiter(600, 60))
    spend(key, T0)
    state = spend(key, T0)
    assert state.headers() == {
        "RateLimit-Policy": "600;w=60",
        "RateLimit-Limit": "600",
        "RateLimit-Remaining": "598",
        "RateLimit-Reset": "1",  # two requests back at ten a second: 0.2 s, rounded up
    }


def test_limits_from_200_a_period_are_leased_a_hundredth_at_a_time(db: Database, key: str) -> None:
    assert [RateLimiter(n, 60).batch for n in (1, 199, 200, 600, 10**9)] == [1, 1, 2, 6, 100]
    spend = spender(db, RateLimiter(600, 60))
    spend(key, T0)
    assert bucket_tokens(db, key) == 594  # one lease of six, one of them spent from memory
    for _ in range(5):
        spend(key, T0)
    assert bucket_tokens(db, key) == 594
    spend(key, T0)
    assert bucket_tokens(db, key) == 588


def test_two_processes_share_one_budget(db: Database, key: str) -> None:
    one, other = spender(db, RateLimiter(3, 3)), spender(db, RateLimiter(3, 3))
    one(key, T0)
    other(key, T0)
    assert other(key, T0).remaining == 0
    with pytest.raises(RateLimited):
        one(key, T0)


def test_processes_leasing_in_batches_exceed_the_budget_by_at_most_a_batch_each(
    db: Database, key: str
) -> None:
    limiters = [RateLimiter(200, 100) for _ in range(3)]  # two a second, leased two at a time
    spends = [spender(db, limiter) for limiter in limiters]
    served = 0
    for step in range(400):  # 40 s, each process asking five times a second in turn
        now = T0 + step * 0.1
        try:
            spends[step % 3](key, now)
        except RateLimited:
            continue
        served += 1
    # The bucket's bound (limit + rate * T) plus a batch per process, no more.
    assert served <= 200 + 2 * 40 + 3 * limiters[0].batch
    assert served >= 200 + 2 * 40 - 3 * limiters[0].batch  # and the budget is used


def test_a_bucket_left_by_a_host_whose_clock_is_ahead_refills_nothing_until_then(
    db: Database, key: str
) -> None:
    spend = spender(db, RateLimiter(3, 3))
    for _ in range(3):
        spend(key, T0 + 10)  # a host ten seconds ahead
    with pytest.raises(RateLimited):
        spender(db, RateLimiter(3, 3))(key, T0 + 5)


def test_buckets_idle_for_a_day_are_purged(db: Database) -> None:
    idle, busy = new_id("key"), new_id("key")
    now = T0 + 10 * IDLE_SECONDS
    spend = spender(db, RateLimiter(3, 3))
    spend(idle, now - IDLE_SECONDS - 1)
    spend(busy, now - 60)
    purged = db.call(purge_expired, now=datetime.fromtimestamp(now, UTC), call_history_days=90)
    assert purged["rateBuckets"] >= 1
    kept = db.call(lambda conn: set(conn.execute(select(rate_buckets_t.c.key_id)).scalars()))
    assert busy in kept and idle not in kept


def test_a_lease_finding_the_allowance_refilled_by_another_thread_spends_from_it(
    db: Database, key: str
) -> None:
    limiter = RateLimiter(600, 60)  # six at a time
    first = db.call(limiter.lease, key_id=key, now=T0)
    again = db.call(limiter.lease, key_id=key, now=T0)  # as a thread that lost the race
    assert isinstance(first, RateState) and isinstance(again, RateState)
    assert (first.remaining, again.remaining) == (599, 598)
    assert bucket_tokens(db, key) == 594  # one lease of six, not two


def test_a_lease_that_finds_no_whole_token_answers_the_refusal(db: Database, key: str) -> None:
    limiter = RateLimiter(1, 60)
    assert isinstance(db.call(limiter.lease, key_id=key, now=T0), RateState)
    refused = db.call(limiter.lease, key_id=key, now=T0 + 30)
    assert isinstance(refused, RateLimited) and refused.retry_after == 30


def test_one_request_at_the_low_mark_is_asked_to_lease_ahead_and_the_allowance_never_runs_dry(
    db: Database, key: str
) -> None:
    limiter = RateLimiter(10**6, 60)  # leased 100 at a time, ahead at 25 left
    assert (limiter.batch, limiter.ahead, most_held(limiter.batch)) == (100, 25, 125)
    db.call(limiter.spend, key_id=key, now=T0)  # the first lease: 99 left
    asked = []
    for i in range(500):
        state = limiter.take(key, T0)  # never LeaseNeeded: each batch comes ahead of need
        if state.refill:
            asked.append(i)
            # A request in flight at the same time finds the lease pending: not asked again.
            assert not limiter.take(key, T0).refill
            db.call(limiter.lease_ahead, key_id=key, now=T0)
    # Each lease ahead came with 25 or fewer left (the second take above spent one more).
    assert len(asked) == 5
    assert bucket_tokens(db, key) == 10**6 - 600


def test_a_lease_ahead_that_finds_the_allowance_refilled_leases_nothing(
    db: Database, key: str
) -> None:
    limiter = RateLimiter(10**6, 60)
    db.call(limiter.spend, key_id=key, now=T0)
    while not limiter.take(key, T0).refill:
        pass
    db.call(limiter.lease_ahead, key_id=key, now=T0)
    db.call(limiter.lease_ahead, key_id=key, now=T0)  # the first one refilled it
    assert bucket_tokens(db, key) == 10**6 - 200


def test_a_lease_ahead_that_never_came_is_asked_of_another_request_a_second_later(
    db: Database, key: str
) -> None:
    limiter = RateLimiter(10**6, 60)
    db.call(limiter.spend, key_id=key, now=T0)
    while not limiter.take(key, T0).refill:  # the request asked fails: it never leases
        pass
    assert not limiter.take(key, T0 + 0.5).refill
    assert limiter.take(key, T0 + 1.5).refill


def test_processes_leasing_ahead_exceed_the_budget_by_at_most_what_each_holds(
    db: Database, key: str
) -> None:
    limiters = [RateLimiter(800, 100) for _ in range(3)]  # 8 a second, 8 at a time, ahead at 2
    served = 0
    for step in range(1600):  # 40 s, each process asking 13 times a second in turn
        now, limiter = T0 + step * 0.025, limiters[step % 3]
        try:
            state = limiter.take(key, now)
        except LeaseNeeded:
            if isinstance(db.call(limiter.lease, key_id=key, now=now), RateLimited):
                continue
        except RateLimited:
            continue
        else:
            if state.refill:
                db.call(limiter.lease_ahead, key_id=key, now=now)
        served += 1
    held = most_held(limiters[0].batch)
    assert served <= 800 + 8 * 40 + 3 * held
    assert served >= 800 + 8 * 40 - 3 * held
