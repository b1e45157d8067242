"""``python -m bench.caldav``: a one-week CalDAV ``calendar-query`` REPORT against our REST
list for the same window, and against Radicale fed the same events, on one machine, in one run.

For each size (``--sizes``, default 10,000 events, the reference shape: calendars of 5,000
events over 100 weeks; ``--series``: weekly series beside them), one calendar is read:

- ``rest``: ``GET /api/v1/calendar/events?timeMin&timeMax`` with a one-calendar read key;
- ``caldav``: ``REPORT calendar-query`` (``getetag`` and ``calendar-data``) on that calendar,
  signed in with an app password of the same reach;
- ``radicale``: the same REPORT on Radicale (``pip install radicale``), its filesystem
  storage fed one ``.ics`` per event, written by our own ``GET`` of each object.

Each is loaded for ``--duration`` seconds by ``--connections`` closed-loop clients (httpx),
random one-week windows, after a warm-up; req/s and p50/p99 are printed and written to
``bench/results/caldav-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bench import servers
from bench.load import now_stamp
from bench.seed import EPOCH, OWNER_EMAIL, WEEKS, seed_ours

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
WINDOW = timedelta(days=7)
QUERY = (
    '<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" '
    'xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/><c:calendar-data/></d:prop>'
    '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">'
    '<c:time-range start="%s" end="%s"/></c:comp-filter></c:comp-filter></c:filter>'
    "</c:calendar-query>"
)


def _window(rnd: random.Random) -> tuple[Any, Any]:
    start = EPOCH + timedelta(days=rnd.randrange(0, (WEEKS - 1) * 7))
    return start, start + WINDOW


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _measure(
    url: str, make: Any, server: Any, *, duration: float, connections: int, warmup: float
) -> dict[str, float]:
    """``_load``, with the server's CPU time per request (its process group's, which other
    work on the machine disturbs far less than req/s) and the machine's load average."""
    cpu0 = servers.cpu_seconds(server)
    found = asyncio.run(_load(url, make, duration=duration, connections=connections, warmup=warmup))
    cpu = servers.cpu_seconds(server) - cpu0
    # CPU per measured request (the warm-up's requests are counted in the CPU too: a bound
    # from above, by at most warmup / (warmup + duration)).
    found["cpu_us_per_req"] = round(cpu / found["total"] * 1e6) if found["total"] else 0
    found["load"] = round(os.getloadavg()[0], 2)
    return found


async def _load(
    url: str, make: Any, *, duration: float, connections: int, warmup: float
) -> dict[str, float]:
    """Closed-loop load: ``connections`` clients, each sending ``make(rnd)`` requests
    (method, path, headers, body) one after another; latencies of the measured part."""
    latencies: list[float] = []
    errors = 0
    total = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

        async def worker(seed: int, until: float, keep: bool) -> None:
            nonlocal errors, total
            rnd = random.Random(seed)
            while time.perf_counter() < until:
                method, path, headers, body = make(rnd)
                t0 = time.perf_counter()
                answer = await client.request(method, path, headers=headers, content=body)
                spent = time.perf_counter() - t0
                total += 1
                if answer.status_code >= 300:
                    errors += 1
                if keep:
                    latencies.append(spent)

        end = time.perf_counter() + warmup
        await asyncio.gather(*(worker(i, end, False) for i in range(connections)))
        t0 = time.perf_counter()
        end = t0 + duration
        await asyncio.gather(*(worker(1000 + i, end, True) for i in range(connections)))
        seconds = time.perf_counter() - t0
    latencies.sort()

    def pct(p: float) -> float:
        return (
            latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else 0.0
        )

    return {
        "requests": len(latencies),
        "rps": round(len(latencies) / seconds, 1),
        "p50_ms": round(pct(0.50), 2),
        "p99_ms": round(pct(0.99), 2),
        "errors": errors,
        "total": total,
    }


