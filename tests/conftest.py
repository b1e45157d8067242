"""Shared fixtures. The suite runs against SQLite by default and against PostgreSQL when
``CALENDAR_TEST_POSTGRES_URL`` points at a server (a fresh database is created per run)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher

from calendar_service import users
from calendar_service.app import create_app
from calendar_service.config import Config, parse_retry_schedule
from calendar_service.db import Database
from calendar_service.logs import stop_logging
from tests.support import (
    POSTGRES_ADMIN_URL,
    Factory,
    RunningServer,
    bind_free_port,
    fresh_database_url,
    migrated_database,
    run_server,
)


def _backend() -> str:
    return "postgresql" if POSTGRES_ADMIN_URL else "sqlite"


def pytest_report_header() -> str:
    return f"calendar-service database backend: {_backend()}"


@pytest.fixture(autouse=True)
def process_logging_put_back() -> Iterator[None]:
    """Entry points called in-process (``app_from_env``, the CLI's ``mcp``) configure the
    process's logging, as they should; each test ends with it as it was."""
    yield
    stop_logging()


@pytest.fixture(autouse=True)
def quick_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id with small costs for the owners the tests make (``Factory.owner``) and sign in:
    the production parameters spend about a third of a second of CPU per hash, which was well
    over half of the suite's time and what kept parallel runs (``pytest -n``) from going
    faster on two cores. The code paths and the hash format are the same; only the cost
    parameters differ. Servers the tests start as processes of their own hash as deployed."""
    monkeypatch.setattr(
        users, "_hasher", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    )


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh, empty database for this test run (a file, or a new PostgreSQL database)."""
    with fresh_database_url(Path(tmp_path_factory.mktemp("db"))) as url:
        yield url


def make_config(database_url: str, **overrides: object) -> Config:
    values: dict[str, object] = {
        "database_url": database_url,
        "webhook_allow_local": True,
        "webhook_retry_schedule": parse_retry_schedule("1s,2s"),
        "rate_limit": (100_000, 60),
        "session_secret": "test-session-secret-not-for-production",
    }
    values.update(overrides)
    return Config(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def server_socket() -> Iterator[socket.socket]:
    """The socket the ``server`` fixture will serve on, bound early so that the config's
    base URL (Location headers, OpenAPI servers) is the server's real address."""
    sock = bind_free_port()
    yield sock
    sock.close()


@pytest.fixture(scope="session")
def config(database_url: str, server_socket: socket.socket) -> Config:
    port = server_socket.getsockname()[1]
    return make_config(database_url, base_url=f"http://127.0.0.1:{port}")


@pytest.fixture(scope="session")
def db(config: Config) -> Iterator[Database]:
    with migrated_database(config) as database:
        yield database


@pytest.fixture(scope="session")
def factory(db: Database) -> Factory:
    return Factory(db)


@pytest.fixture(scope="session")
def server(config: Config, db: Database, server_socket: socket.socket) -> Iterator[RunningServer]:
    """The whole app served by a real uvicorn on 127.0.0.1 and a random port."""
    app = create_app(config, db=db)
    with run_server(app, sock=server_socket) as running:
        yield running


@pytest.fixture
def api(server: RunningServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client
