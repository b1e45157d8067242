"""Test helpers: a real uvicorn server in a background thread, owners and keys made through
the core, and bounded waits (never bare sleeps)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import trustme
import uvicorn
from sqlalchemy import create_engine, select, text
from starlette.types import ASGIApp

from calendar_service.access import keys
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.calendar import calendars
from calendar_service.cli.asgi_app import create_app
from calendar_service.operations.gateway import CallContext
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.models import deliveries_t
from calendar_service.platform.timeutil import utcnow

T = TypeVar("T")

# Set: the suite runs on PostgreSQL, each test database created on this server (and dropped).
POSTGRES_ADMIN_URL = os.environ.get("CALENDAR_TEST_POSTGRES_URL")

# How long a server (ours, in a process or a thread of its own, or PostgreSQL) may take to answer
# after it is started: a second or two on a quiet machine, over a minute when a 2-core machine
# runs several suites at once (a `serve` once failed to answer within 60 s at a load of 28).
# A passing wait returns as soon as the server answers, so the bound costs nothing.
SERVER_START = 180.0

# The test running now, when conftest found it touches no database (marked ``once``: not run
# in the PostgreSQL leg); ``fresh_database_url`` refuses to make it one.
NO_DATABASE_TEST: str | None = None


@contextmanager
def fresh_database_url(directory: Path, *, prefix: str = "calendar_test") -> Iterator[str]:
    """A new, empty database: a SQLite file in ``directory``, or a new PostgreSQL database
    (dropped afterwards) when ``CALENDAR_TEST_POSTGRES_URL`` is set."""
    if NO_DATABASE_TEST:
        raise AssertionError(
            f"{NO_DATABASE_TEST} makes a database, but tests/conftest.py found none in it and "
            "marked it once (SQLite leg only): mark it pytest.mark.database, or use a database "
            "fixture, so that it runs on PostgreSQL too"
        )
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    if not POSTGRES_ADMIN_URL:
        yield f"sqlite:///{directory / f'{name}.db'}"
        return
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"{POSTGRES_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def migrated_database(config: Config) -> Iterator[Database]:
    """A ``Database`` on ``config`` with the schema upgraded to the newest revision; closed
    when the block ends."""
    database = Database(config)
    try:
        upgrade(database.engine)
        yield database
    finally:
        database.close()


def wait_for(
    predicate: Callable[[], T], *, timeout: float = 60.0, interval: float = 0.01, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout``.

    The bound is generous on purpose: a passing wait returns as soon as the condition holds, so
    a long bound costs nothing on a quiet machine and keeps a loaded one (a busy 2-core CI
    runner, several suites at once) from failing a test that would have passed."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


@dataclass
class RunningServer:
    url: str
    host: str
    port: int
    server: uvicorn.Server
    thread: threading.Thread


def bind_free_port() -> socket.socket:
    """A listening-ready socket on 127.0.0.1 and a random free port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def free_port() -> int:
    sock = bind_free_port()
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def serve_env(database_url: str) -> dict[str, str]:
    """This process's environment for a ``serve`` subprocess on ``database_url``."""
    env = {k: v for k, v in os.environ.items() if k != "CALENDAR_BASE_URL"}
    return {**env, "CALENDAR_DATABASE_URL": database_url}


@contextmanager
def serving(
    env: dict[str, str], base: str, *args: str, client_options: dict[str, Any] | None = None
) -> Iterator[httpx.Client]:
    """``calendar-service serve ARGS`` in a subprocess (``env``: its whole environment),
    and a client of ``base`` once it answers."""
    options = ("--no-webhooks", "--log-level", "warning")
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", "serve", *args, *options],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        with httpx.Client(base_url=base, timeout=5, **(client_options or {})) as client:

            def up() -> bool:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                try:
                    return client.get("/healthz").status_code == 200
                except httpx.TransportError:
                    return False

            try:
                wait_for(up, timeout=SERVER_START, interval=0.1, what="serve to listen")
            except AssertionError as exc:
                proc.terminate()
                output = proc.communicate(timeout=30)[0] or b""
                raise AssertionError(f"{exc}; what it printed:\n{output.decode()}") from None
            yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextmanager
def run_server(
    app: ASGIApp, *, sock: socket.socket | None = None, **uvicorn_options: Any
) -> Iterator[RunningServer]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (``sock``, or a random free port), in a thread."""
    sock = sock or bind_free_port()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", **uvicorn_options)
    server = uvicorn.Server(config)
    scheme = "https" if uvicorn_options.get("ssl_certfile") else "http"

    def serve() -> None:
        asyncio.run(server.serve(sockets=[sock]))

    thread = threading.Thread(target=serve, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    wait_for(lambda: server.started, timeout=SERVER_START, what="uvicorn to start")
    try:
        yield RunningServer(f"{scheme}://127.0.0.1:{port}", "127.0.0.1", port, server, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


@contextmanager
def own_server(config: Config, **uvicorn_options: Any) -> Iterator[RunningServer]:
    """The whole app, without its delivery job, on a ``Database`` of its own (one per server,
    as each process has one), served by ``run_server`` with ``uvicorn_options``."""
    db = Database(config)
    try:
        with run_server(
            create_app(config, db=db, run_webhooks=False), **uvicorn_options
        ) as running:
            yield running
    finally:
        db.close()


@dataclass
class Owner:
    id: str
    email: str
    default_calendar_id: str
    password: str


class Factory:
    """Makes owners, calendars and keys through the core functions (as the CLI does)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def owner(self, *, time_zone: str = "UTC", password: str = "correct horse 1") -> Owner:
        email = f"owner-{uuid.uuid4().hex[:12]}@example.com"
        data = self.db.call(
            calendars.create_owner,
            email=email,
            password=password,
            now=utcnow(),
            time_zone=time_zone,
        )
        return Owner(data["id"], email, data["defaultCalendarId"], password)

    def calendar(self, owner: Owner, *, name: str | None = None, time_zone: str = "UTC") -> str:
        data = self.db.call(
            calendars.create_calendar,
            user_id=owner.id,
            name=name or f"cal-{uuid.uuid4().hex[:8]}",
            time_zone=time_zone,
            now=utcnow(),
        )
        return str(data["id"])

    def key(self, owner: Owner, **options: Any) -> tuple[str, str]:
        """A key made as ``key_record`` makes it; returns (key id, secret)."""
        record, secret = self.key_record(owner, **options)
        return record["id"], secret

    def key_record(
        self,
        owner: Owner,
        *,
        permission: str = "write",
        calendar_id: str | None = None,
        expires_at: datetime | None = None,
        name: str = "test key",
        now: datetime | None = None,
        approval: str = "none",
        app_password: bool = False,
        may_invite: bool = False,
    ) -> tuple[dict[str, Any], str]:
        """``keys.create_key`` as of ``now`` (default: the present), the key expiring a day
        later unless ``expires_at`` says otherwise; returns (the key's record, secret)."""
        now = now or utcnow()
        return self.db.call(
            keys.create_key,
            user_id=owner.id,
            name=name,
            permission=permission,
            expires_at=expires_at or now + timedelta(days=1),
            calendar_id=calendar_id,
            now=now,
            approval=approval,
            app_password=app_password,
            may_invite=may_invite,
        )


def call_context(
    operation: str = "listCalendarEvents",
    method: str = "GET",
    path: str = "/api/v1/calendar/events",
    transport: str = "rest",
) -> CallContext:
    """What a front tells the gateway about a call (``gateway.CallContext``), as a REST
    call from 127.0.0.1 makes it unless told otherwise."""
    return CallContext(
        transport=transport,
        operation=operation,
        method=method,
        path=path,
        client_addr="127.0.0.1",
        user_agent="core-test/1.0",
        request_id=new_id("req"),
        started=time.perf_counter(),
    )


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


CERT_NAMES = ("127.0.0.1", "localhost", "hooks.example.test")


@dataclass(frozen=True)
class TLSFiles:
    """A test CA and a server certificate for 127.0.0.1 (and the names given), as files."""

    ca: trustme.CA
    certfile: Path
    keyfile: Path
    ca_file: Path

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context


def make_tls(directory: Path, names: tuple[str, ...] = CERT_NAMES) -> TLSFiles:
    """Write a fresh CA, and a certificate it issued for ``names``, into ``directory``."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    tls = TLSFiles(
        ca=ca,
        certfile=directory / "server.pem",
        keyfile=directory / "server.key",
        ca_file=directory / "ca.pem",
    )
    cert.cert_chain_pems[0].write_to_path(str(tls.certfile))
    for pem in cert.cert_chain_pems[1:]:
        pem.write_to_path(str(tls.certfile), append=True)
    cert.private_key_pem.write_to_path(str(tls.keyfile))
    ca.cert_pem.write_to_path(str(tls.ca_file))
    return tls


def queued(db: Database, owner: Owner) -> list[tuple[str, dict[str, Any]]]:
    """The owner's queued webhook deliveries (type, data.event), in the order they were made
    (one transaction's in any order)."""
    rows = db.call(
        lambda conn: conn.execute(
            select(deliveries_t.c.event_type, deliveries_t.c.payload)
            .where(deliveries_t.c.user_id == owner.id)
            .order_by(deliveries_t.c.created_at, deliveries_t.c.id)
        ).all()
    )
    return [(row.event_type, json.loads(row.payload)["data"]["event"]) for row in rows]


def delete_all(db: Database, owner: Owner | None, calendar_id: str, most: int = 500) -> int:
    """Every step of a calendar's deletion (``owner``: None, as the operator's CLI); the
    events it took."""
    taken = 0
    for _ in range(1000):
        step = db.call(
            calendar_changes.delete_calendar_step,
            user_id=owner.id if owner is not None else None,
            calendar_id=calendar_id,
            now=utcnow(),
            most=most,
        )
        taken += step["deletedEvents"]
        if step["done"]:
            return taken
    raise AssertionError("the deletion never ended")


def changes_of_key(db: Database, owner: Owner, key_id: str, count: int) -> list[str]:
    """``count`` events created by the owner's write key ``key_id`` through the core, in one
    transaction (a change each: a key's work to undo); their ids."""
    from calendar_service.calendar.events.create import create_event_from_input
    from calendar_service.journal.change_record import default_via

    def made(conn: Any) -> list[str]:
        key = keys.get_key(conn, user_id=owner.id, key_id=key_id)
        principal = keys.Principal(key_id, owner.id, "write", None, key["expires_at"])
        ids = []
        for n in range(count):
            body = {"title": f"Agent's {n}", "startsAt": "2031-01-01T10:00:00Z",
                    "endsAt": "2031-01-01T11:00:00Z"}  # fmt: skip
            event, _ = create_event_from_input(
                conn, principal=principal, body=body, now=utcnow(), via=default_via(principal)
            )
            ids.append(str(event["id"]))
        return ids

    return db.call(made)
