"""``python -m bench.links``: a scheduling link's slot computation over a two-week window against
``findFreeTime`` over the same window, in process, on one database.

One calendar (UTC) with ``--events`` busy events spread over the two weeks (each 30 to 90
minutes, at random quarter hours, a fixed random sequence) and ``--series`` weekly series; a
write key; a link over the two weeks (30-minute slots). Timed, alternately, ``--rounds`` rounds
of ``--repeat`` calls of each:

- ``page``: ``booking.link_slots`` (what ``/book/{token}`` and ``GET /api/v1/book/{token}/slots``
  compute: the link found by its token's hash, its key authorized, its calendar read, then
  ``findFreeTime``'s slots, every one of the window);
- ``findFreeTime``: ``availability.find_free_time`` for the key over the same window, every slot
  (``most``, as the page asks), and with the public limit of 100.

Each round's calls per second (the calls interleaved one by one); the median of the rounds'
ratios page / findFreeTime (the issue asks >= 0.8).
SQLite in a temporary directory by default; ``--postgres-admin-url`` for PostgreSQL.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import insert

from bench.hostile import database
from calendar_service.access import keys
from calendar_service.calendar import availability, booking, calendars, links
from calendar_service.calendar.events import events_t
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.deferred import finish
from calendar_service.platform.ids import new_id
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.timeutil import utcnow

DAYS = 14


def _seed(db: Database, events: int, series: int) -> tuple[Any, str, datetime]:
    """An owner with ``events`` busy events and ``series`` weekly series over two weeks from
    tomorrow; returns (the key's principal, a link's token, the window's start)."""
    now = utcnow()
    owner = db.call(calendars.create_owner, email="bench@example.com", password="x" * 12, now=now)
    calendar_id = owner["defaultCalendarId"]
    start = (
        (now + timedelta(days=1)).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    )
    rng = random.Random(44)
    rows = []
    for i in range(events + series):
        at = start + timedelta(minutes=15 * rng.randrange(DAYS * 96))
        length = timedelta(minutes=rng.choice((30, 45, 60, 90)))
        rows.append(
            {
                "id": new_id("ev"),
                "calendar_id": calendar_id,
                "title": f"busy {i}",
                "starts_at": at,
                "ends_at": at + length,
                "all_day": False,
                "created_at": now,
                "updated_at": now,
                "status": "confirmed",
                "transparency": "opaque",
                "recurrence": '["RRULE:FREQ=WEEKLY"]' if i >= events else None,
                "recurrence_last_start": None,
                "recurrence_ends_at": None,
                "time_zone": "UTC" if i >= events else None,
            }
        )

    def write(conn: Any) -> None:
        conn.execute(insert(events_t), rows)

    db.call(write)
    record, _ = db.call(
        keys.create_key,
        user_id=owner["id"],
        name="bench",
        permission="write",
        expires_at=now + timedelta(days=30),
        calendar_id=None,
        now=now,
    )
    principal = db.call(
        lambda conn: keys.authorize(keys.key_row_by_id(conn, key_id=record["id"]), now=now)
    )
    made = db.call(
        links.create_link,
        principal=principal,
        body={
            "title": "Intro",
            "durationMinutes": 30,
            "timeMin": start.isoformat(),
            "timeMax": (start + timedelta(days=DAYS)).isoformat(),
            "uses": 100,
        },
        now=now,
        base_url="http://bench",
    )
    return principal, made["url"].rsplit("/", 1)[1], start


def _rates(db: Database, calls: dict[str, Callable[[Any], Any]], repeat: int) -> dict[str, float]:
    """Calls per second of each, the calls interleaved one by one (a machine that slows down
    meanwhile slows each alike)."""
    spent = dict.fromkeys(calls, 0.0)
    for _ in range(repeat):
        for name, call in calls.items():
            started = time.perf_counter()
            db.call(call)
            spent[name] += time.perf_counter() - started
    return {name: repeat / seconds for name, seconds in spent.items()}


def run(db: Database, *, events: int, series: int, rounds: int, repeat: int) -> dict[str, Any]:
    principal, token, start = _seed(db, events, series)
    window = {
        "timeMin": start.isoformat(),
        "timeMax": (start + timedelta(days=DAYS)).isoformat(),
        "durationMinutes": 30,
        "timeZone": "UTC",
    }

    def page(conn: Any) -> Any:  # series expanded at once, as findFreeTime's finish does
        return finish(booking.link_slots(conn, token=token, now=utcnow()))

    def free_all(conn: Any) -> Any:
        return availability.find_free_time(
            conn, principal=principal, body=window, most=booking.SLOTS_MOST
        )

    def free_100(conn: Any) -> Any:
        return availability.find_free_time(conn, principal=principal, body={**window, "limit": 100})

    slots = len(db.call(page)["slots"])
    assert slots == len(db.call(free_all)["slots"]), "the page and findFreeTime disagree"
    calls = {"page": page, "findFreeTime": free_all, "findFreeTime100": free_100}
    found: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, rate in _rates(db, calls, repeat).items():
            found[name].append(rate)
    ratios = [p / f for p, f in zip(found["page"], found["findFreeTime"], strict=True)]
    return {
        "slots": slots,
        "perSecond": {name: statistics.median(v) for name, v in found.items()},
        "ratio": statistics.median(ratios),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.links", description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=300)
    p.add_argument("--series", type=int, default=10)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--postgres-admin-url", default=None)
    args = p.parse_args(argv)
    with database(args.postgres_admin_url) as url:
        db = Database(Config(database_url=url))
        try:
            upgrade(db.engine)
            result = run(
                db, events=args.events, series=args.series, rounds=args.rounds, repeat=args.repeat
            )
        finally:
            db.close()
    rates = result["perSecond"]
    print(
        f"two weeks, {args.events} events and {args.series} weekly series: {result['slots']} slots"
    )
    for name, rate in rates.items():
        print(f"  {name:16} {rate:8.1f} calls/s")
    print(f"  page / findFreeTime (same window, every slot): {result['ratio']:.2f}")


if __name__ == "__main__":
    main()
