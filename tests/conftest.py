"""Shared fixtures. The suite runs against SQLite by default and against PostgreSQL when
``CALENDAR_TEST_POSTGRES_URL`` points at a server (a fresh database is created per run).

Which tests run in which leg: a test that touches no database cannot answer differently on
PostgreSQL, so it is marked ``once`` here, at collection, and ``scripts/test`` leaves it out of
the PostgreSQL leg (``-m "not once"``); it runs in the SQLite leg. A test touches a database when
it uses one of ``DATABASE_FIXTURES`` (directly or through another fixture), when its module names
the backend (``BACKEND_NAMES``: it makes a database of its own, or runs or skips by backend),
or when it is marked ``database``. A test marked ``once`` that makes a database anyway
(``fresh_database_url``, through a helper) fails, saying so: the classification cannot go
wrong silently. A module may also mark itself ``once`` when what it tests does not depend on
the backend although it uses a database (the benchmark's smoke run, which brings its own).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher

from calendar_service.access import owners as users
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.config import Config, parse_retry_schedule
from calendar_service.platform.db import Database
from calendar_service.platform.logs import stop_logging
from tests import support
from tests.support import (
    POSTGRES_ADMIN_URL,
    Factory,
    RunningServer,
    bind_free_port,
    fresh_database_url,
    migrated_database,
    run_server,
)

BACKENDS = ("sqlite", "postgresql")
DATABASE_FIXTURES = frozenset({"database_url", "hooks_config", "quiet_db"})
BACKEND_NAMES = ("fresh_database_url", "POSTGRES_ADMIN_URL", "CALENDAR_TEST_POSTGRES_URL")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "once: touches no database, so it runs in the SQLite leg only (conftest.py)"
    )
    config.addinivalue_line(
        "markers", "database: touches the database under test: runs in both legs (conftest.py)"
    )
    config.addinivalue_line(
        "markers", "long: takes tens of seconds; started first, one per worker (conftest.py)"
    )
    for backend in BACKENDS:
        config.addinivalue_line(
            "markers",
            f"{backend}: about {backend} alone; collected only in its leg, never skipped "
            "(conftest.py)",
        )
    config.pluginmanager.register(LongTestsFirst(), "long-tests-first")


def _names_the_backend(path: Path, seen: dict[Path, bool]) -> bool:
    if path not in seen:
        text = path.read_text(encoding="utf-8")
        seen[path] = any(name in text for name in BACKEND_NAMES)
    return seen[path]


@pytest.hookimpl(tryfirst=True)  # before -m selects by it
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the tests about the other backend (marked ``sqlite`` or ``postgresql``: each
    runs in its own leg, where a skip would say nothing); mark ``once`` every test that touches
    no database (the module docstring says how)."""
    other = [b for b in BACKENDS if b != _backend()]
    elsewhere = [i for i in items if any(i.get_closest_marker(b) for b in other)]
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = [i for i in items if i not in set(elsewhere)]
    seen: dict[Path, bool] = {}
    for item in items:
        if any(item.get_closest_marker(m) for m in ("once", "database", *BACKENDS)):
            continue
        if DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
            continue
        if _names_the_backend(item.path, seen):
            continue
        item.add_marker(pytest.mark.once)
        item.stash[_NO_DATABASE] = True


_NO_DATABASE = pytest.StashKey[bool]()


class LongTestsFirst:
    """Tests marked ``long`` (a fuzzer's run, the benchmark's smoke run, a fleet of hosts: tens
    of seconds each) start first, so that none of them starts late and holds up the end of the
    run. Under ``pytest -n N --dist worksteal``, each worker is first sent an equal share of
    the tests in order, and idle workers later take tests from the end of a busy one's share:
    each long test is put at the head of a share, the shares in turn."""

    @pytest.hookimpl(trylast=True)  # on what is left once -m and -k have deselected
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        long = [item for item in items if item.get_closest_marker("long")]
        if not long:
            return
        rest = [item for item in items if not item.get_closest_marker("long")]
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        heads: list[list[pytest.Item]] = [long[w::workers] for w in range(workers)]
        ordered: list[pytest.Item] = []
        left = len(items)
        for w in range(workers):  # the share sizes as xdist's worksteal scheduler makes them
            share = left // (workers - w)
            left -= share
            ordered += heads[w]
            taken = max(0, share - len(heads[w]))
            ordered += rest[:taken]
            del rest[:taken]
        items[:] = ordered + rest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    """While a test found to touch no database runs, making one fails it (``support``)."""
    support.NO_DATABASE_TEST = item.nodeid if item.stash.get(_NO_DATABASE, False) else None
    try:
        return (yield)
    finally:
        support.NO_DATABASE_TEST = None


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
