"""Per-key request budgets, one per key across every process and host on the database.

Each key has a token bucket in the database (``rate_buckets``): ``limit`` tokens at most,
refilled at ``limit / period`` a second. A process does not go to the database for every
request: it *leases* a batch of tokens (``batch`` of them, one ``INSERT … ON CONFLICT DO UPDATE
… RETURNING``, see ``lease``) into a local allowance and spends that in memory; only when the
allowance is used up does it lease again. A bucket that has no whole token left refuses the
key, and the process remembers until when (``blocked_until``), so a key hammering at its
limit costs the database one lease per process per token refilled, not one per request.

Error bound: tokens are taken from the shared bucket before they are spent, so the shared count
is never behind; but a process may still hold up to ``held`` leased tokens when the bucket has
refilled in the meantime. Over any interval of T seconds one key is therefore served at most
``limit + T * limit / period + processes * held`` requests, ``held`` being the most a process
holds at once (``most_held``: ``batch``, plus the ``batch // 4`` it may still have when it
leases ahead, below). ``batch`` is 1 for limits under 200 requests per period (exact), else
``limit // 100`` capped at 100 (1 % of the budget per process). Tokens leased but not spent
before a process stops are lost to the key (the budget errs on the side of refusing). The clock
is the wall clock (Unix time) of each host: hosts must keep it in step (NTP); a host whose
clock runs behind refills nothing until the bucket's time is reached (never more than the
limit).

On SQLite a lease joins the event loop's group commit; in the rare group that is rolled back
(a request failing after it wrote) the lease is undone while the process keeps its tokens: one
batch more per such rollback.

``RateLimit-Remaining`` counts this process's allowance plus what the bucket held at the last
lease, refilled since: exact with one process, an estimate with several.

``take`` is local and never touches the database. When the allowance falls to ``batch // 4``
tokens, the one request that finds it so is told to *lease ahead* (``RateState.refill``): once
its own work is done, it leases the next batch (``lease_ahead``, a transaction of its own), so
that the other requests in flight keep finding tokens. Only when the allowance is empty all
the same does ``take`` raise ``LeaseNeeded``: the caller then gives up its transaction, runs
``lease`` in a transaction of its own (so that the lease counts even when the request it was
for fails and is rolled back), which spends the request's token from the new allowance, or
answers the refusal, and starts again (``spend`` does both in the caller's transaction, for
callers without one of their own). Without leasing ahead, every request in flight when the
allowance ran out started again: on PostgreSQL, with a thread per request, that cost the list
17 % of its requests per second.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Float, bindparam, case, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.dml import ReturningInsert

from calendar_service.platform.db import Statement
from calendar_service.platform.errors import RateLimited
from calendar_service.platform.models.keys import rate_buckets_t

IDLE_SECONDS = 86_400.0  # a bucket untouched this long is full whatever the period (≤ a day)
MAX_BATCH = 100
REFILL_RETRY = 1.0  # seconds after which a lease ahead that never came is asked for again


def default_batch(limit: int) -> int:
    """Tokens a process leases at a time: exact (1) under 200 a period, else 1 % (≤ 100)."""
    return max(1, min(MAX_BATCH, limit // 100))


def most_held(batch: int) -> int:
    """The most tokens a process holds at once: a batch, leased ahead while it still held
    ``batch // 4``."""
    return batch + batch // 4


@dataclass(slots=True)
class RateState:
    limit: int
    remaining: int
    reset_seconds: int
    period: int
    refill: bool = False  # the caller should lease ahead once its work is done

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Policy": f"{self.limit};w={self.period}",
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """``headers`` as ASGI sends them (names in lower case)."""
        return [
            (b"ratelimit-policy", b"%d;w=%d" % (self.limit, self.period)),
            (b"ratelimit-limit", b"%d" % self.limit),
            (b"ratelimit-remaining", b"%d" % self.remaining),
            (b"ratelimit-reset", b"%d" % self.reset_seconds),
        ]


