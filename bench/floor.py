"""``python -m bench.floor``: instructions per list and per create, and the guard on them.

The benchmark's requests (``bench.inprocess``'s: a one-week window with the one-calendar
read key; a one-hour event with the write key, its outbox row and its call-history row), driven
through our ASGI app in one process under ``valgrind --tool=callgrind``, on two shapes: the
bulk-seeded database (``bench.seed``: ``list`` and ``create``, a one-calendar write key) and
the database built through the API (``bench.api_seed``: ``create_api``, a create through the
all-calendars write key that built it, into the default calendar; ``create_api_one``, for
comparison and not guarded, the same through a write key of the default calendar alone;
``list_api``, not guarded, the list of the default calendar with a read key of it).
Callgrind collects only inside ``sys.call_tracing`` (``--toggle-collect``), which wraps the
measured requests alone, in this thread alone: the start-up, the seeding, the warm-up requests
and the WAL checkpointer's thread are not counted. Each kind is its own dump
(``--dump-after``). What is counted is user-space instructions, which other work on the
machine does not move; the run is made
repeatable by a fixed seed for the requests, ``PYTHONHASHSEED=0``, one request at a time, and a
warm-up that fills every cache and crosses a rate-limit lease (so that the measured requests
hold exactly one lease ahead per ``LEASE_EVERY`` of them).

``--check`` compares the counts with ``bench/budget.json`` and fails past ``tolerance`` (+5 %);
``make test`` (``scripts/test``) and ``make bench-guard`` run it: the bulk shape on a small
database (10,000 events), the API-built one at the benchmark's size (100,000 events; built
once in about two minutes and kept while the schema is unchanged), in about two minutes.
``--events 100000 --requests 300`` counts the bulk benchmark's own shape.

``--warmup K`` (analysis) measures after K requests into the same database: the growth curve
of a create (K against instructions). ``--concurrency N`` keeps N requests in flight, so that
their commits are grouped as under load (``db.Database.run_grouped``); the guard's are one at a
time.

``--inclusive MODULE:NAME[,...]`` (analysis) also counts the instructions spent inside Python
functions (or ``Class.method``, or an attribute of an object such as ``operations:LIST.run``;
name them where they are looked up at the call), up to five a run: each is called through a
C function of the standard library that nothing on the request path calls (``operator.call``,
``iter(f, sentinel)``, ``operator.methodcaller``, ``itertools.starmap``, ``functools.reduce``),
and callgrind's inclusive count of that C function is the Python function's, per request.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import itertools
import json
import operator
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / "bench" / "budget.json"
DB_DIR = ROOT / "bench" / "results" / "db"
GUARDED = ("list", "create", "create_api")  # the kinds bench/budget.json holds
# In the order they are measured on their database: a list before the creates that add to its
# calendar.
KINDS = ("list", "create", "list_api", "create_api", "create_api_one")
# Each kind's database (bulk: bench.seed; api: bench.api_seed) and the key it sends.
_SHAPE = {
    "list": "bulk",
    "create": "bulk",
    "list_api": "api",
    "create_api": "api",
    "create_api_one": "api",
}
_SECRET = {
    "list": "read_secret",
    "list_api": "read_secret",  # a read key of the default calendar (bench.api_seed)
    "create": "write_secret",  # one-calendar key (bench.seed)
    "create_api": "write_secret",  # all-calendars key (bench.api_seed)
    "create_api_one": "one_calendar_write_secret",
}
LEASE_EVERY = 100  # the bench's limiter leases 100 tokens at a time (1e9 a minute)
GUARD = {"events": 10_000, "api_events": 100_000, "warmup": 250, "requests": 100}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.split("\n")[0])
    p.add_argument(
        "--kind",
        default="both",
        help=f"comma-separated among {', '.join(KINDS)}; 'both' (the default): the guarded ones",
    )
    p.add_argument("--events", type=int, default=GUARD["events"])
    p.add_argument(
        "--api-events",
        type=int,
        default=GUARD["api_events"],
        help="events of the database built through the API (create_api, create_api_one)",
    )
    p.add_argument("--warmup", type=int, default=GUARD["warmup"])
    p.add_argument("--requests", type=int, default=GUARD["requests"])
    p.add_argument(
        "--concurrency", type=int, default=1, help="requests in flight at a time (default 1)"
    )
    p.add_argument(
        "--check", action="store_true", help=f"compare with {BUDGET.name}; exit 1 past it"
    )
    p.add_argument("--budget", type=Path, default=BUDGET)
    p.add_argument(
        "--inclusive", metavar="MODULE:NAME[,...]", help="also count these functions' shares"
    )
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.add_argument("--keep", type=Path, help="keep callgrind's files there (callgrind_annotate)")
    p.add_argument("--inside", type=Path, help=argparse.SUPPRESS)  # the run under valgrind
    a = p.parse_args(argv)
    a.kinds = GUARDED if a.kind == "both" else tuple(k.strip() for k in a.kind.split(","))
    unknown = set(a.kinds) - set(KINDS)
    if unknown:
        p.error(f"--kind: unknown {', '.join(sorted(unknown))}; choose among {', '.join(KINDS)}")
    return a


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    if a.inside is not None:
        _serve_measured(a)
        return
    if a.inclusive and len(a.inclusive.split(",")) > len(_TRAMPOLINES):
        raise SystemExit(f"--inclusive: at most {len(_TRAMPOLINES)} functions a run")
    if a.check:
        budget = json.loads(a.budget.read_text())
        shape = budget["shape"]
        a.events, a.warmup, a.requests = shape["events"], shape["warmup"], shape["requests"]
        a.api_events = shape["api_events"]
        a.kinds, a.concurrency = GUARDED, 1
    counts = count(
        kinds=a.kinds,
        events=a.events,
        api_events=a.api_events,
        warmup=a.warmup,
        requests=a.requests,
        inclusive=a.inclusive,
        keep=a.keep,
        concurrency=a.concurrency,
    )
    if a.json:
        print(json.dumps(counts, indent=1))
    for kind, found in counts.items():
        print(f"{kind:14s} {found['instructions']:>11,} instructions per request", flush=True)
        for spec, inside in found.get("inclusive", {}).items():
            print(f"{'':14s} {inside:>11,} of them in {spec}", flush=True)
    if a.check:
        problems, notes = compare(counts, budget)
        if budget.get("environment") not in (None, environment()):
            notes.append(
                f"the budget was counted with {budget['environment']}, this is {environment()}:"
                " counts differ with the interpreter's and SQLite's builds"
            )
        for note in notes:
            print(note)
        if problems:
            for problem in problems:
                print(problem, file=sys.stderr)
            raise SystemExit(1)


def compare(counts: dict[str, Any], budget: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Failures (a kind past its budget by more than the tolerance) and notes (within it; or
    so far under it that the budget should be lowered)."""
    tolerance = float(budget.get("tolerance", 0.05))
    problems: list[str] = []
    notes: list[str] = []
    for kind, allowed in budget["kinds"].items():
        if kind not in counts:
            problems.append(f"{kind}: not measured")
            continue
        found = counts[kind]["instructions"]
        limit = allowed["instructions"]
        change = found / limit - 1.0
        what = f"{kind}: {found:,} instructions per request, budget {limit:,} ({change:+.1%})"
        if change > tolerance:
            problems.append(
                f"OVER BUDGET {what}, more than {tolerance:.0%} over. Find what costs it "
                "(python -m bench.floor --inclusive MODULE:NAME, docs/performance.md); raise "
                f"{BUDGET.name} only with a note saying what bought the cost."
            )
        elif change < -tolerance:
            notes.append(f"{what}: under budget; lower it in {BUDGET.name} to keep the gain")
        else:
            notes.append(f"{what}: within {tolerance:.0%}")
    return problems, notes


