"""Fixtures for the webhook tests: HTTPS and HTTP receivers, and a second database whose
server sends through a client that trusts the test CA."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.config import Config, parse_retry_schedule
from calendar_service.platform.db import Database
from tests.conftest import make_config
from tests.support import (
    RunningServer,
    TLSFiles,
    fresh_database_url,
    make_tls,
    migrated_database,
    run_server,
)
from tests.webhooks.support import Receiver
from webhooks.transport import make_client

# Short enough that a whole schedule runs in well under a second.
HOOKS_SCHEDULE = "0.2s,0.4s"
HOOKS_DEADLINE = 1.0


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    return make_tls(Path(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="session")
def receiver(tls: TLSFiles) -> Iterator[Receiver]:
    """An HTTPS receiver on 127.0.0.1 with a certificate from the test CA."""
    app = Receiver()
    with run_server(app, ssl_certfile=str(tls.certfile), ssl_keyfile=str(tls.keyfile)) as running:
        app.base_url = running.url
        yield app


@pytest.fixture(scope="session")
def plain_receiver() -> Iterator[Receiver]:
    """A plain-HTTP receiver on 127.0.0.1 (allowed by CALENDAR_WEBHOOK_ALLOW_LOCAL)."""
    app = Receiver()
    with run_server(app) as running:
        app.base_url = running.url
        yield app


def hooks_config_for(url: str, **overrides: object) -> Config:
    values: dict[str, object] = {
        "webhook_retry_schedule": parse_retry_schedule(HOOKS_SCHEDULE),
        "webhook_timeout_seconds": HOOKS_DEADLINE,
    }
    values.update(overrides)
    return make_config(url, **values)


@pytest.fixture(scope="session")
def hooks_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    with fresh_database_url(Path(tmp_path_factory.mktemp("hooks"))) as url:
        yield hooks_config_for(url)


@pytest.fixture(scope="session")
def hooks_db(hooks_config: Config) -> Iterator[Database]:
    with migrated_database(hooks_config) as database:
        yield database


@pytest.fixture(scope="session")
def hooks_server(
    hooks_config: Config,
    hooks_db: Database,
    tls: TLSFiles,
    receiver: Receiver,
    plain_receiver: Receiver,
) -> Iterator[RunningServer]:
    """The whole app on the webhook database; its delivery job trusts the test CA.

    It stops (closing its connections) before the receivers it sends to."""
    client = make_client(verify=tls.client_context())
    app = create_app(hooks_config, db=hooks_db, webhook_client=client)
    with run_server(app) as running:
        yield running


@pytest.fixture
def hooks_api(hooks_server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=hooks_server.url, timeout=30) as client:
        yield client


@pytest.fixture
def quiet_db(tmp_path: Path) -> Iterator[Database]:
    """A fresh database of its own that no delivery job watches."""
    with fresh_database_url(tmp_path) as url, migrated_database(hooks_config_for(url)) as database:
        yield database
