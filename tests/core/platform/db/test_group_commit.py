"""SQLite's group commit (``Database.run_grouped``): the requests run in one turn of the event
loop share one transaction and one commit, none is answered before that commit, and a failure
never loses or duplicates another request's writes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, insert, select

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database, atomic, sqlite_path
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import calendars_t, calls_t, to_db
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, RunningServer, bearer

pytestmark = pytest.mark.sqlite  # group commit (PostgreSQL commits each request on its own thread)


@pytest.fixture
def gdb(config: Config, db: Database) -> Iterator[Database]:
    """A Database of its own (the schema comes from ``db``)."""
    database = Database(config)
    assert database.group_commit
    yield database
    database.close()


@pytest.fixture
def watcher(config: Config) -> Iterator[sqlite3.Connection]:
    """Another connection: it sees only what is committed."""
    path = sqlite_path(config)
    assert path is not None
    conn = sqlite3.connect(path)
    yield conn
    conn.close()


def committed(watcher: sqlite3.Connection, user_ids: list[str]) -> set[str]:
    rows = watcher.execute(
        "SELECT id FROM users WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(user_ids),)
    )
    return {r[0] for r in rows}


class Writes:
    """A unit of work like ``gateway.perform``'s: writes a user inside ``atomic``; counts its
    runs and what it found committed when it ran."""

    def __init__(self, watcher: sqlite3.Connection) -> None:
        self.watcher = watcher
        self.runs: Counter[str] = Counter()
        self.seen: dict[str, set[str]] = {}

    def __call__(
        self, conn: Connection, user_id: str, *, fail: str | None = None, look: list[str] = ()
    ) -> str:
        self.runs[user_id] += 1
        self.seen[user_id] = committed(self.watcher, list(look)) if look else set()
        with atomic(conn):
            if fail == "before":
                raise ValueError("refused before writing")
            if fail == "commit":  # the foreign key is checked only at COMMIT
                conn.exec_driver_sql("PRAGMA defer_foreign_keys=ON")
                conn.execute(
                    insert(calendars_t).values(
                        id=new_id("cal"),
                        user_id="usr_missing",
                        name="x",
                        time_zone="UTC",
                        is_default=False,
                        max_event_seconds=60,
                        created_at=utcnow(),
                    )
                )
            at = to_db(utcnow(), conn.dialect.name)
            conn.exec_driver_sql(
                "INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)",
                (user_id, f"{user_id}@example.com", at),
            )
            if fail == "after":
                raise RuntimeError("failed after writing")
        return user_id


def commits_on(db: Database) -> list[str]:
    """Trace the statements the kept connection of this thread runs."""
    seen: list[str] = []
    raw: Any = db._kept_connection().connection.dbapi_connection
    raw.set_trace_callback(seen.append)
    return seen


async def test_requests_of_one_turn_share_one_commit_and_return_once_it_is_durable(
    gdb: Database, watcher: sqlite3.Connection
) -> None:
    work = Writes(watcher)
    ids = [new_id("usr") for _ in range(8)]
    traced = commits_on(gdb)

    async def one(user_id: str) -> None:
        await gdb.run_grouped(work, user_id, look=ids)
        assert user_id in committed(watcher, [user_id])  # durable before it returns

    await asyncio.gather(*(one(u) for u in ids))
    assert traced.count("COMMIT") == 1 and traced.count("BEGIN IMMEDIATE") == 1
    assert all(seen == set() for seen in work.seen.values())  # one transaction, uncommitted
    assert committed(watcher, ids) == set(ids)
    assert set(work.runs.values()) == {1}


async def three_with_a_failing_middle(
    gdb: Database, work: Writes, watcher: sqlite3.Connection, fail: str
) -> tuple[list[str], BaseException]:
    """Three requests in one turn of the loop, the middle one failing as ``fail`` says: the
    other two are answered and their writes committed, the middle one's not. Returns the three
    ids and what the middle one raised."""
    ids = [new_id("usr") for _ in range(3)]
    first, middle, last = await asyncio.gather(
        gdb.run_grouped(work, ids[0]),
        gdb.run_grouped(work, ids[1], fail=fail),
        gdb.run_grouped(work, ids[2]),
        return_exceptions=True,
    )
    assert (first, last) == (ids[0], ids[2])
    assert committed(watcher, ids) == {ids[0], ids[2]}
    assert isinstance(middle, BaseException)
    return ids, middle


async def test_a_request_failing_after_writing_rolls_back_the_group_and_the_others_run_again(
    gdb: Database, watcher: sqlite3.Connection
) -> None:
    work = Writes(watcher)
    (first, bad, last), error = await three_with_a_failing_middle(gdb, work, watcher, "after")
    assert isinstance(error, RuntimeError)
    # the request rolled back with the group ran again (its row is there once: the primary
    # key); the failing one ran once; the one after it joined a new group
    assert work.runs == Counter({first: 2, bad: 1, last: 1})


async def test_a_request_failing_before_writing_leaves_the_group_alone(
    gdb: Database, watcher: sqlite3.Connection
) -> None:
    work = Writes(watcher)
    traced = commits_on(gdb)
    (first, bad, last), error = await three_with_a_failing_middle(gdb, work, watcher, "before")
    assert isinstance(error, ValueError)
    assert traced.count("COMMIT") == 1
    assert work.runs == Counter({first: 1, bad: 1, last: 1})


async def test_a_failed_commit_runs_each_request_again_on_its_own(
    gdb: Database, watcher: sqlite3.Connection
) -> None:
    work = Writes(watcher)
    (first, bad, last), error = await three_with_a_failing_middle(gdb, work, watcher, "commit")
    assert isinstance(error, Exception) and "FOREIGN KEY" in str(error)
    assert work.runs == Counter({first: 2, bad: 2, last: 2})
    orphan = watcher.execute("SELECT count(*) FROM calendars WHERE user_id = 'usr_missing'")
    assert orphan.fetchone()[0] == 0


async def test_other_work_on_the_connection_commits_an_open_group_first(
    gdb: Database, watcher: sqlite3.Connection
) -> None:
    work = Writes(watcher)
    grouped, alone = new_id("usr"), new_id("usr")
    pending = asyncio.ensure_future(gdb.run_grouped(work, grouped))
    await asyncio.sleep(0)  # the grouped request has run; its group's commit is still queued
    assert grouped not in committed(watcher, [grouped])
    await gdb.run(lambda conn: work(conn, alone, look=[grouped]))
    assert work.seen[alone] == {grouped}
    assert await pending == grouped
    assert committed(watcher, [grouped, alone]) == {grouped, alone}


async def test_concurrent_creates_over_http_are_each_durable_and_recorded_once(
    server: RunningServer, factory: Factory, db: Database, watcher: sqlite3.Connection
) -> None:
    """Through the real server: every 201's event is committed when it arrives, and every
    call is in the key's history exactly once."""
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    body = {"title": "Grouped", "startsAt": "2026-03-02T08:30:00Z", "endsAt": "2026-03-02T09:00Z"}

    async with httpx.AsyncClient(base_url=server.url, headers=bearer(secret)) as client:

        async def create(i: int) -> str:
            response = await client.post(
                "/api/v1/calendar/events", json={**body, "title": f"Grouped {i}"}
            )
            assert response.status_code == 201, response.text
            event_id = str(response.json()["id"])
            found = watcher.execute("SELECT 1 FROM events WHERE id = ?", (event_id,))
            assert found.fetchone() is not None  # durable before the 201
            return event_id

        created = await asyncio.gather(*(create(i) for i in range(24)))

    assert len(set(created)) == 24
    mine = db.call(
        lambda conn: conn.execute(select(calls_t.c.status).where(calls_t.c.key_id == key_id)).all()
    )
    assert sorted(status for (status,) in mine) == [201] * 24
