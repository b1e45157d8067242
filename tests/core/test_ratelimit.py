"""The per-key token bucket (``ratelimit.RateLimiter``), driven by an injected clock: the budget,
its refill, the headers it answers with and the Retry-After it refuses with.

The budgets below refill one request per second (3 requests per 3 seconds), so every figure is
exact in floating point."""

from __future__ import annotations

import pytest

from calendar_service.errors import RateLimited
from calendar_service.ratelimit import RateLimiter

T0 = 1_000.0  # a monotonic clock reading; only differences matter


def test_a_new_key_starts_with_the_whole_budget_and_each_request_spends_one() -> None:
    limiter = RateLimiter(3, 3)
    states = [limiter.take("key_a", T0) for _ in range(3)]
    assert [s.remaining for s in states] == [2, 1, 0]
    # Seconds until the bucket is full again: one per request spent.
    assert [s.reset_seconds for s in states] == [1, 2, 3]
    assert {(s.limit, s.period) for s in states} == {(3, 3)}


def test_a_key_over_its_budget_is_refused_with_the_seconds_until_one_request_is_back() -> None:
    limiter = RateLimiter(3, 3)
    for _ in range(3):
        limiter.take("key_a", T0)
    with pytest.raises(RateLimited) as refused:
        limiter.take("key_a", T0)
    assert refused.value.retry_after == 1
    assert (refused.value.limit, refused.value.period) == (3, 3)
    assert refused.value.status == 429
    assert "more than 3 requests in 3 seconds" in refused.value.message
    assert "retry after 1 seconds" in refused.value.message


def test_retry_after_rounds_up_and_is_never_zero() -> None:
    limiter = RateLimiter(2, 20)  # one request back every 10 s
    limiter.take("key_a", T0)
    limiter.take("key_a", T0)
    with pytest.raises(RateLimited) as refused:
        limiter.take("key_a", T0 + 2.5)  # a quarter of a request back: 7.5 s to go
    assert refused.value.retry_after == 8
    with pytest.raises(RateLimited) as almost:
        limiter.take("key_a", T0 + 9.999)
    assert almost.value.retry_after == 1


def test_the_budget_refills_at_the_configured_rate() -> None:
    limiter = RateLimiter(3, 3)
    for _ in range(3):
        limiter.take("key_a", T0)
    with pytest.raises(RateLimited):
        limiter.take("key_a", T0 + 0.5)
    state = limiter.take("key_a", T0 + 1.0)
    assert state.remaining == 0
    assert limiter.take("key_a", T0 + 3.0).remaining == 1


def test_refused_requests_spend_nothing() -> None:
    limiter = RateLimiter(3, 3)
    for _ in range(3):
        limiter.take("key_a", T0)
    for _ in range(5):
        with pytest.raises(RateLimited):
            limiter.take("key_a", T0 + 0.25)
    assert limiter.take("key_a", T0 + 1.0).remaining == 0


def test_an_idle_key_never_saves_up_more_than_the_limit() -> None:
    limiter = RateLimiter(3, 3)
    limiter.take("key_a", T0)
    state = limiter.take("key_a", T0 + 3_600)
    assert state.remaining == 2
    assert state.reset_seconds == 1


def test_each_key_has_a_budget_of_its_own() -> None:
    limiter = RateLimiter(1, 60)
    limiter.take("key_a", T0)
    with pytest.raises(RateLimited):
        limiter.take("key_a", T0)
    assert limiter.take("key_b", T0).remaining == 0


def test_the_headers_state_the_policy_and_what_is_left() -> None:
    limiter = RateLimiter(600, 60)
    limiter.take("key_a", T0)
    state = limiter.take("key_a", T0)
    assert state.headers() == {
        "RateLimit-Policy": "600;w=60",
        "RateLimit-Limit": "600",
        "RateLimit-Remaining": "598",
        "RateLimit-Reset": "1",  # two requests back at ten a second: 0.2 s, rounded up
    }