class LeaseNeeded(Exception):
    """``take`` found no local allowance for ``key_id``: ``lease`` some, then take again."""

    def __init__(self, key_id: str) -> None:
        super().__init__(key_id)
        self.key_id = key_id


@dataclass(slots=True)
class _Allowance:
    tokens: int = 0  # leased by this process, not yet spent
    bucket: float = 0.0  # what the shared bucket held after our last lease …
    seen_at: float = 0.0  # … at this time
    blocked_until: float = 0.0  # no whole token in the bucket before then
    refill_asked: float = 0.0  # when a request was told to lease ahead (0: none pending)


class RateLimiter:
    """The shared budgets as this process sees them (see the module docstring)."""

    def __init__(self, limit: int, period: int, *, batch: int | None = None) -> None:
        self.limit = limit
        self.period = period
        self.batch = default_batch(limit) if batch is None else max(1, min(batch, limit))
        self.ahead = self.batch // 4  # lease ahead when the allowance falls to this
        self._rate = limit / period
        self._local: dict[str, _Allowance] = {}
        self._leasing: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._upserts: dict[str, Statement] = {}  # the lease's statement, by dialect

    def take(self, key_id: str, now: float) -> RateState:
        """Spend one request of ``key_id``'s budget from this process's allowance.

        Raises ``RateLimited`` while the bucket is known to be empty, ``LeaseNeeded`` when the
        allowance is used up (``now`` is Unix time, seconds)."""
        with self._lock:
            allowance = self._local.get(key_id)
            if allowance is None or allowance.tokens <= 0:
                if allowance is not None and now < allowance.blocked_until:
                    raise self._refusal(allowance, now)
                raise LeaseNeeded(key_id)
            allowance.tokens -= 1
            state = self._state(allowance, now)
            if allowance.tokens <= self.ahead and now - allowance.refill_asked > REFILL_RETRY:
                allowance.refill_asked = now  # one request at a time is asked
                state.refill = True
            return state

    def lease_ahead(self, conn: Connection, *, key_id: str, now: float) -> None:
        """Lease the next batch for ``key_id`` before the allowance runs out (asked of one
        request by ``take``: ``RateState.refill``), in the caller's transaction; nothing when
        the allowance was refilled meanwhile."""
        with self._leasing_of(key_id):
            with self._lock:
                allowance = self._local.get(key_id)
                if allowance is None or allowance.tokens > self.ahead:
                    return
            self._refill(conn, key_id, now)

    def lease(self, conn: Connection, *, key_id: str, now: float) -> RateState | RateLimited:
        """Take up to ``batch`` tokens from ``key_id``'s shared bucket into the allowance, in
        the caller's transaction (two statements at most: the second only when the bucket had
        fewer than ``batch`` whole tokens), and spend one of them for the caller: its state,
        or the refusal to raise when the bucket had no whole token."""
        with self._leasing_of(key_id):
            with self._lock:
                allowance = self._local.get(key_id)
                if allowance is not None and now < allowance.blocked_until:
                    return self._refusal(allowance, now)
                if allowance is not None and allowance.tokens > 0:  # leased meanwhile
                    allowance.tokens -= 1
                    return self._state(allowance, now)
            self._refill(conn, key_id, now)
            with self._lock:
                allowance = self._local[key_id]
                if allowance.tokens <= 0:
                    return self._refusal(allowance, now)
                allowance.tokens -= 1
                return self._state(allowance, now)

    def _leasing_of(self, key_id: str) -> threading.Lock:
        """The lock that lets one lease at a time for ``key_id`` in this process (PostgreSQL
        runs requests on threads)."""
        with self._lock:
            return self._leasing.setdefault(key_id, threading.Lock())

    def _refill(self, conn: Connection, key_id: str, now: float) -> None:
        """Lease a batch from the shared bucket into ``key_id``'s allowance."""
        granted, left = self._lease(conn, key_id, now)
        self.grant(key_id, granted, bucket=left, now=now)

    def _lease(self, conn: Connection, key_id: str, now: float) -> tuple[int, float]:
        """The database's part: (tokens granted, what the bucket holds after)."""
        want = self.batch
        params = {"k": key_id, "now": float(now), "want": float(want)}
        left = float(self._upsert(conn).first(conn, **params)[0])
        granted = want
        if left < 0:  # fewer than ``want`` whole tokens: keep the whole ones, give back the rest
            granted = max(0, math.floor(left + want))
            conn.execute(_GIVE_BACK, {"k": key_id, "back": float(want - granted)})
            left += want - granted
        return granted, left

    def grant(self, key_id: str, tokens: int, *, bucket: float, now: float) -> None:
        """Add ``tokens`` leased to ``key_id``'s allowance; ``bucket`` is what the shared bucket
        held after the lease. No token: the key is refused until the bucket has a whole one."""
        with self._lock:
            allowance = self._local.setdefault(key_id, _Allowance())
            allowance.tokens += tokens
            allowance.bucket, allowance.seen_at = bucket, now
            wait = max((1.0 - bucket) / self._rate, 1e-3)
            allowance.blocked_until = 0.0 if tokens else now + wait
            allowance.refill_asked = 0.0
            if len(self._local) > 100_000:  # bound memory: forget idle keys' allowances
                self._local = {k: a for k, a in self._local.items() if a.tokens > 0}
                self._leasing = {k: v for k, v in self._leasing.items() if k in self._local}

    def spend(self, conn: Connection, *, key_id: str, now: float) -> RateState:
        """``take``, leasing in the caller's transaction when needed."""
        try:
            return self.take(key_id, now)
        except LeaseNeeded:
            spent = self.lease(conn, key_id=key_id, now=now)
        if isinstance(spent, RateLimited):
            raise spent
        return spent

    def _state(self, allowance: _Allowance, now: float) -> RateState:
        refilled = allowance.bucket + max(0.0, now - allowance.seen_at) * self._rate
        tokens = min(float(self.limit), allowance.tokens + max(0.0, refilled))
        reset = math.ceil((self.limit - tokens) / self._rate)
        return RateState(self.limit, int(tokens), reset, self.period)

    def _refusal(self, allowance: _Allowance, now: float) -> RateLimited:
        return RateLimited(
            max(1, math.ceil(allowance.blocked_until - now)), self.limit, self.period
        )

    def _upsert(self, conn: Connection) -> Statement:
        """The lease: refill the bucket to ``now`` (never past ``limit``) and take ``want``,
        returning what is left (negative when it held fewer than ``want``). Built and compiled
        once per dialect and run on the driver (``db.Statement``): built anew each time, it
        cost some 2 million instructions a lease, a fifth of the statement's own cost a list
        with the bench's batch of 100."""
        found = self._upserts.get(conn.dialect.name)
        if found is None:
            found = self._upserts[conn.dialect.name] = Statement(self._upsert_of(conn))
        return found

    def _upsert_of(self, conn: Connection) -> ReturningInsert[Any]:
        b = rate_buckets_t.c
        now, want = bindparam("now", type_=Float), bindparam("want", type_=Float)
        later = now > b.updated_at  # a host whose clock is behind refills nothing
        refilled = b.tokens + case((later, now - b.updated_at), else_=0.0) * self._rate
        capped = case((refilled > self.limit, float(self.limit)), else_=refilled)
        insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        stmt = insert(rate_buckets_t).values(
            key_id=bindparam("k"), tokens=float(self.limit) - want, updated_at=now
        )
        return stmt.on_conflict_do_update(
            index_elements=[b.key_id],
            set_={"tokens": capped - want, "updated_at": case((later, now), else_=b.updated_at)},
        ).returning(b.tokens)


_GIVE_BACK = (
    update(rate_buckets_t)
    .where(rate_buckets_t.c.key_id == bindparam("k"))
    .values(tokens=rate_buckets_t.c.tokens + bindparam("back"))
)


def purge_idle(conn: Connection, *, now: float) -> int:
    """Delete buckets idle for a day: full again, the same as no row (maintenance job)."""
    result = conn.execute(
        rate_buckets_t.delete().where(rate_buckets_t.c.updated_at < now - IDLE_SECONDS)
    )
    return result.rowcount or 0
