"""Per-key request budgets (a token bucket per key, in this process's memory).

With several server processes each keeps its own buckets, so the effective budget is the
configured one per process; documented in docs/api.md.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from calendar_service.errors import RateLimited


@dataclass(slots=True)
class RateState:
    limit: int
    remaining: int
    reset_seconds: int
    period: int

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Policy": f"{self.limit};w={self.period}",
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
        }


class RateLimiter:
    def __init__(self, limit: int, period: int) -> None:
        self.limit = limit
        self.period = period
        self._rate = limit / period
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last time)
        self._lock = threading.Lock()

    def take(self, key_id: str, now: float) -> RateState:
        """Spend one request of ``key_id``'s budget or raise ``RateLimited``."""
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(self.limit), now))
            tokens = min(float(self.limit), tokens + (now - last) * self._rate)
            if tokens < 1.0:
                self._buckets[key_id] = (tokens, now)
                retry = max(1, math.ceil((1.0 - tokens) / self._rate))
                raise RateLimited(retry, self.limit, self.period)
            tokens -= 1.0
            self._buckets[key_id] = (tokens, now)
            if len(self._buckets) > 100_000:  # bound memory: forget the fullest buckets
                self._buckets = {k: v for k, v in self._buckets.items() if v[0] < self.limit - 1}
        reset = math.ceil((self.limit - tokens) / self._rate)
        return RateState(self.limit, int(tokens), reset, self.period)