def _app_password(url: str, calendar_id: str) -> str:
    """A read app password reaching ``calendar_id`` of the bench owner."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from calendar_service.access import keys
    from calendar_service.platform.config import Config
    from calendar_service.platform.db import Database
    from calendar_service.platform.models.calendars import calendars_t

    db = Database(Config(database_url=url))
    try:
        with db.engine.begin() as conn:
            user_id = conn.execute(
                select(calendars_t.c.user_id).where(calendars_t.c.id == calendar_id)
            ).scalar_one()
            now = datetime.now(UTC)
            _, secret = keys.create_key(
                conn,
                user_id=user_id,
                name="bench caldav",
                permission="read",
                expires_at=now + timedelta(days=30),
                calendar_id=calendar_id,
                now=now,
                app_password=True,
            )
            return secret
    finally:
        db.close()


def _feed_radicale(folder: Path, base: str, user_id: str, calendar_id: str, auth: str) -> int:
    """Radicale's filesystem storage, one collection of one ``.ics`` per event, fetched from
    our own CalDAV (``GET`` of each object named by a depth-1 PROPFIND)."""
    collection = folder / "collection-root" / "bench" / "calendar"
    collection.mkdir(parents=True)
    (collection / ".Radicale.props").write_text(
        json.dumps({"tag": "VCALENDAR", "D:displayname": "bench"})
    )
    path = f"/caldav/calendars/{user_id}/{calendar_id}/"
    with httpx.Client(base_url=base, headers={"Authorization": auth}, timeout=600) as client:
        listed = client.request("PROPFIND", path, headers={"Depth": "1"})
        names = [
            h.split("/")[-1]
            for h in __import__("re").findall(r"<d:href>([^<]+\.ics)</d:href>", listed.text)
        ]
        for name in names:
            (collection / name).write_bytes(client.get(path + name).content)
    return len(names)


def _profile(server: Any, base: str, make: Any, args: Any) -> None:
    """py-spy on our server while it answers ``make``'s requests: its summary printed and
    written beside the raw samples (``bench/results/profile-caldav*.txt``)."""
    from bench.report import summarise_profile

    pyspy = Path(sys.executable).with_name("py-spy")
    if not pyspy.exists():
        raise SystemExit("py-spy is not installed: pip install py-spy")
    raw = RESULTS / f"profile-caldav-{args.series}.txt"
    asyncio.run(_load(base, make, duration=args.warmup, connections=args.connections, warmup=0))
    spy = subprocess.Popen(
        [
            str(pyspy), "record", "--pid", str(server.proc.pid), "--subprocesses", "--threads",
            "--format", "raw", "--rate", "250", "--duration", str(int(args.duration)),
            "-o", str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    found = _measure(
        base,
        make,
        server,
        duration=args.duration,
        connections=args.connections,
        warmup=0,
    )
    spy.wait(timeout=args.duration + 60)
    text = summarise_profile(raw)
    raw.with_name(raw.stem + "-summary.txt").write_text(text)
    print(f"profiled: {found}\n{text}", flush=True)


def _inprocess(
    url: str,
    seeded: Any,
    auth: str,
    requests: int,
    connections: int,
    kinds: tuple[str, ...] = ("rest", "caldav", "rest", "caldav"),
    measured: int | None = None,
) -> None:
    """The CPU time per request of the REST list and of the REPORT for the same windows,
    served by the ASGI app in this process (no sockets, no load generator in the way): each
    run after ``requests`` unmeasured, ``connections`` in flight at a time; ``measured``
    requests (as many as unmeasured by default)."""
    import sqlite3
    import tempfile

    import uvloop

    from bench.inprocess import _started

    with sqlite3.connect(url.removeprefix("sqlite:///")) as found:
        owner = found.execute(
            "SELECT user_id FROM calendars WHERE id = ?", (seeded.calendar_id,)
        ).fetchone()[0]
    with tempfile.TemporaryDirectory() as workdir:
        copy = Path(workdir) / "caldav.db"
        shutil.copyfile(url.removeprefix("sqlite:///"), copy)
        os.environ.update(
            CALENDAR_DATABASE_URL=f"sqlite:///{copy}",
            CALENDAR_RUN_WEBHOOKS="0",
            CALENDAR_RATE_LIMIT="1000000000/minute",
        )
        from calendar_service.cli.asgi_app import app_from_env

        app = app_from_env()

        async def run() -> None:
            lifespan = await _started(app)
            path = f"/caldav/calendars/{owner}/{seeded.calendar_id}/"
            for kind in kinds:
                rnd = random.Random(7)
                batch = []
                for _ in range(requests + (requests if measured is None else measured)):
                    low, high = _window(rnd)
                    if kind == "rest":
                        query = (
                            f"timeMin={low:%Y-%m-%dT%H:%M:%SZ}&timeMax={high:%Y-%m-%dT%H:%M:%SZ}"
                        )
                        headers = [(b"authorization", f"Bearer {seeded.read_secret}".encode())]
                        batch.append(
                            ("GET", "/api/v1/calendar/events", query.encode(), headers, b"")
                        )
                    else:
                        body = (
                            QUERY % (f"{low:%Y%m%dT%H%M%SZ}", f"{high:%Y%m%dT%H%M%SZ}")
                        ).encode()
                        headers = [
                            (b"authorization", auth.encode()),
                            (b"depth", b"1"),
                            (b"content-type", b"application/xml"),
                            (b"content-length", str(len(body)).encode()),
                        ]
                        batch.append(("REPORT", path, b"", headers, body))
                statuses: dict[int, int] = {}
                warm, measured_batch = batch[:requests], batch[requests:]
                await _drive(app, warm, statuses, connections)
                t0, c0 = time.perf_counter(), time.process_time()
                await _drive(app, measured_batch, statuses, connections)
                cpu, wall = time.process_time() - c0, time.perf_counter() - t0
                if set(statuses) - {200, 207}:
                    raise SystemExit(f"{kind}: answered {statuses}")
                if measured_batch:
                    print(
                        f"in process {kind:>6}: {cpu / len(measured_batch) * 1e6:7.0f} us CPU a "
                        f"request, {len(measured_batch) / wall:7.1f} req/s, statuses {statuses}",
                        flush=True,
                    )
            lifespan.cancel()

        uvloop.run(run())


def _instructions(args: Any, size: int) -> dict[str, int]:
    """User-space instructions per request (callgrind: a run of ``--inprocess`` warm-up
    requests and ``--measured`` more, less a run of the warm-up alone), of the REST list and
    of the REPORT: the same from one run to the next whatever else the machine is doing."""
    import re
    import tempfile

    found: dict[str, int] = {}
    for kind in ("rest", "caldav"):
        totals = []
        for measured in (0, args.measured):
            with tempfile.TemporaryDirectory() as tmp:
                proc = subprocess.run(
                    [
                        "valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
                        sys.executable, "-m", "bench.caldav", f"--sizes={size}",
                        f"--series={args.series}", f"--inprocess={args.inprocess}",
                        f"--kind={kind}", f"--measured={measured}",
                        f"--connections={args.connections}",
                    ],
                    cwd=ROOT, capture_output=True, text=True, check=False,
                )  # fmt: skip
            total = re.search(r"Collected : (\d+)", proc.stderr)
            if proc.returncode != 0 or total is None:
                raise SystemExit(f"callgrind run failed:\n{proc.stdout}{proc.stderr[-2000:]}")
            totals.append(int(total.group(1)))
        found[kind] = (totals[1] - totals[0]) // args.measured
        print(f"{size:>8,} {kind:>9}: {found[kind]:,} instructions a request", flush=True)
    return found


async def _drive(app: Any, batch: list[Any], statuses: dict[int, int], connections: int) -> None:
    pending = iter(batch)

    async def client() -> None:
        for method, path, query, headers, body in pending:
            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
                "query_string": query, "root_path": "",
                "headers": [(b"host", b"127.0.0.1"), *headers],
                "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 80), "state": {},
            }  # fmt: skip
            received = False

            async def receive(body: bytes = body) -> dict[str, Any]:
                nonlocal received
                if received:
                    await asyncio.Event().wait()
                received = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    statuses[message["status"]] = statuses.get(message["status"], 0) + 1

            await app(scope, receive, send)

    await asyncio.gather(*(client() for _ in range(connections)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.caldav", description=__doc__)
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--series", type=int, default=0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--no-radicale", action="store_true")
    parser.add_argument(
        "--warm", action="store_true", help="also: after every object's text is rendered once"
    )
    parser.add_argument(
        "--inprocess",
        type=int,
        default=0,
        metavar="N",
        help="only: the CPU time per request of N REST lists and N REPORTs served in process",
    )
    parser.add_argument("--kind", choices=("rest", "caldav"), help="with --inprocess: one only")
    parser.add_argument(
        "--measured", type=int, default=None, help="with --inprocess: measured requests"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --inprocess N: instructions a request, under callgrind (--measured M)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="only sample our server with py-spy while it answers the REPORTs (no figures)",
    )
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    logs = RESULTS / "logs"
    found: dict[str, Any] = {"sizes": {}}
    for size in [int(s) for s in args.sizes.split(",") if s]:
        db_path = RESULTS / "db" / f"caldav-{size}-{args.series}.db"
        db_path.parent.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{db_path}"
        seeded = seed_ours(url, size, db_path.with_suffix(".json"), series=args.series)
        secret = _app_password(url, seeded.calendar_id)
        auth = _basic(OWNER_EMAIL, secret)
        if args.inprocess and args.instructions:
            found["sizes"][str(size)] = {"instructions": _instructions(args, size)}
            continue
        if args.inprocess:
            kinds = (args.kind,) if args.kind else ("rest", "caldav", "rest", "caldav")
            _inprocess(url, seeded, auth, args.inprocess, args.connections, kinds, args.measured)
            continue
        figures: dict[str, Any] = {}
        with servers.ours(url, log_dir=logs) as server:
            base = f"http://{servers.HOST}:{server.port}"
            user_id = (
                httpx.request(
                    "PROPFIND",
                    base + "/caldav/",
                    headers={"Authorization": auth, "Depth": "0"},
                )
                .text.split("/caldav/principals/")[1]
                .split("/")[0]
            )
            path = f"/caldav/calendars/{user_id}/{seeded.calendar_id}/"

            def rest(
                rnd: random.Random, key: str = seeded.read_secret
            ) -> tuple[str, str, dict[str, str], None]:
                low, high = _window(rnd)
                query = f"timeMin={low:%Y-%m-%dT%H:%M:%SZ}&timeMax={high:%Y-%m-%dT%H:%M:%SZ}"
                headers = {"Authorization": f"Bearer {key}"}
                return "GET", f"/api/v1/calendar/events?{query}", headers, None

            def report(
                rnd: random.Random, auth: str = auth, path: str = path
            ) -> tuple[str, str, dict[str, str], bytes]:
                low, high = _window(rnd)
                body = QUERY % (f"{low:%Y%m%dT%H%M%SZ}", f"{high:%Y%m%dT%H%M%SZ}")
                headers = {"Authorization": auth, "Depth": "1", "Content-Type": "application/xml"}
                return "REPORT", path, headers, body.encode()

            runs: list[tuple[str, Any]] = [("rest", rest), ("caldav", report)]
            if args.warm:  # every object's text rendered once (each is, once per version)
                whole = QUERY % (f"{EPOCH:%Y%m%dT%H%M%SZ}", "21000101T000000Z")
                headers = {"Authorization": auth, "Depth": "1", "Content-Type": "application/xml"}
                t0 = time.perf_counter()
                httpx.request("REPORT", base + path, headers=headers, content=whole, timeout=600)
                print(f"warmed in {time.perf_counter() - t0:.1f}s", flush=True)
                runs.append(("caldav-warm", report))
            if args.profile:
                _profile(server, base, report, args)
                runs = []
            for name, make in runs:
                figures[name] = _measure(
                    base,
                    make,
                    server,
                    duration=args.duration,
                    connections=args.connections,
                    warmup=args.warmup,
                )
                print(f"{size:>8,} {name:>9}: {figures[name]}", flush=True)
            radicale = None
            if not args.no_radicale and not args.profile:
                if importlib.util.find_spec("radicale") is None:
                    print("radicale not installed (pip install radicale): skipped", flush=True)
                else:
                    radicale = "radicale"
            if radicale is not None:
                folder = RESULTS / f"radicale-{size}-{args.series}"
                shutil.rmtree(folder, ignore_errors=True)
                count = _feed_radicale(folder, base, user_id, seeded.calendar_id, auth)
                print(f"radicale fed {count:,} objects", flush=True)
        if radicale is not None:
            port = servers.free_port()
            cmd = [
                sys.executable, "-m", "radicale",
                "--server-hosts", f"{servers.HOST}:{port}",
                "--auth-type", "none",
                "--rights-type", "owner_only",
                "--storage-filesystem-folder", str(folder),
                "--logging-level", "warning",
            ]  # fmt: skip
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, which servers.stop ends
            )
            try:
                rbase = f"http://{servers.HOST}:{port}"
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        httpx.get(rbase + "/", timeout=2)
                        break
                    except httpx.HTTPError:
                        time.sleep(0.2)

                def rreport(rnd: random.Random) -> tuple[str, str, dict[str, str], bytes]:
                    low, high = _window(rnd)
                    body = QUERY % (f"{low:%Y%m%dT%H%M%SZ}", f"{high:%Y%m%dT%H%M%SZ}")
                    headers = {"Authorization": _basic("bench", "x"), "Depth": "1",
                               "Content-Type": "application/xml"}  # fmt: skip
                    return "REPORT", "/bench/calendar/", headers, body.encode()

                figures["radicale"] = _measure(
                    rbase,
                    rreport,
                    servers.Server("radicale", port, proc, folder),
                    duration=args.duration,
                    connections=args.connections,
                    warmup=args.warmup,
                )
                print(f"{size:>8,} {'radicale':>9}: {figures['radicale']}", flush=True)
            finally:
                servers.stop(proc)
        found["sizes"][str(size)] = figures
    out = RESULTS / f"caldav-{now_stamp()}.json"
    out.write_text(json.dumps({**found, "series": args.series, "args": vars(args)}, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
