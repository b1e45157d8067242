"""``python -m bench.webhooks``: webhook deliveries per second and commit-to-request latency.

A local receiver (uvicorn in a separate process, plain HTTP on 127.0.0.1, answering 204) notes
when each request arrives. The delivery job is the real one (``webhooks.scheduler.delivery_job``
with the production client), run on this process's event loop as ``serve`` runs it.

1. Latency: events are created one at a time through the core (``events.create_event`` in its
   own transaction, as a REST create does) at a steady pace; for each, the time from the commit
   returning to the receiver seeing the request. Reports p50, p99 and max.
2. Throughput: ``--count`` changes are committed at once with the job stopped; the job is then
   started and timed until every delivery is recorded as succeeded. Reports deliveries/s.
3. Across processes: the same latency, with the changes committed here (no delivery job in this
   process) and sent by ``calendar-service worker`` in another process: on PostgreSQL woken by
   the outbox's ``NOTIFY``, on SQLite found by its poll (every 0.25 s).

SQLite in a temporary directory by default; ``--database-url`` for PostgreSQL (an empty
database: the benchmark's owner is new, but other deliveries in it would be sent too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvloop
from sqlalchemy import func, select, text

from calendar_service.calendar import calendars, events
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery import webhook_targets
from calendar_service.platform.config import Config, parse_retry_schedule
from calendar_service.platform.db import Database
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.models import EventCreate, deliveries_t
from calendar_service.platform.timeutil import utcnow
from webhooks.scheduler import delivery_job


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.webhooks", description=__doc__.split("\n")[0])
    p.add_argument("--database-url", default=None, help="default: SQLite in a temp directory")
    p.add_argument("--samples", type=int, default=200, help="latency samples")
    p.add_argument("--interval", type=float, default=0.02, help="seconds between latency commits")
    p.add_argument("--count", type=int, default=5000, help="deliveries for the throughput run")
    p.add_argument("--max-in-flight", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--timeout", type=float, default=120.0, help="bound on each phase (s)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument("--receiver", type=int, default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# The receiver process


async def read_body(receive: Any) -> bytes:
    """A request's whole body, from its ASGI ``http.request`` messages (the tests' receiver
    reads it so too)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


def receiver_app() -> Any:
    """An ASGI app: POST records (event id → arrival time); GET /arrivals returns them."""
    arrivals: dict[str, float] = {}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if scope["method"] == "POST":
            arrived = time.time()
            arrivals[json.loads(body)["data"]["event"]["id"]] = arrived
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        payload = json.dumps(arrivals).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    return app


def serve_receiver(fd: int) -> None:
    """Run the receiver on an inherited listening socket (the child process)."""
    import uvicorn

    uvicorn.run(receiver_app(), fd=fd, log_level="warning", access_log=False)


@contextmanager
def receiver_process() -> Iterator[str]:
    """The receiver in its own process, on a socket bound here: connections made before it
    is up wait in the listen backlog, so no start-up polling is needed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        fd = sock.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.webhooks", "--receiver", str(fd)], pass_fds=(fd,)
        )
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            httpx.get(url + "/arrivals", timeout=30).raise_for_status()
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


# ---------------------------------------------------------------------------------------------
# The measurements


def make_owner(db: Database, receiver_url: str) -> str:
    """A new owner whose webhook points at the receiver; returns its id."""
    email = f"bench-{uuid.uuid4().hex[:10]}@example.com"
    user = db.call(calendars.create_owner, email=email, password=None, now=utcnow())
    target = webhook_targets.check_endpoint_url(
        f"{receiver_url}/hook", allow_local=True, resolve=webhook_targets.system_resolve
    )
    db.call(webhook_config.set_endpoint, user_id=user["id"], target=target, now=utcnow())
    return str(user["id"])


def event_data(n: int) -> EventCreate:
    """The ``n``-th benchmark event."""
    return EventCreate(
        title=f"bench {n}", starts_at="2026-03-02T09:00:00Z", ends_at="2026-03-02T10:00:00Z"
    )


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure_latency(
    config: Config, db: Database, owner: str, receiver_url: str, a: argparse.Namespace
) -> dict[str, Any]:
    """Commit changes one at a time; commit-to-request latency figures."""
    principal = events.owner_principal(owner)
    committed: dict[str, float] = {}
    options = {"max_in_flight": a.max_in_flight, "batch_size": a.batch_size}
    async with delivery_job(config, db, **options):
        for n in range(a.samples):
            event = await db.run(
                events.create_event, principal=principal, data=event_data(n), now=utcnow()
            )
            committed[event["id"]] = time.time()
            await asyncio.sleep(a.interval)
        arrivals = await wait_for_arrivals(receiver_url, set(committed), a.timeout)
    ms = [(arrivals[i] - t) * 1000 for i, t in committed.items()]
    return {
        "samples": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
    }


async def measure_throughput(
    config: Config, db: Database, owner: str, a: argparse.Namespace
) -> dict[str, Any]:
    """Commit a backlog, then time the job until every delivery is recorded."""
    principal = events.owner_principal(owner)

    def commit_all(conn: Any) -> None:
        for n in range(a.count):
            events.create_event(conn, principal=principal, data=event_data(n), now=utcnow())

    db.call(commit_all)
    options = {"max_in_flight": a.max_in_flight, "batch_size": a.batch_size}
    started = time.perf_counter()
    cpu_started = time.process_time()
    async with delivery_job(config, db, **options):
        deadline = started + a.timeout
        # Poll cheaply (the due index, a shrinking set) so the watching costs the worker little.
        while await db.run(unfinished):
            if time.perf_counter() > deadline:
                raise SystemExit("throughput run timed out")
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    done = await db.run(succeeded, owner=owner)
    if done != a.count:
        raise SystemExit(f"only {done} of {a.count} deliveries succeeded")
    return {
        "deliveries": a.count,
        "seconds": round(elapsed, 3),
        "per_second": round(a.count / elapsed, 1),
        "cpu_us_per_delivery": round(1e6 * cpu / a.count),
    }


async def measure_cross_process(
    config: Config, db: Database, owner: str, receiver_url: str, a: argparse.Namespace
) -> dict[str, Any]:
    """Commit changes here, one at a time; a ``calendar-service worker`` process sends them."""
    principal = events.owner_principal(owner)
    env = {
        **os.environ,
        "CALENDAR_DATABASE_URL": config.database_url,
        "CALENDAR_WEBHOOK_ALLOW_LOCAL": "1",
        "CALENDAR_WEBHOOK_RETRY_SCHEDULE": "1s,5s",
    }
    worker = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("calendar-service")),
            "worker",
            "--log-level",
            "warning",
        ],
        env=env,
    )
    try:
        # Up (and, on PostgreSQL, listening) once a first change has gone out through it.
        first = await db.run(
            events.create_event, principal=principal, data=event_data(0), now=utcnow()
        )
        await wait_for_arrivals(receiver_url, {first["id"]}, a.timeout)
        if not config.is_sqlite:
            await wait_listening(db, a.timeout)
        committed: dict[str, float] = {}
        for n in range(a.samples):
            event = await db.run(
                events.create_event, principal=principal, data=event_data(n), now=utcnow()
            )
            committed[event["id"]] = time.time()
            await asyncio.sleep(a.interval)
        arrivals = await wait_for_arrivals(receiver_url, set(committed), a.timeout)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    ms = [(arrivals[i] - t) * 1000 for i, t in committed.items()]
    return {
        "samples": len(ms),
        "p50_ms": round(percentile(ms, 0.50), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
    }


async def wait_listening(db: Database, timeout: float) -> None:
    """Until a worker's LISTEN connection is open on the database (PostgreSQL)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND query LIKE 'LISTEN %'"
    )
    deadline = time.monotonic() + timeout
    while not await db.run(lambda conn: conn.execute(query).scalar_one()):
        if time.monotonic() > deadline:
            raise SystemExit("the worker never listened")
        await asyncio.sleep(0.05)


