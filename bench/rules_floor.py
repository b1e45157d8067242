"""``python -m bench.rules_floor``: instructions per request of ``bench.rules``' requests.

The two owners of ``bench.rules`` (Berlin; the full rule set, and none), each with an
all-calendars write key, served by our ASGI app in process under ``valgrind
--tool=callgrind`` as ``bench.floor`` counts (collected only inside ``sys.call_tracing``,
``PYTHONHASHSEED=0``, one request at a time): a warm-up of two 30-minute creates a weekday on
``REQUESTS`` weekdays from 2027-03-01 and ``REQUESTS`` findFreeTime calls for each owner, then,
measured, ``REQUESTS`` findFreeTime calls (a week, 30 minutes) and ``REQUESTS`` creates (a
third slot on those days) for each owner. Prints each kind's instructions per request and the
ratios the issue asks of them (docs/performance.md, "The owner's rules"). ``--inclusive``
as ``bench.floor``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

from bench import floor

REQUESTS = 40
ORDER = (
    ("findFreeTime", "with"),
    ("findFreeTime", "without"),
    ("create", "with"),
    ("create", "without"),
)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.rules_floor", description=__doc__.split("\n")[0]
    )
    p.add_argument("--inclusive", help="MODULE:NAME[,...] as bench.floor's")
    p.add_argument("--keep", type=Path, help="keep callgrind's files there")
    p.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.inside:
        _serve_measured(args.inclusive)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [*floor.callgrind(out, "bench.rules_floor"), "--inside"]
        if args.inclusive:
            cmd.append(f"--inclusive={args.inclusive}")
        env = {**os.environ, "PYTHONHASHSEED": "0", "CALENDAR_FLOOR_DIR": tmp}
        proc = subprocess.run(cmd, cwd=floor.ROOT, env=env, capture_output=True, text=True)
        dumps = sorted(Path(tmp).glob("callgrind.out.*"), key=lambda d: int(d.suffix[1:]))
        if proc.returncode or len(dumps) < len(ORDER):
            raise SystemExit(f"callgrind run failed:\n{proc.stdout}{proc.stderr[-3000:]}")
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for dump in dumps:
                shutil.copy(dump, args.keep / dump.name)
        counts = {}
        for (kind, who), dump in zip(ORDER, dumps, strict=False):
            counts[kind, who] = floor._total(dump) // REQUESTS
            line = f"{kind:13s} {who:8s} {counts[kind, who]:>12,}"
            if args.inclusive:
                inside = floor._inclusive(dump)
                for spec, (through, _) in zip(
                    args.inclusive.split(","), floor._TRAMPOLINES, strict=False
                ):
                    line += f"  {spec.split(':')[-1]}={inside.get(through, 0) // REQUESTS:,}"
            print(line)
        for kind, asked in (("create", 0.9), ("findFreeTime", 0.8)):
            ratio = counts[kind, "without"] / counts[kind, "with"]
            print(f"{kind}: {ratio:.3f} x (asked {asked})")


def _serve_measured(inclusive: str | None) -> None:
    import uvloop

    from bench import inprocess
    from bench.rules import _creates, _free_times, _weekdays, owners

    work = Path(os.environ["CALENDAR_FLOOR_DIR"])
    os.environ.update(
        CALENDAR_DATABASE_URL=f"sqlite:///{work / 'rules.db'}",
        CALENDAR_RUN_WEBHOOKS="0",
        CALENDAR_RATE_LIMIT="1000000000/minute",
        CALENDAR_LOG_LEVEL="warning",
    )
    if inclusive:
        for spec, (_, trampoline) in zip(inclusive.split(","), floor._TRAMPOLINES, strict=False):
            floor._wrap(spec, trampoline)
    from calendar_service.cli.asgi_app import app_from_env

    secrets = owners()
    days = _weekdays(date(2027, 3, 1), REQUESTS)  # fixed days: the same answers each run
    warm = [*_creates(days, 0), *_creates(days, 1), *_free_times(days, REQUESTS)]
    batches = {"create": _creates(days, 2), "findFreeTime": _free_times(days, REQUESTS)}
    app = app_from_env()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        lifespan = runner.run(inprocess._started(app))
        statuses = sum(
            (runner.run(inprocess.drive(app, warm, secrets[name])) for name in secrets),
            start=Counter(),
        )
        for kind, who in ORDER:
            floor._instrumentation("on")
            measured = inprocess.drive(app, batches[kind], secrets[who])
            statuses += sys.call_tracing(runner.run, (measured,))
            floor._instrumentation("off")
        lifespan.cancel()
    bad = {status: n for status, n in statuses.items() if status >= 300}
    if bad:
        raise SystemExit(f"unexpected statuses {bad}")


if __name__ == "__main__":
    main()
