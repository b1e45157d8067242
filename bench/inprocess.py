"""``python -m bench.inprocess``: the work per request, without sockets or a load generator.

Drives the ASGI app in this process with the benchmark's requests (list: random one-week
windows with the one-calendar read key; create: one-hour events with the write key), ours and
the hand-written minimum alike, on copies of the seeded databases (``bench/results/db``).

On its own it prints the CPU time per request (noisy on a shared machine). With
``--instructions`` it runs itself under ``valgrind --tool=callgrind`` twice per case, with no
measured requests and with ``--requests`` of them, and prints the difference per request:
instructions in user space, the same from one run to the next whatever else the machine is
doing (system calls are not counted), in all and by binary: how much of a request is SQLite's,
the interpreter's, each C extension's. Each run first serves ``--warmup`` requests unmeasured
(``WARMUP`` by default; more where caches take long to fill, as the series' do).
``--concurrency N`` keeps N requests in flight (as N clients would), so that ours groups their
commits as it does under load (``db.Database.run_grouped``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import uvloop

from bench import load, seed, servers

ROOT = Path(__file__).resolve().parents[1]
DB_DIR = ROOT / "bench" / "results" / "db"
WARMUP = 300

ASGIApp = Callable[..., Awaitable[None]]
Request = tuple[str, str, bytes, bytes | None]  # method, path, query string, body


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.inprocess", description=__doc__.split("\n")[0]
    )
    p.add_argument("--which", choices=("ours", "minimum", "both"), default="both")
    p.add_argument("--kind", choices=("list", "create", "both"), default="both")
    p.add_argument("--requests", type=int, default=1000, help="measured requests per case")
    p.add_argument("--events", type=int, default=100_000, help="events in the seeded database")
    p.add_argument(
        "--concurrency", type=int, default=1, help="requests in flight at a time (default 1)"
    )
    p.add_argument(
        "--series", type=int, default=0, help="weekly series beside the events (ours only)"
    )
    p.add_argument("--instructions", action="store_true", help="count instructions under callgrind")
    p.add_argument(
        "--warmup", type=int, default=WARMUP, help=f"unmeasured requests first ({WARMUP})"
    )
    p.add_argument(
        "--rounds", type=int, default=1, help="measure in rounds; print the best and the median"
    )
    p.add_argument(
        "--profile", metavar="FILE", help="write a cProfile of the measured requests to FILE"
    )
    return p.parse_args(argv)


def requests(work: load.Workload, n: int, seed_: int = 1) -> list[Request]:
    """``n`` requests as ``load`` sends them (the same windows and bodies)."""
    rnd = random.Random(seed_)
    out: list[Request] = []
    for i in range(n):
        start = load.EPOCH + timedelta(seconds=rnd.randint(0, load.STEPS) * 900)
        if work.body is None:
            path, _, query = (work.path % (_iso(start), _iso(start + load.WINDOW))).partition("?")
            out.append((work.method, path, query.encode(), None))
        else:
            body = work.body % (i, _iso(start), _iso(start + timedelta(hours=1)))
            out.append((work.method, work.path, b"", body.encode()))
    return out


def _iso(t: Any) -> str:
    return str(t.strftime("%Y-%m-%dT%H:%M:%SZ"))


async def drive(
    app: ASGIApp, batch: list[Request], token: str, concurrency: int = 1
) -> Counter[int]:
    """Serve ``batch`` through ``app``, ``concurrency`` requests at a time (as many clients
    each waiting for its answer before sending the next); the response statuses."""
    statuses: Counter[int] = Counter()
    pending = iter(batch)
    await asyncio.gather(*(_client(app, pending, token, statuses) for _ in range(concurrency)))
    return statuses


async def _client(
    app: ASGIApp, pending: Iterator[Request], token: str, statuses: Counter[int]
) -> None:
    for method, path, query, body in pending:
        headers = [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"user-agent", b"bench.inprocess"),
        ]
        if body is not None:
            headers += [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 80),
            "state": {},
        }
        received = False

        async def receive(body: bytes | None = body) -> dict[str, Any]:
            nonlocal received
            if received:  # the app asks again only to watch for a disconnect
                await asyncio.Event().wait()
            received = True
            return {"type": "http.request", "body": body or b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses[message["status"]] += 1

        await app(scope, receive, send)


async def _started(app: ASGIApp) -> asyncio.Task[None]:
    """Run the app's lifespan startup (ours has one); the task keeps it running."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    lifespan = asyncio.ensure_future(app(scope, inbox.get, outbox.put))
    message = await outbox.get()
    if message["type"] != "lifespan.startup.complete":
        raise SystemExit(f"startup failed: {message}")
    return lifespan


