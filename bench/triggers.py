"""``python -m bench.triggers``: time triggers at scale (issue 27, item 6).

The shape: one owner with ``--events`` single events (100,000) spread over 100 weeks around
now, ``--series`` weekly series (1,000) in 20 calendars, and ``--subscriptions`` key
subscriptions (20) taking ``calendar.event.starting`` at ``minutesBefore [0, 15]``. Then:

1. **The first plan**: the owner's horizon (24 h of due times) planned at once, as when the
   subscriptions appear: seconds and rows written.
2. **A tick with nothing due**: the planner and the claim with no change and nothing due
   (``webhooks.triggers.run_tick``), median and p99 over ``--ticks`` ticks; then the same with
   100,000 more rows planned (due later in the day: the claim's index range is empty).
3. **A burst**: events made so that ``--burst`` deliveries (5,000: 125 events starting in 30 s
   at offset 0, 125 more starting 15 minutes later at offset 15, each times 20 subscriptions)
   fall due at the same instant; the real job (``webhooks.scheduler.delivery_job``, the
   trigger job and the dispatcher on uvloop, as ``serve`` runs them) plans, fires and sends
   them to a local receiver in another process, which notes when each arrives. Lateness =
   arrival minus ``scheduledFor``: p50, p99, max. Also how long the firing (claim and queue)
   of the burst took.
4. **The list beside it**: ``--list-calls`` one-week lists of one calendar through the core
   (``events.list_events``), timed with the trigger job idle and then with it running every
   second over the 100,000 planned rows: the ratio of the two medians (goal: >= 0.97).
5. **The list through ``serve``** (unless ``--serve-rounds 0``): requests a second of one-week
   lists (``bench.load``, the main benchmark's list) with the read key, from ``calendar-service
   serve`` on this database with its delivery and trigger jobs running (the triggers planned)
   and with ``--no-webhooks``, alternated ``--serve-rounds`` times; the ratio of the medians.

SQLite in a temporary directory by default; ``--database-url`` for PostgreSQL (an empty
database). Not run by the test suite but at ``--tiny`` size (``tests/bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvloop
from sqlalchemy import func, insert, select, update

from bench.webhooks import bench_database, percentile, read_body
from calendar_service.access import keys
from calendar_service.calendar import calendars, events
from calendar_service.calendar.events import events_t
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.delivery.triggers.tables import plan_t
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import EventCreate, deliveries_t
from calendar_service.platform.timeutil import utcnow
from webhooks.scheduler import delivery_job
from webhooks.triggers import run_tick

WEEKS = 100
CALENDARS = 20
DURATIONS = (1800, 3600, 5400)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.triggers", description=__doc__.split("\n")[0])
    p.add_argument("--database-url", default=None, help="default: SQLite in a temp directory")
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--series", type=int, default=1000)
    p.add_argument("--subscriptions", type=int, default=20)
    p.add_argument("--planned", type=int, default=100_000, help="rows added for the idle tick")
    p.add_argument("--burst", type=int, default=5000, help="deliveries due at one instant")
    p.add_argument("--ticks", type=int, default=50)
    p.add_argument("--list-calls", type=int, default=400)
    p.add_argument("--tiny", action="store_true", help="a quick run at a small size")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--serve-rounds", type=int, default=3, help="0: no list through serve")
    p.add_argument("--serve-seconds", type=float, default=8.0, help="each serve round's load")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="py-spy's samples of this process during the burst, collapsed stacks, to this file",
    )
    p.add_argument("--receiver", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.tiny:
        a.events, a.series, a.subscriptions = 500, 10, 2
        a.planned, a.burst, a.ticks, a.list_calls = 500, 40, 5, 20
        a.serve_rounds = 0
    return a


# ---------------------------------------------------------------------------------------------
# The receiver process


def receiver_app() -> Any:
    """POST notes when each burst delivery arrived, and when it was due; GET /count says how
    many arrived (cheap: it is polled), GET /arrivals returns them (once, at the end)."""
    arrivals: list[tuple[float, str]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if scope["method"] == "POST":
            arrived = time.time()
            if b'"title":"burst' in body:
                data = json.loads(body)["data"]
                arrivals.append((arrived, data["scheduledFor"]))
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        out = str(len(arrivals)).encode()
        if scope["path"] == "/arrivals":
            out = json.dumps(arrivals).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": out})

    return app


@contextmanager
def receiver_process() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4096)
        fd = sock.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.triggers", "--receiver", str(fd)], pass_fds=(fd,)
        )
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            httpx.get(url + "/count", timeout=30).raise_for_status()
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def serve_receiver(fd: int) -> None:
    import uvicorn

    uvicorn.run(receiver_app(), fd=fd, log_level="warning", access_log=False, backlog=4096)


# ---------------------------------------------------------------------------------------------
# Seeding


def seed(db: Database, a: argparse.Namespace, receiver_url: str, now: datetime) -> dict[str, Any]:
    """The owner, calendars, events, series and subscriptions; returns what the runs need."""
    started = time.perf_counter()
    with db.engine.begin() as conn:
        owner = calendars.create_owner(
            conn, email=f"bench-{uuid.uuid4().hex[:8]}@example.com", password=None, now=now
        )
        cal_ids = [
            calendars.create_calendar(
                conn, user_id=owner["id"], name=f"cal {n}", time_zone="Europe/Berlin", now=now
            )["id"]
            for n in range(CALENDARS)
        ]
        conn.execute(
            update(calendars.calendars_t)
            .where(calendars.calendars_t.c.id.in_(cal_ids))
            .values(max_event_seconds=max(DURATIONS))
        )
        record, secret = keys.create_key(
            conn, user_id=owner["id"], name="automation", permission="read", calendar_id=None,
            expires_at=now + timedelta(days=365), now=now,
        )  # fmt: skip
    rnd = random.Random(42)
    first = (now - timedelta(weeks=WEEKS // 2)).replace(minute=0, second=0, microsecond=0)
    span = WEEKS * 7 * 86400
    batch: list[dict[str, Any]] = []
    for n in range(a.events):
        start = first + timedelta(seconds=rnd.randrange(span) // 900 * 900)
        batch.append(
            {
                "id": new_id("ev"),
                "calendar_id": cal_ids[n % CALENDARS],
                "title": f"event {n}",
                "starts_at": start,
                "ends_at": start + timedelta(seconds=rnd.choice(DURATIONS)),
                "all_day": False,
                "created_at": now,
                "updated_at": now,
            }
        )
        if len(batch) >= 10_000 or n == a.events - 1:
            with db.engine.begin() as conn:
                conn.execute(insert(events_t), batch)
            batch = []
    principal = events.owner_principal(owner["id"])
    days = ("MO", "TU", "WE", "TH", "FR")

    def series(conn: Any) -> None:
        monday = (now - timedelta(days=now.weekday())).date()
        for n in range(a.series):
            day = rnd.randrange(5)
            start = datetime.combine(monday, datetime.min.time()) + timedelta(
                days=day, minutes=8 * 60 + rnd.randrange(40) * 15
            )
            data = EventCreate.model_validate(
                {
                    "calendarId": cal_ids[n % CALENDARS],
                    "title": f"weekly {n}",
                    "startsAt": start.isoformat(),
                    "endsAt": (start + timedelta(minutes=30)).isoformat(),
                    "recurrence": [f"RRULE:FREQ=WEEKLY;BYDAY={days[day]}"],
                }
            )
            events.create_event(conn, principal=principal, data=data, now=now)

    db.call(series)
    key = keys.Principal(
        key_id=record["id"], user_id=owner["id"], permission="read", calendar_id=None,
        expires_at=now + timedelta(days=365),
    )  # fmt: skip
    target = webhook_targets.check_endpoint_url(
        receiver_url + "/hook", allow_local=True, resolve=webhook_targets.system_resolve
    )
    for _ in range(a.subscriptions):
        db.call(
            subscriptions.create_subscription,
            principal=key,
            body={
                "url": target.url,
                "events": ["calendar.event.starting"],
                "minutesBefore": [0, 15],
            },
            target=target,
            now=now,
        )
    db.call(lambda conn: conn.execute(deliveries_t.delete()))  # the seed's own deliveries
    return {
        "owner": owner["id"],
        "calendars": cal_ids,
        "secret": secret,
        "seconds": round(time.perf_counter() - started, 1),
    }


# ---------------------------------------------------------------------------------------------
# The measurements


def timed_ticks(db: Database, config: Config, count: int) -> dict[str, float]:
    """``run_tick`` ``count`` times with nothing due or changed: ms per tick."""
    took = []
    for _ in range(count):
        began = time.perf_counter()
        with db.engine.connect() as conn:
            run_tick(conn, now=utcnow, grace=config.trigger_grace)
        took.append((time.perf_counter() - began) * 1000)
    return {"p50_ms": round(statistics.median(took), 2), "p99_ms": round(percentile(took, 0.99), 2)}


def add_planned(db: Database, owner: str, calendar_id: str, count: int, now: datetime) -> None:
    """``count`` more planned rows, due later in the day (not in the claim's range)."""
    rows = [
        {
            "user_id": owner,
            "calendar_id": calendar_id,
            "event_id": f"ev_planned_{n}",
            "series_id": None,
            "kind": "starting",
            "minutes_before": 0,
            "due_at": now + timedelta(hours=2, seconds=n % 79_200),
            "status": "planned",
            "event": '{"id": "ev_planned"}',
            "fired_at": None,
        }
        for n in range(count)
    ]
    with db.engine.begin() as conn:
        for at in range(0, len(rows), 10_000):
            conn.execute(insert(plan_t), rows[at : at + 10_000])


def make_burst(db: Database, owner: str, cal_ids: list[str], a: argparse.Namespace) -> datetime:
    """Events whose triggers (times the subscriptions) are ``a.burst`` deliveries due at one
    instant, 30 s from now; returns the instant."""
    at = (utcnow() + timedelta(seconds=30)).replace(microsecond=0)
    per_offset = max(1, a.burst // (2 * a.subscriptions))
    principal = events.owner_principal(owner)

    def create(conn: Any) -> None:
        for offset in (0, 15):
            start = at + timedelta(minutes=offset)
            for n in range(per_offset):
                data = EventCreate(
                    title=f"burst {offset} {n}",
                    calendar_id=cal_ids[n % len(cal_ids)],
                    starts_at=start.isoformat(),
                    ends_at=(start + timedelta(minutes=30)).isoformat(),
                )
                events.create_event(conn, principal=principal, data=data, now=utcnow())

    db.call(create)
    return at


async def run_burst(
    config: Config,
    db: Database,
    receiver_url: str,
    at: datetime,
    wanted: int,
    timeout: float,
    profile: Path | None = None,
) -> dict[str, Any]:
    """The job as ``serve`` runs it, until the burst's deliveries have all arrived (sampled by
    py-spy from half a second before the due instant when ``profile`` is given)."""
    cpu_before = _cpu_seconds()
    spy: subprocess.Popen[bytes] | None = None
    async with delivery_job(config, db):  # the dispatcher's defaults, as serve runs it
        deadline = time.monotonic() + timeout + 30
        async with httpx.AsyncClient(timeout=30) as client:
            cpu_at_due: float | None = None
            while True:
                if cpu_at_due is None and time.time() >= at.timestamp():
                    cpu_at_due = _cpu_seconds()
                if profile is not None and spy is None and time.time() >= at.timestamp() - 0.5:
                    spy = _py_spy(profile)
                count = int((await client.get(receiver_url + "/count")).text)
                if count >= wanted:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"only {count}/{wanted} burst deliveries arrived")
                await asyncio.sleep(0.25)
            burst = (await client.get(receiver_url + "/arrivals")).json()
        cpu_end = _cpu_seconds()
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=60)
        due = cpu_end if cpu_at_due is None else cpu_at_due
        cpu, waiting = cpu_end - due, due - cpu_before
        fired = await db.run(
            lambda conn: conn.execute(
                select(func.min(plan_t.c.fired_at), func.max(plan_t.c.fired_at)).where(
                    plan_t.c.due_at == at
                )
            ).one()
        )
    late = [
        at_ - datetime.fromisoformat(due.replace("Z", "+00:00")).timestamp() for at_, due in burst
    ]
    return {
        "deliveries": len(burst),
        "late_min_s": round(min(late), 3),
        "late_p50_s": round(percentile(late, 0.5), 3),
        "late_p99_s": round(percentile(late, 0.99), 3),
        "late_max_s": round(max(late), 3),
        "fired_within_s": round((fired[1] - fired[0]).total_seconds(), 3),
        # This process's CPU (every thread) from the instant the burst fell due (polled every
        # 0.25 s) to the last arrival, over the deliveries: what one delivery costs the sender
        # (firing included), whatever else the machine runs; and before it, from the job's
        # start (planning the burst's events, ticking).
        "cpu_s": round(cpu, 2),
        "cpu_before_due_s": round(waiting, 2),
        "cpu_us_per_delivery": round(cpu / max(1, len(burst)) * 1e6),
    }


