"""The server's app hides its startup objects from the garbage collector (p99 under load)."""

from __future__ import annotations

import gc

import pytest

from calendar_service.app import app_from_env
from calendar_service.config import Config


async def test_the_server_app_freezes_what_is_alive_after_startup(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALENDAR_DATABASE_URL", config.database_url)
    monkeypatch.setenv("CALENDAR_RUN_WEBHOOKS", "0")
    app = app_from_env()
    assert gc.get_freeze_count() == 0
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