def _copy(src: Path, workdir: Path) -> Path:
    dst = workdir / src.name
    shutil.copyfile(src, dst)
    return dst


def build(
    which: str, kind: str, events: int, workdir: Path, series: int = 0
) -> tuple[ASGIApp, str, load.Workload]:
    """The app for ``which`` on a fresh copy of its seeded database (ours: with ``series``
    weekly series beside the events), its token and workload."""
    if which == "ours":
        pristine = DB_DIR / (f"ours-{events}-series-{series}.db" if series else f"ours-{events}.db")
        meta = seed.seed_ours(
            f"sqlite:///{pristine}",
            events,
            pristine.with_suffix(".json"),
            series=series,
            log=_stderr,
        )
        os.environ.update(
            CALENDAR_DATABASE_URL=f"sqlite:///{_copy(pristine, workdir)}",
            CALENDAR_RUN_WEBHOOKS="0",
            CALENDAR_RATE_LIMIT="1000000000/minute",  # the limiter still runs on every request
        )
        from calendar_service.cli.asgi_app import app_from_env

        token = meta.read_secret if kind == "list" else meta.write_secret
        return app_from_env(), token, load.Workload.ours(kind, token)
    pristine = seed.seed_reference(
        servers.REFERENCE / "seed_db.py",
        DB_DIR / f"minimum-{events}.sqlite",
        events,
        log=_stderr,
    )
    os.environ.update(BENCH_DB=str(_copy(pristine, workdir)), BENCH_SYNC="NORMAL")
    sys.path.insert(0, str(servers.REFERENCE))
    import minimal_app

    token = seed.REFERENCE_TOKEN
    return minimal_app.app, token, load.Workload.minimum(kind, token)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


