"""The connected calendars' tests share one app per module: the whole app (its worker polling
connected calendars every second) on a database of its own, so no other server's worker polls
these connections at another pace."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from tests.conftest import make_config
from tests.support import Factory, RunningServer, fresh_database_url, migrated_database, run_server


@pytest.fixture(scope="module")
def live(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Config, Database, RunningServer]]:
    with fresh_database_url(Path(tmp_path_factory.mktemp("live"))) as url:
        config = make_config(url, connection_poll=timedelta(seconds=1))
        with migrated_database(config) as db, run_server(create_app(config, db=db)) as running:
            yield config, db, running


@pytest.fixture
def factory(live: tuple[Config, Database, RunningServer]) -> Factory:
    return Factory(live[1])
