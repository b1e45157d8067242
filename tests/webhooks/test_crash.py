"""Nothing committed is lost: a server killed with SIGKILL before it sent anything, then a
worker started afterwards, delivers every change exactly as committed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from standardwebhooks import Webhook

from calendar_service.platform.db import Database
from tests.support import (
    SERVER_START,
    TLSFiles,
    bearer,
    fresh_database_url,
    migrated_database,
    wait_for,
)
from tests.webhooks.conftest import HOOKS_SCHEDULE, hooks_config_for
from tests.webhooks.support import (
    Receiver,
    deliveries,
    subscriber,
)

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def command(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """``calendar-service ARGS`` in a process of its own (stopped at the end if still running)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def up(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.long
def test_changes_committed_before_a_sigkill_are_all_delivered_by_a_worker_started_after(
    tmp_path: Path, receiver: Receiver, tls: TLSFiles
) -> None:
    count = 20
    with fresh_database_url(tmp_path) as database_url:
        with migrated_database(hooks_config_for(database_url)) as db:
            url = receiver.url()
            owner, key, secret = subscriber(db, url)
        env = {
            **os.environ,
            "CALENDAR_DATABASE_URL": database_url,
            "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1",
            "CALENDAR_WEBHOOK_RETRY_SCHEDULE": HOOKS_SCHEDULE,
            "SSL_CERT_FILE": str(tls.ca_file),  # the worker's client trusts the test CA
        }
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        created = []
        with command(env, "serve", "--port", str(port), "--no-webhooks") as server:
            wait_for(lambda: up(base), timeout=SERVER_START, what="the server to start")
            with httpx.Client(base_url=base, headers=bearer(key), timeout=10) as api:
                for n in range(count):
                    body = {
                        "title": f"Call {n}",
                        "startsAt": "2026-03-02T09:00:00Z",
                        "endsAt": "2026-03-02T09:30:00Z",
                    }
                    response = api.post("/api/v1/calendar/events", json=body)
                    assert response.status_code == 201, response.text
                    created.append(response.json()["id"])
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
        assert server.returncode == -signal.SIGKILL
        assert receiver.received(url) == []

        with command(env, "worker", "--poll-interval", "0.2") as worker:
            got = wait_for(
                lambda: len(receiver.received(url)) >= count and receiver.received(url),
                timeout=30,
                what="every delivery",
            )
            worker.send_signal(signal.SIGTERM)  # a clean stop
            worker.wait(timeout=30)
        assert worker.returncode == 0, worker.stderr.read() if worker.stderr else ""

        events = [Webhook(secret).verify(r.body, r.headers)["data"]["event"]["id"] for r in got]
        assert sorted(events) == sorted(created)
        assert len({r.headers["webhook-id"] for r in got}) == count
        db = Database(hooks_config_for(database_url))
        try:
            assert {d["status"] for d in deliveries(db, owner, limit=100)} == {"succeeded"}
        finally:
            db.close()
