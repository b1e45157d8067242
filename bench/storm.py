"""``python -m bench.storm``: time triggers under a storm, with a slow receiver beside (issue 39,
item E).

The shape: one owner with ``--events`` single events (5,000) starting within ``--spread``
seconds (60: one minute, whole seconds, as many each second), and three key subscriptions
taking ``calendar.event.starting`` at ``minutesBefore [0]``, each to a receiver of its own on
127.0.0.1 (in one process of their own): **healthy** (answers 204 at once, notes when each
message first arrived and its ``late``), **failing** (answers 500) and **hanging** (accepts the
connection, reads, never answers). Every trigger goes to all three: 3 x ``--events``
deliveries. Two ``calendar-service serve`` processes (two hosts: their delivery and trigger
jobs as ``serve`` runs them, with the defaults: a 10 s deadline an attempt, the default retry
schedule) share the one database; the storm begins ``--lead`` seconds after the seed.

Figures, for the healthy receiver's first arrival of each message: lateness (arrival minus
``scheduledFor``) p50, p99, max; the payload's ``late`` (max), and how far it falls short of
the lateness measured (``late`` says the whole seconds from ``scheduledFor`` to the first
attempt's send, so ``lateness - late`` is under a second plus the trip to the receiver);
the hanging receiver's connections and the failing receiver's requests meanwhile.

PostgreSQL by default (``--database-url``: a server's database URL; a fresh database is made on
it and dropped afterwards); ``sqlite`` runs the same on a SQLite file (one host and a
``worker``). ``--tiny`` runs in seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, insert, select, update

from bench import servers
from bench.webhooks import bench_database, percentile, read_body
from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.calendar.events import events_t
from calendar_service.delivery import subscriptions, webhook_targets
from calendar_service.delivery.triggers.tables import plan_t
from calendar_service.platform.db import Database
from calendar_service.platform.ids import new_id
from calendar_service.platform.models import deliveries_t
from calendar_service.platform.timeutil import utcnow

DEFAULT_POSTGRES = "postgresql+psycopg://root@127.0.0.1:5432/test"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.storm", description=__doc__.split("\n")[0])
    p.add_argument(
        "--database-url",
        default=os.environ.get("CALENDAR_BENCH_POSTGRES_URL", DEFAULT_POSTGRES),
        help="a PostgreSQL server's database (a fresh one is made beside it), or 'sqlite'",
    )
    p.add_argument("--events", type=int, default=5000)
    p.add_argument("--spread", type=int, default=60, help="seconds the storm's triggers span")
    p.add_argument("--lead", type=float, default=45.0, help="seconds from the seed to the storm")
    p.add_argument("--hosts", type=int, default=2, help="serve processes on the database")
    p.add_argument("--timeout", type=float, default=240.0)
    p.add_argument("--tiny", action="store_true", help="a quick run at a small size")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="py-spy's samples of the first host from the storm's start, collapsed, to this file",
    )
    p.add_argument(
        "--hosts-tree",
        type=Path,
        default=None,
        help="run the hosts from another checkout of ours (before/after; same schema)",
    )
    p.add_argument("--logs", type=Path, default=None, help="keep the hosts' logs here")
    p.add_argument("--receivers", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.tiny:
        a.events, a.spread, a.lead = 60, 5, 25.0
    return a


# ---------------------------------------------------------------------------------------------
# The receivers' process


def serve_receivers(fds: str) -> None:
    """The healthy and failing receivers (uvicorn, one app on two sockets) and the hanging one
    (a bare asyncio server), on inherited listening sockets."""
    import uvicorn
    import uvloop

    healthy_fd, failing_fd, hanging_fd = (int(x) for x in fds.split(","))
    healthy_port = socket.socket(fileno=os.dup(healthy_fd)).getsockname()[1]
    first: dict[str, tuple[float, str, int]] = {}  # webhook-id → arrival, scheduledFor, late
    counts = {"healthy": 0, "failing": 0, "hanging_connections": 0, "hanging_open": 0}
    open_now: set[asyncio.StreamWriter] = set()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if scope["method"] == "POST" and scope["server"][1] != healthy_port:
            counts["failing"] += 1
            await send({"type": "http.response.start", "status": 500, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if scope["method"] == "POST":
            arrived = time.time()
            counts["healthy"] += 1
            msg = dict(scope["headers"]).get(b"webhook-id", b"").decode()
            if msg not in first:
                data = json.loads(body)["data"]
                first[msg] = (arrived, data["scheduledFor"], data["late"])
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        out: Any = {**counts, "first": len(first), "hanging_open": len(open_now)}
        if scope["path"] == "/arrivals":
            out = list(first.values())
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(out).encode()})

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts["hanging_connections"] += 1
        open_now.add(writer)
        try:
            while await reader.read(65536):
                pass  # read all, answer nothing
        except OSError:
            pass
        finally:
            open_now.discard(writer)
            writer.close()

    async def main() -> None:
        hanging = socket.socket(fileno=hanging_fd)
        await asyncio.start_server(hang, sock=hanging)
        sockets = [socket.socket(fileno=healthy_fd), socket.socket(fileno=failing_fd)]
        config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=4096)
        await uvicorn.Server(config).serve(sockets=sockets)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


@contextlib.contextmanager
def receivers_process() -> Iterator[dict[str, str]]:
    """The three receivers in a process of their own; their base URLs by name."""
    socks = {}
    for name in ("healthy", "failing", "hanging"):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(4096)
        socks[name] = sock
    fds = ",".join(str(socks[n].fileno()) for n in ("healthy", "failing", "hanging"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.storm", "--receivers", fds],
        pass_fds=tuple(s.fileno() for s in socks.values()),
    )
    urls = {n: f"http://127.0.0.1:{s.getsockname()[1]}" for n, s in socks.items()}
    try:
        httpx.get(urls["healthy"] + "/count", timeout=30).raise_for_status()
        yield urls
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for sock in socks.values():
            sock.close()


# ---------------------------------------------------------------------------------------------
# The database and the seed


@contextlib.contextmanager
def fresh_database(url: str, directory: Path) -> Iterator[str]:
    """A new database on the PostgreSQL server of ``url`` (dropped afterwards), or a SQLite
    file in ``directory`` for ``sqlite``."""
    if url == "sqlite":
        yield f"sqlite:///{directory / 'storm.db'}"
        return
    with servers.postgres_database(url, "bench_storm") as made:
        yield made


def seed(db: Database, a: argparse.Namespace, urls: dict[str, str]) -> datetime:
    """The owner, its events and the three subscriptions; returns the storm's first instant."""
    now = utcnow()
    start = (now + timedelta(seconds=a.lead)).replace(microsecond=0)
    with db.engine.begin() as conn:
        owner = calendars.create_owner(
            conn, email=f"storm-{uuid.uuid4().hex[:8]}@example.com", password=None, now=now
        )
        cal = calendars.create_calendar(
            conn, user_id=owner["id"], name="storm", time_zone="UTC", now=now
        )["id"]
        conn.execute(
            update(calendars.calendars_t)
            .where(calendars.calendars_t.c.id == cal)
            .values(max_event_seconds=1800)
        )
        record, _ = keys.create_key(
            conn, user_id=owner["id"], name="automation", permission="read", calendar_id=None,
            expires_at=now + timedelta(days=30), now=now,
        )  # fmt: skip
        rows = []
        for n in range(a.events):
            begins = start + timedelta(seconds=n % a.spread)
            rows.append(
                {
                    "id": new_id("ev"),
                    "calendar_id": cal,
                    "title": f"storm {n}",
                    "starts_at": begins,
                    "ends_at": begins + timedelta(minutes=30),
                    "all_day": False,
                    "created_at": now,
                    "updated_at": now,
                }
            )
        for at in range(0, len(rows), 5000):
            conn.execute(insert(events_t), rows[at : at + 5000])
    key = keys.Principal(
        key_id=record["id"], user_id=owner["id"], permission="read", calendar_id=None,
        expires_at=now + timedelta(days=30),
    )  # fmt: skip
    for name in ("healthy", "failing", "hanging"):
        target = webhook_targets.check_endpoint_url(
            urls[name] + "/hook", allow_local=True, resolve=webhook_targets.system_resolve
        )
        db.call(
            subscriptions.create_subscription,
            principal=key,
            body={"url": target.url, "events": ["calendar.event.starting"], "minutesBefore": [0]},
            target=target,
            now=now,
        )
    db.call(lambda conn: conn.execute(deliveries_t.delete()))
    return start


