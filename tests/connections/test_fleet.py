"""Two ``calendar-service worker`` processes on one database: each connected calendar is
polled by one at a time (a lease), and when the one polling is killed (SIGKILL) in the middle
of a poll, the other takes the connection over within a minute."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from calendar_service.platform.models.connections import connections_t
from tests.conftest import make_config
from tests.connections.sources import ics_server
from tests.connections.test_polling import add_ics, calendar, day, vevent
from tests.support import Factory, fresh_database_url, migrated_database, serve_env, wait_for


@contextmanager
def worker(database_url: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **serve_env(database_url),
        "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1",
        "CALENDAR_CONNECTION_POLL": "1s",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", "worker", "--log-level", "warning"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@pytest.mark.database
def test_one_worker_polls_a_connection_at_a_time_and_another_takes_over_after_a_kill(
    tmp_path: Path,
) -> None:
    # A database of its own: only the two workers poll it.
    with (
        fresh_database_url(tmp_path) as database_url,
        migrated_database(make_config(database_url)) as db,
    ):
        _two_workers(database_url, Factory(db))


def _two_workers(database_url: str, factory: Factory) -> None:
    db = factory.db
    owner = factory.owner()
    start = day(2).replace(hour=10)
    in_flight, most, owners = [0], [0], []
    lock = threading.Lock()
    release = threading.Event()
    held: list[str] = []

    with ics_server(calendar(vevent("a", start, start + timedelta(hours=1))).encode()) as source:
        connection_id = add_ics(db, make_config(database_url), owner, source.url)

        def on_get() -> None:
            lease = db.call(
                lambda c: c.execute(
                    select(connections_t.c.lease_owner).where(connections_t.c.id == connection_id)
                ).scalar()
            )
            with lock:
                in_flight[0] += 1
                most[0] = max(most[0], in_flight[0])
                owners.append(str(lease))
            if not held:  # the first poll is held until its worker is killed
                held.append(str(lease))
                release.wait(timeout=120)
            with lock:
                in_flight[0] -= 1

        source.on_get = on_get
        with worker(database_url) as first, worker(database_url) as second:
            wait_for(lambda: held, timeout=120, what="a worker to poll")
            pid = int(held[0].split(":")[1])
            killed, survivor = (first, second) if pid == first.pid else (second, first)
            assert pid == killed.pid
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait(timeout=30)
            release.set()
            wait_for(
                lambda: any(o.split(":")[1] == str(survivor.pid) for o in owners),
                timeout=75,
                interval=0.2,
                what="the other worker to take the connection over",
            )
            wait_for(lambda: len(owners) >= 4, timeout=60, what="more polls")
        # Never two polls of the connection at once, across the two processes.
        assert most[0] == 1
        assert all(o.split(":")[1] == str(survivor.pid) for o in owners[1:])