def run_case(
    which: str,
    kind: str,
    n: int,
    events: int,
    concurrency: int = 1,
    *,
    series: int = 0,
    profile: str | None = None,
    rounds: int = 1,
    warmup: int = WARMUP,
) -> None:
    """Serve ``warmup`` + ``n`` requests in this process; print CPU per measured request (and,
    given ``profile``, write a cProfile of them there). With ``rounds`` > 1 the measured
    requests are served in that many rounds, and the best and the median round are printed:
    the best is the least disturbed by whatever else the machine runs."""
    with tempfile.TemporaryDirectory() as tmp:
        app, token, work = build(which, kind, events, Path(tmp), series)
        batch = requests(work, warmup + n)
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            lifespan = runner.run(_started(app)) if which == "ours" else None
            warm = runner.run(drive(app, batch[:warmup], token, concurrency))
            profiler = cProfile.Profile() if profile else None
            measured: Counter[int] = Counter()
            per_round: list[float] = []
            size = max(n // rounds, 1)
            if profiler is not None:
                profiler.enable()
            for first in range(warmup, warmup + n, size):
                cpu = time.process_time()
                measured += runner.run(drive(app, batch[first : first + size], token, concurrency))
                per_round.append((time.process_time() - cpu) / len(batch[first : first + size]))
            if profiler is not None:
                profiler.disable()
            if profiler is not None and profile:
                profiler.dump_stats(profile)
            if lifespan is not None:
                lifespan.cancel()
    statuses = warm + measured
    bad = {status: count for status, count in statuses.items() if status >= 300}
    if bad:
        raise SystemExit(f"{which} {kind}: unexpected statuses {bad}")
    if n and rounds > 1:
        best, median = min(per_round), statistics.median(per_round)
        print(
            f"{which:8s} {kind:6s} {1e6 * best:7.0f} us of CPU per request at best, "
            f"{1e6 * median:.0f} the median ({len(per_round)} rounds of {size} requests)"
        )
    elif n:
        print(
            f"{which:8s} {kind:6s} {1e6 * per_round[0]:7.0f} us of CPU per request ({n} requests)"
        )


def count_instructions(
    which: str,
    kind: str,
    n: int,
    events: int,
    concurrency: int = 1,
    series: int = 0,
    warmup: int = WARMUP,
) -> tuple[int, Counter[str]]:
    """User-space instructions per request: callgrind totals of ``n`` requests and of none,
    in all and by the binary they ran in (the interpreter, SQLite, each C extension)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    totals: list[int] = []
    objects: list[Counter[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in (0, n):
            out = Path(tmp) / f"callgrind-{count}.out"
            proc = subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    "-m",
                    "bench.inprocess",
                    f"--which={which}",
                    f"--kind={kind}",
                    f"--requests={count}",
                    f"--events={events}",
                    f"--concurrency={concurrency}",
                    f"--series={series}",
                    f"--warmup={warmup}",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            found = re.search(r"Collected : (\d+)", proc.stderr)
            if proc.returncode != 0 or found is None:
                raise SystemExit(f"callgrind run failed:\n{proc.stdout}{proc.stderr[-2000:]}")
            totals.append(int(found.group(1)))
            objects.append(_by_object(out))
    per_object = Counter({k: (objects[1][k] - objects[0][k]) // n for k in objects[1]})
    return (totals[1] - totals[0]) // n, per_object


def _by_object(callgrind_out: Path) -> Counter[str]:
    """Self instructions by binary (``callgrind_annotate`` lists each function's with its
    object file in brackets)."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(callgrind_out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: Counter[str] = Counter()
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) .*\[(.+)\]\s*$", line)
        if m:
            found[_object_name(m.group(2))] += int(m.group(1).replace(",", ""))
    return found


def _object_name(path: str) -> str:
    name = Path(path).name
    if name.startswith(("libsqlite3", "_sqlite3")):
        return "SQLite (libsqlite3 and the _sqlite3 module)"
    if name.startswith(("python3", "libpython3")):
        return "the Python interpreter"
    if name.startswith(("libc.so", "libc-", "ld-linux", "libm.so")):
        return "libc"
    return name.split(".")[0]


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    cases = [
        (which, kind)
        for which in (("ours", "minimum") if a.which == "both" else (a.which,))
        for kind in (("list", "create") if a.kind == "both" else (a.kind,))
    ]
    if not a.instructions:
        if len(cases) == 1:
            run_case(
                *cases[0],
                a.requests,
                a.events,
                a.concurrency,
                series=a.series if cases[0][0] == "ours" else 0,
                profile=a.profile,
                rounds=a.rounds,
                warmup=a.warmup,
            )
            return
        for which, kind in cases:  # one process each: the apps and their settings stay apart
            args = [f"--which={which}", f"--kind={kind}", f"--requests={a.requests}"]
            args += [f"--events={a.events}", f"--concurrency={a.concurrency}"]
            args += [f"--series={a.series if which == 'ours' else 0}", f"--rounds={a.rounds}"]
            args += [f"--warmup={a.warmup}"]
            subprocess.run([sys.executable, "-m", "bench.inprocess", *args], cwd=ROOT, check=True)
        return
    for which, kind in cases:
        series = a.series if which == "ours" else 0
        per_request, objects = count_instructions(
            which, kind, a.requests, a.events, a.concurrency, series, a.warmup
        )
        print(f"{which:8s} {kind:6s} {per_request:>12,} instructions per request", flush=True)
        for name, count in objects.most_common(6):
            print(f"{'':16s} {count:>12,} in {name}", flush=True)


if __name__ == "__main__":
    main()