# ---------------------------------------------------------------------------------------------
# The storm


@contextlib.contextmanager
def hosts(
    url: str, count: int, log_dir: Path, tree: Path | None = None
) -> Iterator[list[servers.Server]]:
    """``count`` ``serve`` processes with their jobs on the database (on SQLite: one and a
    ``worker``)."""
    env = {"CALENDAR_WEBHOOK_ALLOW_LOCAL": "1"}
    with contextlib.ExitStack() as stack:
        running = []
        for n in range(count):
            if url.startswith("sqlite") and n > 0:
                running.append(stack.enter_context(worker(url, log_dir, env)))
                continue
            running.append(
                stack.enter_context(
                    servers.ours(
                        url, log_dir=log_dir, name=f"host{n}", env=env, webhooks=True, tree=tree
                    )
                )
            )
        yield running


@contextlib.contextmanager
def worker(url: str, log_dir: Path, env: dict[str, str]) -> Iterator[servers.Server]:
    log_path = log_dir / "worker.log"
    full = {**os.environ, "CALENDAR_DATABASE_URL": url, **env}
    cmd = [servers._bin("calendar-service"), "worker"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cmd, env=full, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield servers.Server("worker", 0, proc, log_path)
        finally:
            servers.stop(proc)


def wait_for_storm(urls: dict[str, str], wanted: int, deadline: float) -> dict[str, Any]:
    """Poll the healthy receiver until every message has arrived once; what it counted."""
    with httpx.Client(timeout=30) as client:
        while True:
            counts: dict[str, Any] = client.get(urls["healthy"] + "/count").json()
            if counts["first"] >= wanted:
                counts["arrivals"] = client.get(urls["healthy"] + "/arrivals").json()
                return counts
            if time.monotonic() > deadline:
                raise SystemExit(f"only {counts['first']}/{wanted} arrived at the healthy one")
            time.sleep(0.25)


def py_spy(pid: int, out: Path, seconds: int) -> subprocess.Popen[bytes]:
    """py-spy sampling ``pid`` (every thread, 250 a second) for ``seconds`` into ``out``."""
    spy = Path(sys.executable).with_name("py-spy")
    command = [str(spy), "record", "--pid", str(pid), "--rate", "250", "--format", "raw"]
    command += ["--duration", str(seconds), "--output", str(out)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


def figures(counts: dict[str, Any], start: float) -> dict[str, Any]:
    arrivals = counts.pop("arrivals")
    by_second: dict[int, int] = {}
    for arrived, *_ in arrivals:
        second = int(arrived - start)
        by_second[second] = by_second.get(second, 0) + 1
    late = []
    said = []
    short = []
    for arrived, due_text, payload_late in arrivals:
        due = datetime.fromisoformat(due_text.replace("Z", "+00:00")).timestamp()
        late.append(arrived - due)
        said.append(payload_late)
        short.append(arrived - due - payload_late)
    return {
        "deliveries": len(arrivals),
        "late_p50_s": round(percentile(late, 0.5), 3),
        "late_p99_s": round(percentile(late, 0.99), 3),
        "late_max_s": round(max(late), 3),
        "payload_late_max_s": max(said),
        "payload_late_short_by_max_s": round(max(short), 3),
        "payload_late_over_by_max_s": round(max(0.0, -min(short)), 3),
        "during": counts,
        "arrived_by_second": [by_second.get(n, 0) for n in range(max(by_second) + 1)],
    }


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.receivers is not None:
        serve_receivers(a.receivers)
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        receivers_process() as urls,
        fresh_database(a.database_url, Path(tmp)) as url,
        bench_database(url) as (_config, db),
    ):
        start = seed(db, a, urls)
        with hosts(url, a.hosts, a.logs or Path(tmp), a.hosts_tree) as running:
            wait = max(0.0, start.timestamp() - time.time())
            spy = None
            if a.profile is not None:
                time.sleep(wait)
                spy = py_spy(running[0].proc.pid, a.profile, a.spread + 10)
            counts = wait_for_storm(urls, a.events, time.monotonic() + wait + a.timeout)
            if spy is not None:
                spy.wait(timeout=120)
            with httpx.Client(timeout=30) as client:  # the hanging one meanwhile
                counts.update(
                    {k: v for k, v in client.get(urls["healthy"] + "/count").json().items()}
                )
        if wait <= 0:
            raise SystemExit("the hosts started after the storm began: raise --lead")
        fired = db.call(
            lambda conn: conn.execute(
                select(func.min(plan_t.c.fired_at), func.max(plan_t.c.fired_at))
            ).one()
        )
    result = {
        "backend": "sqlite" if url.startswith("sqlite") else "postgresql",
        "hosts": a.hosts,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "events": a.events,
        "spread_s": a.spread,
        "healthy": figures(counts, start.timestamp()),
        # From the storm's first due instant to the last trigger's firing (its deliveries
        # queued): the last due instant is ``spread - 1`` seconds after the first.
        "fired_by_s": round((fired[1] - start).total_seconds(), 3),
    }
    h = result["healthy"]
    print(
        f"storm on {result['backend']}, {a.hosts} hosts: {a.events} triggers due over "
        f"{a.spread} s, to a healthy, a failing and a hanging receiver; the healthy one got "
        f"{h['deliveries']}: late p50 {h['late_p50_s']} s, p99 {h['late_p99_s']} s, max "
        f"{h['late_max_s']} s; the payload's late at most {h['payload_late_max_s']} s, short of "
        f"the lateness measured by at most {h['payload_late_short_by_max_s']} s; meanwhile "
        f"{h['during']['hanging_connections']} connections to the hanging one "
        f"({h['during']['hanging_open']} open at the end), {h['during']['failing']} requests "
        f"to the failing one; all fired {result['fired_by_s']} s after the first due instant "
        f"(load average {result['load_average'][0]:.1f})"
    )
    if a.json is not None:
        a.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
