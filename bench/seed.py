"""Seeding: our database in the reference shape, and the reference minimum's own database.

The shape is the one of ``bench/reference/seed_db.py``: calendars of 5,000 events each spread
over 100 weeks from 2024-01-01 (about 50 a week), starting on quarter hours, 30 min to 3 h long,
drawn from the same random sequence. ``rows // 5000`` calendars: 10k rows = 2 calendars,
100k = 20, 1M = 200. Rows are written in bulk with SQLAlchemy Core inserts through the real
column types, so a change of storage format is picked up (and the cache below re-seeds).

A seeded database is kept in ``bench/results/db`` next to a JSON file with the bench keys; it is
reused while the schema, the models and this file are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, delete, insert, select, text, update

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday
WEEKS = 100
EVENTS_PER_CAL = 5000
DURATIONS = (1800, 3600, 5400, 7200, 10800)
MAX_EVENT_SECONDS = 3 * 3600
WORDS = [
    "standup",
    "review",
    "planning",
    "sync",
    "lunch",
    "dentist",
    "gym",
    "call",
    "demo",
    "retro",
    "interview",
    "onboarding",
    "budget",
    "design",
    "offsite",
    "dinner",
    "train",
    "flight",
]
REFERENCE_TOKEN = "bench-token-0001"
OWNER_EMAIL = "bench@example.com"
EXTRA_KEYS = 1000  # the reference has 1,000 keys; so do we
BATCH = 20_000

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Seeded:
    """What a load run needs to know about a seeded database of ours."""

    url: str
    rows: int
    calendars: int
    calendar_id: str  # the calendar the read key reaches (the write key: the last one)
    read_secret: str  # one-calendar read key
    write_secret: str  # one-calendar write key
    fingerprint: str
    seconds: float = 0.0
    series: int = 0  # weekly series beside the events (the recurrence shape)
    # A write key of the read key's calendar alone (``bench.api_seed``'s databases; its
    # ``write_secret`` reaches every calendar).
    one_calendar_write_secret: str = ""


def fingerprint() -> str:
    """Changes whenever the schema, the storage types or this seeder change."""
    digest = hashlib.sha256()
    files = sorted((ROOT / "calendar_service" / "platform" / "models").glob("*.py"))
    files.append(ROOT / "calendar_service" / "platform" / "timeutil.py")
    files.append(Path(__file__))
    files += sorted((ROOT / "migrations" / "versions").glob("*.py"))
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _calendar_count(rows: int) -> int:
    return max(1, rows // EVENTS_PER_CAL)


def _events_per_calendar(rows: int) -> int:
    return EVENTS_PER_CAL if rows >= EVENTS_PER_CAL else rows


def _event_rows(rows: int, calendar_ids: list[str], now: datetime):  # type: ignore[no-untyped-def]
    """Event values in the reference's order and random sequence, ``BATCH`` at a time."""
    from calendar_service.platform.ids import new_id

    rnd = random.Random(42)
    span = WEEKS * 7 * 86400
    batch = []
    per = _events_per_calendar(rows)
    for cal in calendar_ids:
        for _ in range(per):
            start = EPOCH + timedelta(seconds=rnd.randrange(0, span) // 900 * 900)
            end = start + timedelta(seconds=rnd.choice(DURATIONS))
            w = rnd.sample(WORDS, 2)
            batch.append(
                {
                    "id": new_id("ev"),
                    "calendar_id": cal,
                    "title": f"{w[0].title()} {w[1]}",
                    "starts_at": start,
                    "ends_at": end,
                    "all_day": False,
                    "description": f"Agenda for {w[0]} and {w[1]}",
                    "location": f"Room {rnd.randrange(1, 40)}",
                    "created_at": now,
                    "updated_at": now,
                }
            )
            if len(batch) >= BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def _series(conn, user_id: str, calendar_ids: list[str], count: int, now: datetime) -> None:  # type: ignore[no-untyped-def]
    """``count`` endless weekly series, spread evenly over the calendars, through the core's
    own create (so they are stored exactly as a client's would be): each starts in the first
    week of the events' span, on a weekday, at a quarter hour between 08:00 and 17:45, 30 min to
    3 h long; so every one-week window of the list meets every series of its calendar once."""
    from calendar_service.access.keys import owner_principal
    from calendar_service.calendar.events import create_event
    from calendar_service.platform.models import EventCreate, WebhookDelivery

    rnd = random.Random(7)
    principal = owner_principal(user_id)
    days = ("MO", "TU", "WE", "TH", "FR")
    for n in range(count):
        day = rnd.randrange(5)
        start = EPOCH + timedelta(days=day, minutes=8 * 60 + rnd.randrange(40) * 15)
        end = start + timedelta(seconds=rnd.choice(DURATIONS))
        w = rnd.sample(WORDS, 2)
        data = EventCreate.model_validate(
            {
                "calendarId": calendar_ids[n % len(calendar_ids)],
                "title": f"Weekly {w[0]} {w[1]}",
                "startsAt": start.isoformat(),
                "endsAt": end.isoformat(),
                "recurrence": [f"RRULE:FREQ=WEEKLY;BYDAY={days[day]}"],
            }
        )
        create_event(conn, principal=principal, data=data, now=now)
    # The two databases compared differ by the series alone: not by their webhook deliveries.
    conn.execute(delete(WebhookDelivery.__table__))  # type: ignore[arg-type]


def _reset_database(url: str) -> None:
    """Start from nothing: delete the SQLite file, or drop and create the PostgreSQL database."""
    if url.startswith("sqlite"):
        path = Path(url.split("///", 1)[1])
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    base, name = url.rsplit("/", 1)
    admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()


def seed_ours(url: str, rows: int, meta_path: Path, *, series: int = 0, log=print) -> Seeded:  # type: ignore[no-untyped-def]
    """Seed (or reuse) our database at ``url`` with ``rows`` events in the reference shape,
    and ``series`` weekly series spread evenly over its calendars (``_series``)."""
    from calendar_service.access import keys
    from calendar_service.calendar import calendars
    from calendar_service.calendar.events import events_t
    from calendar_service.calendar.events.search import PARTS
    from calendar_service.platform.config import Config
    from calendar_service.platform.db import Database
    from calendar_service.platform.ids import new_id
    from calendar_service.platform.migrate import upgrade
    from calendar_service.platform.models import WebhookEndpoint
    from calendar_service.platform.timeutil import utcnow

    fp = fingerprint()
    if meta_path.exists():
        meta = Seeded(**json.loads(meta_path.read_text()))
        same = meta.fingerprint == fp and meta.rows == rows and meta.series == series
        if same and meta.url == url and _alive(url, meta):
            return meta
    t0 = time.perf_counter()
    with_series = f" and {series:,} weekly series" if series else ""
    log(f"seeding {rows:,} events{with_series} into {_display(url)} ...")
    _reset_database(url)
    config = Config(database_url=url, sqlite_synchronous="OFF")
    db = Database(config)
    try:
        upgrade(db.engine)
        now = utcnow()
        with db.engine.begin() as conn:
            owner = calendars.create_owner(conn, email=OWNER_EMAIL, password=None, now=now)
            cal_ids = []
            for n in range(1, _calendar_count(rows) + 1):
                cal = calendars.create_calendar(
                    conn, user_id=owner["id"], name=f"cal {n}", time_zone="UTC", now=now
                )
                cal_ids.append(cal["id"])
            calendars_t = calendars.calendars_t
            conn.execute(
                update(calendars_t)
                .where(calendars_t.c.id.in_(cal_ids))
                .values(max_event_seconds=MAX_EVENT_SECONDS)
            )
            expires = now + timedelta(days=3650)
            common = {"user_id": owner["id"], "expires_at": expires, "now": now}
            _, read_secret = keys.create_key(
                conn, name="bench read", permission="read", calendar_id=cal_ids[0], **common
            )
            _, write_secret = keys.create_key(
                conn, name="bench write", permission="write", calendar_id=cal_ids[-1], **common
            )
            conn.execute(
                insert(keys.keys_t),
                [
                    {
                        "id": new_id("key"),
                        "user_id": owner["id"],
                        "name": f"other {i}",
                        "prefix": "calsk_other",
                        "secret_hash": hashlib.sha256(f"other-{i}".encode()).hexdigest(),
                        "permission": "read",
                        "calendar_id": None,
                        "created_at": now,
                        "expires_at": expires,
                        "revoked_at": None,
                    }
                    for i in range(EXTRA_KEYS)
                ],
            )
            # A webhook endpoint, so that every create writes its outbox row as the reference
            # does. The benchmark serves with --no-webhooks: nothing is sent.
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
        for batch in _event_rows(rows, cal_ids, now):
            with db.engine.begin() as conn:
                conn.execute(insert(events_t), batch)
        if series:
            with db.engine.begin() as conn:
                _series(conn, owner["id"], cal_ids, series, now)
        raw = db.engine.raw_connection()  # outside any transaction (autocommit on SQLite)
        try:
            cur = raw.cursor()
            cur.execute("ANALYZE")
            if config.is_sqlite:
                # The search index as the server's housekeeping leaves it, within a minute of
                # its start (maintenance.purge_expired, search.merge_search_index).
                for part in range(PARTS):
                    table = f"events_search_{part}"
                    cur.execute(f"INSERT INTO {table}({table}, rank) VALUES ('merge', -2000)")
                cur.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cur.close()
            raw.commit()
        finally:
            raw.close()
    finally:
        db.close()
    meta = Seeded(
        url=url,
        rows=rows,
        calendars=len(cal_ids),
        calendar_id=cal_ids[0],
        read_secret=read_secret,
        write_secret=write_secret,
        fingerprint=fp,
        seconds=round(time.perf_counter() - t0, 1),
        series=series,
    )
    meta_path.parent.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(asdict(meta), indent=1))
    log(f"  seeded in {meta.seconds:.1f}s")
    return meta