def unfinished(conn: Any) -> int:
    """How many deliveries are still to be sent (through ix_webhook_deliveries_due)."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(deliveries_t)
            .where(deliveries_t.c.status.in_(("pending", "retrying")))
        ).scalar_one()
    )


def succeeded(conn: Any, *, owner: str) -> int:
    """How many of the owner's deliveries have succeeded."""
    return int(
        conn.execute(
            select(func.count())
            .select_from(deliveries_t)
            .where(deliveries_t.c.user_id == owner, deliveries_t.c.status == "succeeded")
        ).scalar_one()
    )


async def wait_for_arrivals(url: str, wanted: set[str], timeout: float) -> dict[str, float]:
    """The receiver's arrival times, once it has seen every id in ``wanted``."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            arrivals: dict[str, float] = (await client.get(url + "/arrivals")).json()
            if wanted <= arrivals.keys():
                return arrivals
            if time.monotonic() > deadline:
                raise SystemExit(f"only {len(wanted & arrivals.keys())}/{len(wanted)} arrived")
            await asyncio.sleep(0.05)


@contextmanager
def bench_database(url: str) -> Iterator[tuple[Config, Database]]:
    """The migrated database at ``url``, its webhooks allowed to the local receiver and
    retried after 1 s and 5 s (``bench.triggers`` measures on the same); closed on the way
    out."""
    config = Config(
        database_url=url,
        webhook_allow_local=True,
        webhook_retry_schedule=parse_retry_schedule("1s,5s"),
    )
    db = Database(config)
    upgrade(db.engine)
    try:
        yield config, db
    finally:
        db.close()


def main(argv: list[str] | None = None) -> None:
    """Run both measurements and print (and optionally write) the figures."""
    a = parse_args(argv)
    if a.receiver is not None:
        serve_receiver(a.receiver)
        return
    with tempfile.TemporaryDirectory() as tmp, receiver_process() as receiver_url:
        url = a.database_url or f"sqlite:///{Path(tmp) / 'webhooks-bench.db'}"
        with bench_database(url) as (config, db):
            # On uvloop, as ``serve`` runs the job (uvicorn's loop="auto" picks it).
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                latency = runner.run(
                    measure_latency(config, db, make_owner(db, receiver_url), receiver_url, a)
                )
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                throughput = runner.run(
                    measure_throughput(config, db, make_owner(db, receiver_url), a)
                )
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                across = runner.run(
                    measure_cross_process(config, db, make_owner(db, receiver_url), receiver_url, a)
                )
    backend = "postgresql" if url.startswith("postgresql") else "sqlite"
    result = {
        "backend": backend,
        "cpus": os.cpu_count(),
        "latency": latency,
        "throughput": throughput,
        "cross_process_latency": across,
    }
    print(
        f"webhooks on {backend}: commit-to-request latency p50 {latency['p50_ms']} ms, "
        f"p99 {latency['p99_ms']} ms (max {latency['max_ms']} ms, {latency['samples']} "
        f"sequential changes {a.interval * 1000:g} ms apart); "
        f"{throughput['per_second']} deliveries/s ({throughput['deliveries']} queued at once, "
        f"{throughput['cpu_us_per_delivery']} us of this process's CPU per delivery); "
        f"written here, sent by a worker process: p50 {across['p50_ms']} ms, "
        f"p99 {across['p99_ms']} ms (max {across['max_ms']} ms)"
    )
    if a.json is not None:
        a.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
