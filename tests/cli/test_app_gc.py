"""The server's app hides its startup objects from the garbage collector and collects the young
generation less often (p99 and CPU under load)."""

from __future__ import annotations

import gc

import pytest

from calendar_service.cli.asgi_app import GC_YOUNG_THRESHOLD, app_from_env
from calendar_service.platform.config import Config


async def test_the_server_app_freezes_what_is_alive_after_startup(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALENDAR_DATABASE_URL", config.database_url)
    monkeypatch.setenv("CALENDAR_RUN_WEBHOOKS", "0")
    app = app_from_env()
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 10_000
            assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