def count(
    *,
    kinds: tuple[str, ...],
    events: int,
    warmup: int,
    requests: int,
    api_events: int = GUARD["api_events"],
    inclusive: str | None = None,
    keep: Path | None = None,
    concurrency: int = 1,
) -> dict[str, dict[str, Any]]:
    """Instructions per request by kind (and, given ``inclusive``, those inside it), from one
    run of this module under callgrind per database shape."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    found: dict[str, dict[str, Any]] = {}
    for shape in ("bulk", "api"):
        these = tuple(k for k in KINDS if k in kinds and _SHAPE[k] == shape)
        if these:
            meta = _seeded(events) if shape == "bulk" else _built(api_events)
            kept = None if keep is None else keep / shape
            found.update(_count(these, meta, warmup, requests, inclusive, kept, concurrency))
    return {kind: found[kind] for kind in kinds}


def _count(
    kinds: tuple[str, ...],
    meta: Path,
    warmup: int,
    requests: int,
    inclusive: str | None,
    keep: Path | None,
    concurrency: int = 1,
) -> dict[str, dict[str, Any]]:
    """``count`` on one database (``meta``): one run under callgrind, a dump per kind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            *callgrind(out, "bench.floor"),
            f"--inside={meta}",
            f"--warmup={warmup}",
            f"--requests={requests}",
            f"--kind={','.join(kinds)}",
            f"--concurrency={concurrency}",
        ]
        if inclusive:
            cmd.append(f"--inclusive={inclusive}")
        env = {**os.environ, "PYTHONHASHSEED": "0", "CALENDAR_FLOOR_DIR": tmp}
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for dump in Path(tmp).glob("callgrind.out*"):
                shutil.copy(dump, keep / dump.name)
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        if proc.returncode != 0 or len(dumps) < len(kinds):
            raise SystemExit(f"callgrind run failed:\n{proc.stdout}{proc.stderr[-3000:]}")
        found: dict[str, dict[str, Any]] = {}
        for kind, dump in zip(kinds, dumps, strict=False):
            found[kind] = {"instructions": _total(dump) // requests}
            if inclusive:
                inside = _inclusive(dump)
                found[kind]["inclusive"] = {
                    spec: inside.get(through, 0) // requests
                    for spec, (through, _) in zip(inclusive.split(","), _TRAMPOLINES, strict=False)
                }
    return found


def callgrind(out: Path, module: str) -> list[str]:
    """The command line that runs ``module`` under callgrind, counting only inside
    ``sys.call_tracing`` (a dump each time it returns, ``out.N``), instrumentation off until
    ``_instrumentation("on")``."""
    return [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        "--instr-atstart=no",
        "--collect-atstart=no",
        "--toggle-collect=sys_call_tracing",
        "--dump-after=sys_call_tracing",
        "--dump-instr=no",
        sys.executable,
        "-m",
        module,
    ]


def _seeded(events: int) -> Path:
    """The seeded database's metadata file (seeding it first, natively, if needed)."""
    from bench import seed

    pristine = DB_DIR / f"ours-{events}.db"
    meta = pristine.with_suffix(".json")
    seed.seed_ours(f"sqlite:///{pristine}", events, meta, log=_stderr)
    return meta


def _built(events: int) -> Path:
    """The metadata file of the database built through the API (building it first if needed)."""
    from bench import api_seed

    api_seed.seeded(events, log=_stderr)
    return api_seed.pristine(events).with_suffix(".json")


def _total(dump: Path) -> int:
    for line in dump.read_text().splitlines():  # (its "summary:" is wrong once the
        if line.startswith("totals:"):  # instrumentation was switched off and on)
            return int(line.split()[1])
    raise SystemExit(f"no totals in {dump}")


def _inclusive(dump: Path) -> dict[str, int]:
    """Inclusive instructions of the trampolines' C functions."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {through for through, _ in _TRAMPOLINES}
    found: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) .*?(\S+) \[", line)
        if m and m.group(2).split(":")[-1] in names:
            found[m.group(2).split(":")[-1]] = int(m.group(1).replace(",", ""))
    return found


def _stderr(text: str) -> None:
    print(text, file=sys.stderr)


# -- the run under valgrind ---------------------------------------------------------------


def _serve_measured(a: argparse.Namespace) -> None:
    """Warm up and serve each kind's measured requests inside ``sys.call_tracing`` (the only
    code callgrind counts), in ``KINDS`` order (list first: creates then add to another
    calendar than the read key's)."""
    import uvloop

    from bench import inprocess, load, seed

    meta = seed.Seeded(**json.loads(a.inside.read_text()))
    work = Path(os.environ["CALENDAR_FLOOR_DIR"])
    db = work / "floor.db"
    shutil.copyfile(meta.url.split("///", 1)[1], db)
    os.environ.update(
        CALENDAR_DATABASE_URL=f"sqlite:///{db}",
        CALENDAR_RUN_WEBHOOKS="0",
        CALENDAR_RATE_LIMIT="1000000000/minute",  # the limiter runs, leasing 100 at a time
        CALENDAR_LOG_LEVEL="warning",
    )
    if a.inclusive:
        for spec, (_, trampoline) in zip(a.inclusive.split(","), _TRAMPOLINES, strict=False):
            _wrap(spec, trampoline)
    from calendar_service.cli.asgi_app import app_from_env

    app = app_from_env()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        lifespan = runner.run(inprocess._started(app))
        for kind in a.kinds:
            token = getattr(meta, _SECRET[kind])
            work = load.Workload.ours("list" if kind.startswith("list") else "create", token)
            batch = inprocess.requests(work, a.warmup + a.requests)
            statuses = runner.run(inprocess.drive(app, batch[: a.warmup], token, a.concurrency))
            _instrumentation("on")
            measured = inprocess.drive(app, batch[a.warmup :], token, a.concurrency)
            statuses += sys.call_tracing(runner.run, (measured,))
            _instrumentation("off")
            bad = {status: n for status, n in statuses.items() if status >= 300}
            if bad:
                raise SystemExit(f"{kind}: unexpected statuses {bad}")
        lifespan.cancel()


def _instrumentation(state: str) -> None:
    """Switch callgrind's instrumentation ``on`` or ``off`` (started off: the start-up and the
    warm-up run several times faster uninstrumented). ``callgrind_control`` asks through
    ``vgdb``, which valgrind polls while this process runs code: it spins until the answer."""
    proc = subprocess.Popen(
        ["callgrind_control", "-i", state, str(os.getpid())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while proc.poll() is None:
        pass
    if proc.returncode != 0:
        raise SystemExit(f"callgrind_control -i {state} failed ({proc.returncode})")


_END = object()
_CALL_IT = operator.methodcaller("__call__")

# (the C function callgrind sees, a way to call a thunk through it); none of them is called on
# the request path otherwise (checked: their inclusive counts are 0 without --inclusive).
_TRAMPOLINES: tuple[tuple[str, Callable[[Callable[[], Any]], Any]], ...] = (
    ("_operator_call", operator.call),
    ("calliter_iternext", lambda thunk: next(iter(lambda: (thunk(),), _END))[0]),
    ("methodcaller_call", _CALL_IT),
    ("starmap_next", lambda thunk: next(itertools.starmap(thunk, ((),)))),
    ("functools_reduce", lambda thunk: functools.reduce(lambda _, __: thunk(), (None,), None)),
)


def _wrap(spec: str, trampoline: Callable[[Callable[[], Any]], Any]) -> None:
    """Route calls of ``module:name`` (``module:Class.method``, ``module:object.attribute``)
    through ``trampoline``."""
    module_name, _, path = spec.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    original: Callable[..., Any] = getattr(owner, name)

    @functools.wraps(original)
    def through(*args: Any, **kwargs: Any) -> Any:
        return trampoline(lambda: original(*args, **kwargs))

    if isinstance(owner, type) or not hasattr(owner, "__dataclass_fields__"):
        setattr(owner, name, through)
    else:  # an operation (a frozen dataclass)
        object.__setattr__(owner, name, through)


def environment() -> dict[str, str]:
    """What the counts depend on beside our code."""
    return {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}


if __name__ == "__main__":
    main()
