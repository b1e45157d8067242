"""``python -m bench.api_seed``: a database built as the API builds it, as people run it.

``bench.seed`` writes the reference shape's events in bulk with Core inserts: the events and
nothing else. A real owner's database was written through the API, one create at a time, and
every table a create touches holds what those creates left: the call history, the change log,
the sync feed, the idempotency records, the search index, the webhook outbox. This builds that
database: the same events (``seed._event_rows``: the reference's random sequence, with titles,
descriptions and locations; ``rows // 5000`` calendars, the owner's default calendar the
first) sent as REST creates (``POST /api/v1/calendar/events``, each with an
``Idempotency-Key``) through our ASGI app in process (``bench.inprocess.drive``), 16 at a time
so that they share group commits as under load, with an all-calendars write key, the kind
``keys create`` makes by default and agents are given. The deliveries are then marked sent (as
a webhook receiver would have answered them), the search index merged as the housekeeping
leaves it, and the database analysed.

The keys in the metadata: ``write_secret`` the all-calendars write key that made the events,
``one_calendar_write_secret`` a write key of the default calendar alone, ``read_secret`` a read
key of the default calendar. A built database is kept in ``bench/results/db``
(``ours-api-<rows>.db``) and reused while ``fingerprint()`` is unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import seed

ROOT = Path(__file__).resolve().parents[1]
DB_DIR = ROOT / "bench" / "results" / "db"
CONCURRENCY = 16  # requests in flight while building: they share group commits
CHUNK = 2_000  # requests per drive (progress is logged between them)
EVENTS_PATH = "/api/v1/calendar/events"


def fingerprint() -> str:
    """``seed.fingerprint`` (the schema, the storage types, the bulk seeder) and this file."""
    digest = hashlib.sha256(seed.fingerprint().encode())
    digest.update(Path(__file__).read_bytes())
    return "api-" + digest.hexdigest()[:12]


def pristine(rows: int, directory: Path = DB_DIR) -> Path:
    """Where the built database of ``rows`` events is kept."""
    return directory / f"ours-api-{rows}.db"


def seeded(rows: int, *, directory: Path = DB_DIR, log: Any = print) -> seed.Seeded:
    """The built database of ``rows`` events in ``directory`` (building it first, in a process
    of its own, if it is missing or its fingerprint changed)."""
    path = pristine(rows, directory)
    meta_path = path.with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others then reuse it
        if meta_path.exists():
            meta = seed.Seeded(**json.loads(meta_path.read_text()))
            if meta.fingerprint == fingerprint() and meta.rows == rows and path.exists():
                return meta
        log(f"building {rows:,} events through the API into {path} ...")
        subprocess.run(
            [sys.executable, "-m", "bench.api_seed", f"--rows={rows}", f"--db={path}"],
            cwd=ROOT,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        return seed.Seeded(**json.loads(meta_path.read_text()))


def build(path: Path, rows: int, *, log: Any = print) -> seed.Seeded:
    """Build the database at ``path`` (SQLite) and write its metadata beside it."""
    t0 = time.perf_counter()
    url = f"sqlite:///{path}"
    seed._reset_database(url)
    owner_id, cal_ids, secrets = _owner(url, rows)
    os.environ.update(
        CALENDAR_DATABASE_URL=url,
        CALENDAR_RUN_WEBHOOKS="0",
        CALENDAR_RATE_LIMIT="1000000000/minute",
        CALENDAR_LOG_LEVEL="warning",
    )
    _create_through_api(rows, cal_ids, secrets["write"], log)
    _settle(url)
    meta = seed.Seeded(
        url=url,
        rows=rows,
        calendars=len(cal_ids),
        calendar_id=cal_ids[0],
        read_secret=secrets["read"],
        write_secret=secrets["write"],
        fingerprint=fingerprint(),
        seconds=round(time.perf_counter() - t0, 1),
        one_calendar_write_secret=secrets["one_calendar_write"],
    )
    path.with_suffix(".json").write_text(json.dumps(asdict(meta), indent=1))
    log(f"  built in {meta.seconds:.1f}s ({owner_id})")
    return meta


def _owner(url: str, rows: int) -> tuple[str, list[str], dict[str, str]]:
    """The schema, the owner (their default calendar and ``rows // 5000 - 1`` more), the keys
    and a webhook endpoint, as ``seed.seed_ours`` makes them."""
    from sqlalchemy import insert, update

    from calendar_service.access import keys
    from calendar_service.calendar import calendars
    from calendar_service.platform.config import Config
    from calendar_service.platform.db import Database
    from calendar_service.platform.ids import new_id
    from calendar_service.platform.migrate import upgrade
    from calendar_service.platform.models import WebhookEndpoint
    from calendar_service.platform.timeutil import utcnow

    db = Database(Config(database_url=url, sqlite_synchronous="OFF"))
    try:
        upgrade(db.engine)
        now = utcnow()
        with db.engine.begin() as conn:
            owner = calendars.create_owner(conn, email=seed.OWNER_EMAIL, password=None, now=now)
            cal_ids = [owner["defaultCalendarId"]]
            for n in range(2, seed._calendar_count(rows) + 1):
                made = calendars.create_calendar(
                    conn, user_id=owner["id"], name=f"cal {n}", time_zone="UTC", now=now
                )
                cal_ids.append(made["id"])
            cal_t = calendars.calendars_t
            conn.execute(
                update(cal_t)
                .where(cal_t.c.id.in_(cal_ids))
                .values(max_event_seconds=seed.MAX_EVENT_SECONDS)
            )
            common = {"user_id": owner["id"], "expires_at": now + timedelta(days=3650), "now": now}
            secrets = {}
            for name, permission, calendar_id in (
                ("write", "write", None),
                ("one_calendar_write", "write", cal_ids[0]),
                ("read", "read", cal_ids[0]),
            ):
                _, secrets[name] = keys.create_key(
                    conn,
                    name=f"bench {name}",
                    permission=permission,
                    calendar_id=calendar_id,
                    **common,
                )
            conn.execute(
                insert(WebhookEndpoint.__table__),  # type: ignore[attr-defined]
                {
                    "id": new_id("whe"),
                    "user_id": owner["id"],
                    "url": "http://127.0.0.1:9/bench",
                    "secret": "whsec_" + "A" * 43 + "=",
                    "status": "active",
                    "created_at": now,
                    "updated_at": now,
                },
            )
    finally:
        db.close()
    return owner["id"], cal_ids, secrets


def _create_through_api(rows: int, cal_ids: list[str], secret: str, log: Any) -> None:
    """Every event a REST create of the all-calendars key, ``CONCURRENCY`` in flight."""
    import uvloop

    from bench import inprocess
    from calendar_service.cli.asgi_app import app_from_env

    bodies = []
    for batch in seed._event_rows(rows, cal_ids, seed.EPOCH):
        for row in batch:
            bodies.append(
                json.dumps(
                    {
                        "calendarId": row["calendar_id"],
                        "title": row["title"],
                        "startsAt": row["starts_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "endsAt": row["ends_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "description": row["description"],
                        "location": row["location"],
                    },
                    separators=(",", ":"),
                ).encode()
            )
    requests: list[inprocess.Request] = [("POST", EVENTS_PATH, b"", body) for body in bodies]
    app = app_from_env()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        lifespan = runner.run(inprocess._started(app))
        made = 0
        for first in range(0, len(requests), CHUNK):
            chunk = requests[first : first + CHUNK]
            statuses = runner.run(inprocess.drive(app, chunk, secret, CONCURRENCY, idempotent=True))
            if set(statuses) != {201}:
                raise SystemExit(f"creating through the API: unexpected statuses {statuses}")
            made += len(chunk)
            if made % 20_000 == 0 or made == len(requests):
                log(f"  {made:,} created")
        lifespan.cancel()


def _settle(url: str) -> None:
    """What a running service leaves behind: deliveries sent, the search index merged
    (``search.merge_search_index``), statistics gathered, the WAL checkpointed."""
    import sqlite3

    from calendar_service.calendar.events.search import PARTS

    conn = sqlite3.connect(url.split("///", 1)[1], isolation_level=None)
    try:
        conn.execute(
            "UPDATE webhook_deliveries SET status = 'succeeded', attempts = 1,"
            " last_status_code = 200, completed_at = created_at WHERE status = 'pending'"
        )
        for part in range(PARTS):
            table = f"events_search_{part}"
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', -2000)")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.api_seed", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--db", type=Path, default=None, help="where (default bench/results/db)")
    a = p.parse_args(argv)
    path = a.db or pristine(a.rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    build(path, a.rows, log=lambda text: print(text, file=sys.stderr, flush=True))


if __name__ == "__main__":
    main()