def _py_spy(out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling this process (on-CPU samples, 250 a second) into ``out`` until SIGINT."""
    spy = Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "--pid", str(os.getpid()), "--rate", "250", "--format", "raw"]
    return subprocess.Popen([*command, "--output", str(out)], stdout=subprocess.DEVNULL)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def list_medians(db: Database, owner: str, calendar_id: str, calls: int) -> float:
    """The median time (ms) of a one-week list of one calendar through the core."""
    principal = events.owner_principal(owner, calendar_id=calendar_id)
    key = b"k" * 32
    took = []
    week = timedelta(days=7)
    base = utcnow()
    for n in range(calls):
        low = base + timedelta(days=n % 50)
        began = time.perf_counter()
        with db.engine.begin() as conn:
            events.list_events(
                conn, principal=principal, time_min=low.isoformat(),
                time_max=(low + week).isoformat(), token_key=key,
            )  # fmt: skip
        took.append((time.perf_counter() - began) * 1000)
    return statistics.median(took)


async def list_beside_job(
    config: Config, db: Database, owner: str, calendar_id: str, calls: int
) -> float:
    """``list_medians`` on a thread while the trigger job ticks on this loop."""
    async with delivery_job(config, db):
        return await asyncio.to_thread(list_medians, db, owner, calendar_id, calls)


def list_through_serve(url: str, secret: str, a: argparse.Namespace, logs: Path) -> dict[str, Any]:
    """Requests a second of one-week lists from ``serve`` with its jobs (triggers planned and
    ticking) and without (``--no-webhooks``), alternated; medians and their ratio."""
    from bench import load, servers

    work = load.Workload.ours("list", secret)
    rps: dict[str, list[float]] = {"with": [], "without": []}
    env = {"CALENDAR_WEBHOOK_ALLOW_LOCAL": "1"}
    for n in range(a.serve_rounds):
        order = (True, False) if n % 2 == 0 else (False, True)
        for jobs in order:
            with servers.ours(url, log_dir=logs, webhooks=jobs, env=env) as server:
                load.run(server.url, work, duration=1.0, max_requests=100_000, connections=16)
                found = load.run(
                    server.url, work, duration=a.serve_seconds, max_requests=500_000,
                    connections=16,
                )  # fmt: skip
            rps["with" if jobs else "without"].append(round(found.rps, 1))
    with_jobs, without = statistics.median(rps["with"]), statistics.median(rps["without"])
    return {**rps, "ratio": round(with_jobs / without, 3)}


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.receiver is not None:
        serve_receiver(a.receiver)
        return
    with tempfile.TemporaryDirectory() as tmp, receiver_process() as receiver_url:
        url = a.database_url or f"sqlite:///{Path(tmp) / 'triggers-bench.db'}"
        with bench_database(url) as (config, db):
            now = utcnow()
            seeded = seed(db, a, receiver_url, now)
            owner, cal_ids = seeded["owner"], seeded["calendars"]
            began = time.perf_counter()
            with db.engine.connect() as conn:
                first = run_tick(conn, now=utcnow, grace=config.trigger_grace)
            first_plan = {
                "seconds": round(time.perf_counter() - began, 3),
                "rows": first.planned.written if first.planned else 0,
            }
            idle = timed_ticks(db, config, a.ticks)
            add_planned(db, owner, cal_ids[0], a.planned, now)
            idle_planned = timed_ticks(db, config, a.ticks)
            list_without = list_medians(db, owner, cal_ids[1], a.list_calls)
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                list_with = runner.run(list_beside_job(config, db, owner, cal_ids[1], a.list_calls))
            at = make_burst(db, owner, cal_ids, a)
            wanted = 2 * max(1, a.burst // (2 * a.subscriptions)) * a.subscriptions
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                burst = runner.run(
                    run_burst(config, db, receiver_url, at, wanted, a.timeout, a.profile)
                )
        served = None
        if a.serve_rounds > 0:
            served = list_through_serve(url, seeded["secret"], a, Path(tmp))
    backend = "postgresql" if url.startswith("postgresql") else "sqlite"
    result: dict[str, Any] = {
        "backend": backend,
        "cpus": os.cpu_count(),
        "shape": {
            "events": a.events,
            "series": a.series,
            "subscriptions": a.subscriptions,
            "seeded_in_s": seeded["seconds"],
        },
        "first_plan": first_plan,
        "tick_idle": idle,
        "tick_idle_with_planned": {**idle_planned, "planned": a.planned},
        "burst": burst,
        "list": {
            "without_job_ms": round(list_without, 3),
            "with_job_ms": round(list_with, 3),
            "ratio": round(list_without / list_with, 3),
        },
        "list_through_serve": served,
    }
    print(
        f"triggers on {backend}: first plan {first_plan['rows']} rows in "
        f"{first_plan['seconds']} s; a tick with nothing due {idle['p50_ms']} ms "
        f"(p99 {idle['p99_ms']}), with {a.planned:,} more planned {idle_planned['p50_ms']} ms "
        f"(p99 {idle_planned['p99_ms']}); a burst of {burst['deliveries']} deliveries due at "
        f"one instant: fired within {burst['fired_within_s']} s, late min "
        f"{burst['late_min_s']} s, p50 {burst['late_p50_s']} s, p99 {burst['late_p99_s']} s "
        f"(max {burst['late_max_s']} s; "
        f"{burst['cpu_us_per_delivery']} us of CPU a delivery); "
        f"list {result['list']['without_job_ms']} ms without the job, "
        f"{result['list']['with_job_ms']} ms with it (ratio {result['list']['ratio']})"
    )
    if served is not None:
        print(
            f"list through serve: {served['with']} req/s with the jobs, {served['without']} "
            f"without (ratio of the medians {served['ratio']})"
        )
    if a.json is not None:
        a.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
