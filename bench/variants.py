"""Variants of our app for side-by-side measurements of one design choice.

``threaded_app``: SQLite work on a dedicated database thread (``run_in_executor``) instead of
inline on the event loop, to measure what the inline choice does to req/s and p99. Served by
``python -m uvicorn bench.variants:threaded_app --factory`` with the same environment as
``calendar-service serve``.
"""

from __future__ import annotations

from starlette.applications import Starlette

from calendar_service.app import create_app
from calendar_service.config import Config
from calendar_service.db import Database


def threaded_app() -> Starlette:
    config = Config.from_env()
    return create_app(config, db=Database(config, inline=False), run_webhooks=False)