def _alive(url: str, meta: Seeded) -> bool:
    """The cached database is still there and still holds the bench keys."""
    if url.startswith("sqlite") and not Path(url.split("///", 1)[1]).exists():
        return False
    from calendar_service.access.keys import hash_secret, keys_t

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                select(keys_t.c.id).where(keys_t.c.secret_hash == hash_secret(meta.read_secret))
            ).first()
        return found is not None
    except Exception:
        return False
    finally:
        engine.dispose()


def _display(url: str) -> str:
    return url.split("@")[-1] if "@" in url else url


def seed_in_tree(  # type: ignore[no-untyped-def]
    tree: Path, url: str, rows: int, meta_path: Path, *, series: int = 0, log=print
) -> Seeded:
    """Seed (or reuse) with another checkout's own code: its migrations, models and
    ``seed_ours``, so that an older commit is served on the schema it knows (before/after
    runs, ``--ours-tree`` and ``--only before``). Its progress goes to standard error."""
    code = (
        "import json, sys; from pathlib import Path; from bench import seed; "
        "m = seed.seed_ours(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), "
        "series=int(sys.argv[4]), log=lambda *a: print(*a, file=sys.stderr, flush=True)); "
        "print(json.dumps(m.__dict__))"
    )
    tree = tree.resolve()
    log(f"seeding with {tree}'s own code ...")
    done = subprocess.run(
        [sys.executable, "-c", code, url, str(rows), str(meta_path), str(series)],
        check=True,
        cwd=tree,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    known = Seeded.__dataclass_fields__
    return Seeded(**{k: v for k, v in got.items() if k in known})


def seed_reference(seed_script: Path, path: Path, rows: int, *, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Build (or reuse) the reference minimum's database with its own ``seed_db.py``."""
    stamp = path.with_suffix(".seeded")
    digest = hashlib.sha256(seed_script.read_bytes()).hexdigest()[:16]
    if path.exists() and stamp.exists() and stamp.read_text() == digest:
        return path
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"seeding the reference minimum with {rows:,} events ...")
    subprocess.run(
        [sys.executable, str(seed_script), str(path), str(rows)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ},
    )
    stamp.write_text(digest)
    return path
