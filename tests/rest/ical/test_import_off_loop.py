"""An import of any size is read and written off the event loop: while a big file is being
written (its transaction open, nothing of it committed yet), ``/healthz`` answers. Judged by
conditions, never by the clock: the import is seen writing (SQLite: its uncommitted pages
spilling into the WAL, megabytes of them; PostgreSQL: its calendar's advisory lock held),
``/healthz`` is asked, and when it has answered the import has still committed nothing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.db.engine import sqlite_path
from tests.rest.ical.support import ICS, IMPORT
from tests.rest.recurrence_support import calendar_in
from tests.support import Factory, RunningServer, wait_for

EVENTS = 5000
PATIENCE = 600  # seconds: generous on a loaded machine, and finite
SPILLED = 2 * 1024 * 1024  # bytes of WAL no other write of this test comes near


def _big_file() -> bytes:
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN"]
    for n in range(EVENTS):
        day = 1 + n % 28
        lines += ["BEGIN:VEVENT", f"UID:big-{n}@example.com", "DTSTAMP:20260101T000000Z",
                  f"DTSTART:202603{day:02d}T{n % 24:02d}0000Z",
                  f"DTEND:202603{day:02d}T{n % 24:02d}3000Z", f"SUMMARY:Event {n}",
                  f"DESCRIPTION:{n:06d} " + "words " * 80,
                  "END:VEVENT"]  # fmt: skip
    return "\n".join([*lines, "END:VCALENDAR", ""]).encode()


def _wal(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


def _writing(config: Config, db: Database, wal_before: int) -> bool:
    """Whether the import is writing: (SQLite) its transaction's pages spill into the WAL,
    which the transactions before it left at ``wal_before`` bytes; (PostgreSQL) an import's
    advisory lock is held in this database."""
    path = sqlite_path(config)
    if path is not None:
        return _wal(path) > wal_before + SPILLED
    held = db.call(
        lambda conn: conn.execute(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        ).scalar_one()
    )
    return bool(held)


def _stored(config: Config, db: Database, calendar_id: str) -> int:
    """The calendar's events as committed, read without waiting for a writer."""
    query = "SELECT count(*) FROM events WHERE calendar_id = :calendar"
    path = sqlite_path(config)
    if path is not None:
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            return int(
                reader.execute(query.replace(":calendar", "?"), (calendar_id,)).fetchone()[0]
            )
        finally:
            reader.close()
    return int(
        db.call(lambda conn: conn.execute(text(query), {"calendar": calendar_id}).scalar_one())
    )


@pytest.mark.long
def test_healthz_answers_while_a_big_import_is_being_written(
    server: RunningServer, api: httpx.Client, factory: Factory, db: Database, config: Config
) -> None:
    cal = calendar_in(factory, "UTC")
    body = _big_file()
    path = sqlite_path(config)
    wal_before = _wal(path) if path is not None else 0
    answer: dict[str, Any] = {}

    def send() -> None:
        with httpx.Client(base_url=server.url, timeout=PATIENCE) as client:
            answer["response"] = client.post(IMPORT, content=body, headers={**cal.headers, **ICS})

    importer = threading.Thread(target=send)
    importer.start()
    try:
        wait_for(
            lambda: _writing(config, db, wal_before) or not importer.is_alive(),
            timeout=PATIENCE,
            interval=0.05,  # a query each look on PostgreSQL, in the server's process
            what="the import to start writing",
        )
        assert importer.is_alive(), "the import ended before it was seen writing"
        health = api.get("/healthz", timeout=PATIENCE)
        assert health.status_code == 200
        assert _stored(config, db, cal.id) == 0, "/healthz answered only after the import"
    finally:
        importer.join(PATIENCE)
    response = answer["response"]
    assert response.status_code == 200, response.text
    assert response.json()["created"] == EVENTS
    assert _stored(config, db, cal.id) == EVENTS
