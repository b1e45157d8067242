"""``python -m bench.short_search``: one-letter searches against a real server, and ``/healthz``
beside them (issue 39, D).

One calendar of ``--events`` events (default 13,000, an hour apart from 2026-01-01, written in
bulk): each a title of three words, a description of twelve and a location, drawn from a
vocabulary of 20,000 made-up words of 3 to 9 letters (a fixed random sequence), and two
attendees. On a fresh server (``calendar-service serve``, one process): ``q=s`` (and ``q=st``,
``q=sta``) one at a time, ``--repeat`` times each (the median and the slowest); then ``--clients``
concurrent clients each sending ``q=s`` ``--rounds`` times while a prober asks ``/healthz``
every 50 ms (its median and slowest, and the searches' median and slowest).

PostgreSQL by default (``--postgres-admin-url``: a database of its own, dropped at the end);
``--sqlite`` for the same on SQLite in a temporary directory. ``--ours-tree`` serves the code of
another checkout (before/after figures)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import string
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

from bench import servers
from bench.hostile import Prober, database
from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.calendar.events import events_t
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.timeutil import utcnow

EVENTS = "/api/v1/calendar/events"
DEFAULT_ADMIN = "postgresql+psycopg://root@127.0.0.1:5432/postgres"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.short_search", description=__doc__.split("\n")[0]
    )
    p.add_argument("--events", type=int, default=13_000)
    p.add_argument("--repeat", type=int, default=10, help="one-at-a-time searches of each q")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--rounds", type=int, default=5, help="searches each concurrent client sends")
    p.add_argument("--postgres-admin-url", default=DEFAULT_ADMIN)
    p.add_argument("--sqlite", action="store_true", help="SQLite instead of PostgreSQL")
    p.add_argument(
        "--no-analyze", action="store_true", help="no ANALYZE after the seed (as a fresh server)"
    )
    p.add_argument("--ours-tree", type=Path, default=None, help="serve ours from this checkout")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    return p.parse_args(argv)


def seed(url: str, count: int, *, analyze: bool = True) -> str:
    """The schema, an owner, a calendar of ``count`` events; a read key's secret to it."""
    db = Database(Config(database_url=url))
    try:
        upgrade(db.engine)
        now = utcnow()
        rnd = random.Random(39)

        def made_up() -> str:
            return "".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(3, 9)))

        vocabulary = [made_up() for _ in range(20_000)]
        base = datetime(2026, 1, 1, tzinfo=UTC)
        with db.engine.begin() as conn:
            owner = calendars.create_owner(conn, email="short@example.com", password=None, now=now)
            calendar = calendars.create_calendar(
                conn, user_id=owner["id"], name="short", time_zone="UTC", now=now
            )
            _, secret = keys.create_key(
                conn,
                name="read",
                permission="read",
                calendar_id=calendar["id"],
                user_id=owner["id"],
                expires_at=now + timedelta(days=1),
                now=now,
            )
            rows = []
            for n in range(count):
                starts = base + timedelta(hours=n)
                people = [
                    {"email": f"{w}@example.com", "name": w.title(), "responseStatus": "accepted"}
                    for w in rnd.sample(vocabulary, 2)
                ]
                organizer = {"email": "short@example.com", "name": "short@example.com"}
                rows.append(
                    {
                        "id": new_id("ev"),
                        "calendar_id": calendar["id"],
                        "title": " ".join(rnd.sample(vocabulary, 3)).title(),
                        "description": " ".join(rnd.sample(vocabulary, 12)),
                        "location": f"Room {rnd.randrange(40)}",
                        "attendees": json.dumps(
                            {"organizer": organizer, "attendees": people, "sequence": 0}
                        ),
                        "starts_at": starts,
                        "ends_at": starts + timedelta(minutes=30),
                        "all_day": False,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            conn.execute(insert(events_t), rows)
        with db.engine.connect() as conn:
            if analyze:
                conn.exec_driver_sql("ANALYZE")
            conn.commit()
        return secret
    finally:
        db.close()


def _search(client: httpx.Client, q: str) -> float:
    started = time.perf_counter()
    answer = client.get(EVENTS, params={"q": q, "timeMin": "2026-01-01T00:00:00Z"})
    answer.raise_for_status()
    return time.perf_counter() - started


def _ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
    }


def run(args: argparse.Namespace, log: Any = print) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "events": args.events,
        "backend": "sqlite" if args.sqlite else "postgresql",
    }
    admin = None if args.sqlite else args.postgres_admin_url
    with tempfile.TemporaryDirectory(prefix="bench-short-") as logs, database(admin) as url:
        log(f"seeding {args.events:,} events ({figures['backend']}) ...")
        secret = seed(url, args.events, analyze=not args.no_analyze)
        headers = {"Authorization": f"Bearer {secret}"}
        with servers.ours(url, log_dir=Path(logs), tree=args.ours_tree) as server:
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
                for q in ("s", "st", "sta"):
                    took = [_search(client, q) for _ in range(args.repeat)]
                    figures[f"q={q}"] = _ms(took)
                    log(f"q={q:<4} one at a time: {figures[f'q={q}']}")
            prober = Prober(server.url)
            searches: list[float] = []
            lock = threading.Lock()

            def client_run() -> None:
                with httpx.Client(base_url=server.url, headers=headers, timeout=120) as c:
                    for _ in range(args.rounds):
                        took = _search(c, "s")
                        with lock:
                            searches.append(took)

            with prober.beside() as healthz, ThreadPoolExecutor(args.clients) as pool:
                for future in [pool.submit(client_run) for _ in range(args.clients)]:
                    future.result()
            figures["concurrent"] = {
                "clients": args.clients,
                "search": _ms(searches),
                "healthz": _ms(list(healthz)),
                "healthz_probes": len(healthz),
            }
            log(f"{args.clients} clients of q=s: {figures['concurrent']}")
    return figures


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    figures = run(args)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    sys.exit(main())
