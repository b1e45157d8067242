"""Variants of our app for side-by-side measurements of one design choice each.

``threaded_app``: SQLite work on a dedicated database thread (``run_in_executor``) instead of
inline on the event loop. ``per_request_commit_app``: inline, but each request commits its own
transaction (no group commit). Served by ``python -m uvicorn bench.variants:<name> --factory``
with the same environment as ``calendar-service serve``, and like it with the objects alive
after startup frozen (``freeze_gc``). ``local_limiter_app``: the rate budget kept in each
process's memory alone (as before issue 18), never leased from the database: the shared
limiter's cost is the difference.
"""

from __future__ import annotations

from sqlalchemy import Connection
from starlette.applications import Starlette

from calendar_service.access.ratelimit import RateLimiter, RateState
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.errors import RateLimited


def threaded_app() -> Starlette:
    config = Config.from_env()
    db = Database(config, inline=False)
    return create_app(config, db=db, run_webhooks=False, freeze_gc=True)


def per_request_commit_app() -> Starlette:
    config = Config.from_env()
    db = Database(config, group_commit=False)
    return create_app(config, db=db, run_webhooks=False, freeze_gc=True)


class LocalRateLimiter(RateLimiter):
    """Leases from itself: one budget per process, no database round trip ever."""

    def lease(self, conn: Connection, *, key_id: str, now: float) -> RateState | RateLimited:
        self.grant(key_id, self.batch, bucket=float(self.limit), now=now)
        return self.take(key_id, now)


def local_limiter_app() -> Starlette:
    config = Config.from_env()
    app = create_app(config, run_webhooks=False, freeze_gc=True)
    app.state.services.limiter = LocalRateLimiter(*config.rate_limit)
    return app
