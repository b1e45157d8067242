"""``python -m bench`` (``make bench``): our service side by side with the hand-written minimum.

1. Seeds our database with the reference shape (20 calendars x 5,000 events over 100 weeks) and
   the minimum's own database (its ``seed_db.py``); both are cached in ``bench/results/db`` and
   copied afresh for each run.
2. Serves both (our ``calendar-service serve``, the minimum under uvicorn with uvloop and
   httptools, one worker each) and alternates them, round by round, under the same bounded load
   (wrk -t2 -c32 where installed, else the bundled asyncio generator): list with a one-calendar
   read key and random one-week windows, then create. Prints req/s, p50, p99 and the ratio of
   each round, and the median ratio. ``asrun``: create as people run it, through an
   all-calendars write key into the default calendar, on a database built through the API
   (``bench/api_seed.py``: every create's call history, change, sync entry, idempotency
   record, search words and delivery), and the list of that database.
3. The rest of the picture: list at 10k, 100k and 1M events; PostgreSQL with one and with two
   server processes; webhooks (``bench/webhooks.py``) when present; the list with weekly series
   beside the events; search (``q``, two words, a one-year window) beside the one-week list,
   on SQLite and PostgreSQL (``search``); ``findFreeTime`` over a one-week window
   (``freetime``, ours alone: the minimum has no such operation) beside the list on the same
   database; the list with the rate budget shared through the database against one kept in
   memory (``ratelimit``).

Raw results go to ``bench/results/`` (git-ignored); the chart to ``docs/performance.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import api_seed, hostile, load, report, seed, servers

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DEFAULT_PG = "postgresql+psycopg://root@127.0.0.1:5432/calendar_bench"
# The modes phase: the variants of ours (bench/variants.py) beside ours as served ("group").
VARIANTS = {"per_request": "per_request_commit_app", "thread": "threaded_app"}
# The ratelimit phase: the budget leased from the database against one kept in memory.
LOCAL_LIMITER = "bench.variants:local_limiter_app"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=100_000, help="events for list/create rounds")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds per workload")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per load run")
    p.add_argument("--max-requests", type=int, default=200_000, help="bound per load run")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of unmeasured load first")
    p.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    p.add_argument("--scale-sizes", default="10000,100000,1000000", help="'' to skip")
    p.add_argument("--scale-rounds", type=int, default=2)
    p.add_argument("--postgres-url", default=os.environ.get("CALENDAR_BENCH_POSTGRES_URL"))
    p.add_argument("--skip-postgres", action="store_true")
    p.add_argument("--pg-rounds", type=int, default=3)
    p.add_argument("--skip-webhooks", action="store_true")
    p.add_argument("--series", type=int, default=1000, help="weekly series, series phase")
    p.add_argument(
        "--only",
        default="main,asrun,series,search,freetime,scale,modes,ratelimit,postgres,webhooks,hostile",
        help="phases to run",
    )
    p.add_argument("--out", type=Path, default=RESULTS, help="where raw results go")
    p.add_argument("--chart", type=Path, default=None, help="PNG path (default docs/...)")
    p.add_argument(
        "--profile",
        choices=("list", "create"),
        default=None,
        help="only profile our server under that load with py-spy",
    )
    p.add_argument(
        "--ours-tree",
        type=Path,
        default=None,
        help="serve ours from another checkout (e.g. a git worktree of an older commit)",
    )
    p.add_argument(
        "--before-tree",
        type=Path,
        default=None,
        help="phase 'before': ours against ours served from this checkout (an older commit)",
    )
    p.add_argument(
        "--profile-postgres", action="store_true", help="profile on PostgreSQL, not SQLite"
    )
    p.add_argument(
        "--profile-series",
        action="store_true",
        help="profile on the series phase's database (--series weekly series beside the events)",
    )
    p.add_argument(
        "--tiny",
        action="store_true",
        help="a smoke run in seconds: 10k events, one short round, list and create",
    )
    args = p.parse_args(argv)
    if args.tiny:
        args.events = 10_000
        args.rounds = 1
        args.duration = 1.0
        args.max_requests = 200
        args.connections = 8
        args.warmup = 0.0
        args.scale_sizes = ""
        args.scale_rounds = 1
        args.skip_postgres = args.postgres_url is None
        args.pg_rounds = 1
        args.skip_webhooks = True
        args.series = 20
    if args.events < 10_000:
        p.error("--events must be at least 10000 (two calendars: one read, one written)")
    return args


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out.resolve()
        self.dbdir = self.out / "db"  # the seeded databases are cached across runs
        self.work = self.out / "work"
        self.logs = self.out / "logs"
        for d in (self.out, self.dbdir, self.work, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        self.tool = (
            args.loadgen if args.loadgen != "auto" else ("wrk" if load.have_wrk() else "python")
        )
        self.raw: list[dict[str, Any]] = []

    def log(self, text: str = "") -> None:
        print(text, flush=True)

    # --- databases ----------------------------------------------------------------------------

    def ours_sqlite(self, rows: int, series: int = 0, *, tree: Path | None = None) -> seed.Seeded:
        """A fresh working copy of our seeded SQLite database with ``rows`` events (and
        ``series`` weekly series); with ``tree``, seeded by that checkout's own code (the
        schema an older commit knows)."""
        name = f"ours-{rows}" + (f"-series-{series}" if series else "")
        if tree is not None:
            name = f"tree-{_commit(tree)}-{name}"
        pristine = self.dbdir / f"{name}.db"
        if tree is not None:
            meta = seed.seed_in_tree(
                tree,
                f"sqlite:///{pristine}",
                rows,
                pristine.with_suffix(".json"),
                series=series,
                log=self.log,
            )
        else:
            meta = seed.seed_ours(
                f"sqlite:///{pristine}",
                rows,
                pristine.with_suffix(".json"),
                series=series,
                log=self.log,
            )
        work = self.work / f"{name}.db"
        _copy_sqlite(pristine, work)
        return seed.Seeded(**{**meta.__dict__, "url": f"sqlite:///{work}"})

    def minimum_db(self, rows: int) -> Path:
        pristine = seed.seed_reference(
            servers.REFERENCE / "seed_db.py",
            self.dbdir / f"minimum-{rows}.sqlite",
            rows,
            log=self.log,
        )
        work = self.work / f"minimum-{rows}.sqlite"
        _copy_sqlite(pristine, work)
        return work

    def ours_postgres(self, url: str, rows: int, series: int = 0) -> seed.Seeded:
        """Seed (cached) ``<db>`` and run on a fresh copy ``<db>_run`` (CREATE ... TEMPLATE);
        with ``series`` weekly series, in ``<db>_series`` (so that each shape stays cached)."""
        if series:
            url = f"{url}_series"
        meta_path = self.dbdir / (f"postgres-{rows}" + (f"-series-{series}" if series else ""))
        meta = seed.seed_ours(
            url, rows, meta_path.with_suffix(".json"), series=series, log=self.log
        )
        from sqlalchemy import create_engine, text

        base, name = url.rsplit("/", 1)
        run_name = f"{name}_run"
        admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{run_name}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{run_name}" TEMPLATE "{name}"'))
        admin.dispose()
        return seed.Seeded(**{**meta.__dict__, "url": f"{base}/{run_name}"})

    # --- load ---------------------------------------------------------------------------------

    def measure(
        self, server: servers.Server, work: load.Workload, label: str, **meta: Any
    ) -> dict[str, Any]:
        a = self.args
        (user0, sys0), (reads0, writes0) = servers.cpu_split(server), servers.io_calls(server)
        busy0, total0 = servers.machine_ticks()
        result = load.run(
            server.url,
            work,
            duration=a.duration,
            max_requests=a.max_requests,
            connections=a.connections,
            threads=a.threads,
            tool=self.tool,
        )
        row = {
            "label": label,
            "target": server.name,
            "kind": work.kind,
            **meta,
            **load.result_dict(result),
        }
        (user1, sys1), (reads1, writes1) = servers.cpu_split(server), servers.io_calls(server)
        n = max(1, result.requests)
        row["cpu_us_per_req"] = round((user1 - user0 + sys1 - sys0) / n * 1e6)
        # The same apart: user space (what bench.floor counts) and the kernel's share, and
        # the read and write calls per request (the database's and its WAL's pages).
        row["cpu_user_us_per_req"] = round((user1 - user0) / n * 1e6)
        row["cpu_sys_us_per_req"] = round((sys1 - sys0) / n * 1e6)
        row["reads_per_req"] = round((reads1 - reads0) / n, 2)
        row["writes_per_req"] = round((writes1 - writes0) / n, 2)
        busy1, total1 = servers.machine_ticks()
        # how busy the whole machine was (every core, every process: load, databases, others)
        row["machine_busy_pct"] = round(100 * (busy1 - busy0) / max(1, total1 - total0))
        self.raw.append(row)
        self.log(report.line(label, row))
        return row

    def warm(self, server: servers.Server, work: load.Workload) -> None:
        if self.args.warmup > 0:
            load.run(
                server.url,
                work,
                duration=self.args.warmup,
                max_requests=10**9,
                connections=self.args.connections,
                threads=self.args.threads,
                tool=self.tool,
            )

    def alternated(
        self,
        legs: list[tuple[str, str, servers.Server, load.Workload]],
        rounds: int,
        *,
        heading: str = "",
        **meta: Any,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every leg (its name, its label, its server, its workload) warmed, then ``rounds``
        rounds of them all, the order flipped every round (``heading``, with ``{r}``: a line
        before each); each leg's runs, by its name."""
        for _, _, srv, work in legs:
            self.warm(srv, work)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name, *_ in legs}
        for r in range(1, rounds + 1):
            if heading:
                self.log(heading.format(r=r))
            for name, label, srv, work in legs if r % 2 else legs[::-1]:
                runs[name].append(self.measure(srv, work, label, round=r, **meta))
        return runs

    @contextlib.contextmanager
    def side_by_side(
        self, rows: int
    ) -> Iterator[tuple[seed.Seeded, servers.Server, servers.Server]]:
        """Ours and the minimum served at once, each on a fresh copy of its database with
        ``rows`` events: (our database, our server, the minimum's server)."""
        ours_db = self.ours_sqlite(rows, tree=self.args.ours_tree)
        base_db = self.minimum_db(rows)
        with (
            servers.ours(ours_db.url, log_dir=self.logs, tree=self.args.ours_tree) as o,
            servers.reference(base_db, log_dir=self.logs) as b,
        ):
            yield ours_db, o, b

    def alternate(
        self,
        kind: str,
        ours_srv: servers.Server,
        ours_token: str,
        base_srv: servers.Server,
        rounds: int,
        **meta: Any,
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Rounds of (minimum, ours) under the ``kind`` workload (ours with ``ours_token``), the
        order flipped every round; prints each ratio."""
        ours_work = load.Workload.ours(kind, ours_token)
        base_work = load.Workload.minimum(kind, seed.REFERENCE_TOKEN)
        self.warm(base_srv, base_work)
        self.warm(ours_srv, ours_work)
        pairs = []
        for r in range(1, rounds + 1):
            self.log(f" {kind} round {r}/{rounds}")
            legs = [("minimum", base_srv, base_work), ("ours", ours_srv, ours_work)]
            if r % 2 == 0:
                legs.reverse()
            got = {who: self.measure(srv, work, who, round=r, **meta) for who, srv, work in legs}
            o, b = got["ours"], got["minimum"]
            ratio = o["rps"] / b["rps"] if b["rps"] else 0.0
            p99 = o["p99_ms"] / b["p99_ms"] if b["p99_ms"] else 0.0
            cpu = o["cpu_us_per_req"] / b["cpu_us_per_req"] if b["cpu_us_per_req"] else 0.0
            self.log(
                f"  {'ratio ours/minimum':<22} {ratio:>9.2f} x req/s                p99 "
                f"{p99:.2f} x                cpu/req {cpu:.2f} x"
            )
            pairs.append((o, b))
        return pairs

    # --- phases -------------------------------------------------------------------------------

    def main_phase(self) -> dict[str, Any]:
        a = self.args
        rows = a.events
        self.log(
            f"== list and create, {rows:,} events, {a.rounds} rounds of {a.duration:g}s "
            f"({self.tool}, {a.connections} connections)"
        )
        summary = {}
        with self.side_by_side(rows) as (ours_db, o, b):
            for kind in ("list", "create"):
                token = ours_db.read_secret if kind == "list" else ours_db.write_secret
                pairs = self.alternate(kind, o, token, b, a.rounds, phase="main", events=rows)
                summary[kind] = report.pair_summary(pairs)
                s = summary[kind]
                self.log(
                    f" {kind}: median ratio {s['rps_ratio']:.2f} x req/s, "
                    f"p99 {s['p99_ratio']:.2f} x  (ours {s['ours']['rps']:,.0f} req/s "
                    f"p50 {s['ours']['p50_ms']} p99 {s['ours']['p99_ms']} ms; minimum "
                    f"{s['minimum']['rps']:,.0f} req/s p50 {s['minimum']['p50_ms']} "
                    f"p99 {s['minimum']['p99_ms']} ms)"
                )
        return summary

    def asrun_phase(self) -> dict[str, Any]:
        """Create as people run it (issue 41): ours on the database built through the API
        (``bench.api_seed``), creating through the all-calendars write key that built it into
        the default calendar, against the minimum on its own database; and the list of that
        database's default calendar with a read key of it."""
        a = self.args
        rows = a.events
        self.log(
            f"== create as people run it: {rows:,} events built through the API, "
            f"all-calendars write key, {a.rounds} rounds of {a.duration:g}s"
        )
        meta = api_seed.seeded(rows, directory=self.dbdir, log=self.log)
        work = self.work / f"ours-api-{rows}.db"
        _copy_sqlite(api_seed.pristine(rows, self.dbdir), work)
        base_db = self.minimum_db(rows)
        summary = {}
        with (
            servers.ours(f"sqlite:///{work}", log_dir=self.logs) as o,
            servers.reference(base_db, log_dir=self.logs) as b,
        ):
            # The list first: the creates add to the calendar it reads (as main's do).
            for kind, token in (("list", meta.read_secret), ("create", meta.write_secret)):
                pairs = self.alternate(kind, o, token, b, a.rounds, phase="asrun", events=rows)
                summary[kind] = s = report.pair_summary(pairs)
                self.log(
                    f" {kind} as run: median ratio {s['rps_ratio']:.2f} x req/s, "
                    f"p99 {s['p99_ratio']:.2f} x  (ours {s['ours']['rps']:,.0f} req/s; "
                    f"minimum {s['minimum']['rps']:,.0f} req/s)"
                )
        return summary

    def before_phase(self) -> dict[str, Any]:
        """Ours against ours from an older checkout (``--before-tree``), each on a database
        seeded by its own code in the same shape, list then create, the order flipped every
        round: what a change costs against the commit before it (ratio now/before)."""
        a = self.args
        tree: Path = a.before_tree
        commit = _commit(tree)
        self.log(
            f"== ours against {commit} ({tree}), {a.events:,} events, {a.rounds} rounds of "
            f"{a.duration:g}s ({self.tool}, {a.connections} connections)"
        )
        dbs = {"now": self.ours_sqlite(a.events), "before": self.ours_sqlite(a.events, tree=tree)}
        summary: dict[str, Any] = {"commit": commit}
        with (
            servers.ours(dbs["now"].url, log_dir=self.logs) as now,
            servers.ours(dbs["before"].url, log_dir=self.logs, name="before", tree=tree) as then,
        ):
            served = {"before": then, "now": now}
            for kind in ("list", "create"):
                legs = [
                    (
                        who,
                        f"{kind} {who}",
                        srv,
                        load.Workload.ours(
                            kind, dbs[who].read_secret if kind == "list" else dbs[who].write_secret
                        ),
                    )
                    for who, srv in served.items()
                ]
                runs = self.alternated(legs, a.rounds, phase="before")
                m = summary[kind] = report.compared(runs, "now", "before")
                self.log(
                    f" {kind}: now/before {m['rps_ratio']:.2f} x req/s "
                    f"(rounds {', '.join(f'{x:.2f}' for x in m['rounds'])})"
                )
        return summary

    def scale_phase(self) -> dict[str, Any]:
        a = self.args
        sizes = [int(s) for s in a.scale_sizes.split(",") if s.strip()]
        summary = {}
        for rows in sizes:
            self.log(f"== list at {rows:,} events, {a.scale_rounds} rounds")
            with self.side_by_side(rows) as (ours_db, o, b):
                pairs = self.alternate(
                    "list", o, ours_db.read_secret, b, a.scale_rounds, phase="scale", events=rows
                )
            summary[str(rows)] = report.pair_summary(pairs)
        if len(summary) > 1:
            rps = [s["ours"]["rps"] for s in summary.values()]
            spread = (max(rps) - min(rps)) / max(rps)
            self.log(
                f" ours, list across sizes: {', '.join(f'{r:,.0f}' for r in rps)} req/s; "
                f"spread {spread:.1%} (target within 15%)"
            )
            summary["spread"] = round(spread, 3)  # type: ignore[assignment]
        return summary

    def modes_phase(self) -> dict[str, Any]:
        """Ours as served (SQLite inline on the event loop, group commit) against variants of
        one design choice each (bench/variants.py): a commit per request, and the database
        work on a thread of its own. What each choice does to req/s, p99 and CPU."""
        a = self.args
        rounds = max(1, a.scale_rounds)
        designs = ", ".join(report.MODE_NAMES.values())
        self.log(f"== SQLite designs (ours): {designs}; {rounds} rounds")
        db = self.ours_sqlite(a.events)
        summary = {}
        with contextlib.ExitStack() as stack:
            served = {
                "group": stack.enter_context(servers.ours(db.url, log_dir=self.logs)),
                **{
                    mode: stack.enter_context(
                        servers.ours(
                            db.url,
                            log_dir=self.logs,
                            name=mode,
                            factory=f"bench.variants:{factory}",
                        )
                    )
                    for mode, factory in VARIANTS.items()
                },
            }
            for kind in ("list", "create"):
                token = db.read_secret if kind == "list" else db.write_secret
                work = load.Workload.ours(kind, token)
                legs = [(mode, f"{kind} {mode}", srv, work) for mode, srv in served.items()]
                runs = self.alternated(legs, rounds, phase="modes")
                summary[kind] = {m: report._medians(rs) for m, rs in runs.items()}
        return summary

    def ratelimit_phase(self) -> dict[str, Any]:
        """The list with the rate budget shared through the database (ours as served: leased
        100 tokens at a time at the bench's budget) against the same app with the budget kept
        in each process's memory (``bench.variants:local_limiter_app``), rounds alternated, on
        SQLite and, when reachable, PostgreSQL. The ratio is shared/local (target >= 0.95)."""
        a = self.args
        rounds = max(1, a.scale_rounds)
        self.log(f"== rate limiter: shared (database) vs in memory, list; {rounds} rounds")
        backends = {"sqlite": self.ours_sqlite(a.events)}
        url = a.postgres_url or DEFAULT_PG
        if not a.skip_postgres and _postgres_reachable(url):
            backends["postgres"] = self.ours_postgres(url, a.events)
        summary: dict[str, Any] = {}
        for backend, db in backends.items():
            work = load.Workload.ours("list", db.read_secret)
            with (
                servers.ours(db.url, log_dir=self.logs, name=f"shared-{backend}") as shared,
                servers.ours(
                    db.url, log_dir=self.logs, name=f"local-{backend}", factory=LOCAL_LIMITER
                ) as local,
            ):
                legs = [
                    (who, f"list {backend} {who} limiter", srv, work)
                    for who, srv in (("shared", shared), ("local", local))
                ]
                runs = self.alternated(legs, rounds, phase="ratelimit")
            summary[backend] = report.compared(runs, "shared", "local")
            self.log(
                f" {backend}: shared/in-memory limiter = {summary[backend]['rps_ratio']:.3f} x "
                "req/s (target >= 0.95)"
            )
        return summary

    def series_phase(self) -> dict[str, Any]:
        """The list with recurring events: ours on the reference shape against ours on the same
        shape plus ``--series`` weekly series across its calendars (every one-week window meets
        each series of its calendar once), rounds alternated; the ratio is with/without."""
        a = self.args
        rounds = a.rounds
        self.log(
            f"== list with {a.series:,} weekly series beside {a.events:,} events, {rounds} rounds"
        )
        plain = self.ours_sqlite(a.events)
        with_series = self.ours_sqlite(a.events, series=a.series)
        with (
            servers.ours(plain.url, log_dir=self.logs, name="no-series") as without_srv,
            servers.ours(with_series.url, log_dir=self.logs, name="series") as with_srv,
        ):
            legs = [
                (
                    "without",
                    "without series",
                    without_srv,
                    load.Workload.ours("list", plain.read_secret),
                ),
                (
                    "with",
                    "with series",
                    with_srv,
                    load.Workload.ours("list", with_series.read_secret),
                ),
            ]
            runs = self.alternated(
                legs, rounds, heading=f" list round {{r}}/{rounds}", phase="series", series=a.series
            )
        summary = report.compared(runs, "with", "without")
        self.log(
            f" list with series / without: {summary['rps_ratio']:.2f} x req/s "
            f"(goal >= 0.8 x), p99 {summary['p99_ratio']:.2f} x (goal <= 1.5 x)"
        )
        return summary

    def search_phase(self) -> dict[str, Any]:
        """Search (``q``: two words, a random one-year window) beside the plain list (a random
        one-week window), on the series phase's database (``--events`` plus ``--series`` weekly
        series), the one-calendar read key, rounds alternated; on SQLite and, when reachable,
        PostgreSQL. The two words are those of the first series of the key's calendar (so
        that one series and some single events match: about 50 to 70 events a year; the count
        is printed). Goals: search >= 0.5 x the list's req/s, p99 <= 2 x."""
        a = self.args
        rounds = a.rounds
        self.log(
            f"== search, one-year windows, {a.events:,} events and {a.series:,} weekly series, "
            f"beside the one-week list; {rounds} rounds"
        )
        backends = {"sqlite": self.ours_sqlite(a.events, series=a.series)}
        url = a.postgres_url or DEFAULT_PG
        if not a.skip_postgres and _postgres_reachable(url):
            backends["postgres"] = self.ours_postgres(url, a.events, series=a.series)
        summary: dict[str, Any] = {}
        for backend, db in backends.items():
            query = _search_words(db)
            with servers.ours(db.url, log_dir=self.logs, name=f"search-{backend}") as srv:
                matched = _matched(srv.url, db.read_secret, query)
                self.log(f" {backend}: q={query!r} matches {matched} events in a sample year")
                legs = [
                    (
                        "search",
                        f"search {backend}",
                        srv,
                        load.Workload.search(db.read_secret, query),
                    ),
                    ("list", f"list {backend}", srv, load.Workload.ours("list", db.read_secret)),
                ]
                runs = self.alternated(
                    legs, rounds, heading=f" {backend} search round {{r}}/{rounds}", phase="search"
                )
            m = report.compared(runs, "search", "list")
            m["query"], m["matched"] = query, matched
            summary[backend] = m
            self.log(
                f" {backend}: search / list = {m['rps_ratio']:.2f} x req/s (goal >= 0.5 x), "
                f"p99 {m['p99_ratio']:.2f} x (goal <= 2 x)"
            )
        return summary

    def freetime_phase(self) -> dict[str, Any]:
        """findFreeTime (30 minutes in working hours, a random one-week window, the read key's
        calendar) against the list of the same windows, on the reference shape plus
        ``--series`` weekly series (the series phase's database), rounds alternated."""
        a = self.args
        rounds = a.rounds
        self.log(
            f"== findFreeTime, one-week windows, {a.events:,} events and {a.series:,} weekly "
            f"series, {rounds} rounds"
        )
        db = self.ours_sqlite(a.events, series=a.series)
        runs: dict[str, list[dict[str, Any]]] = {"freetime": [], "list": []}
        with servers.ours(db.url, log_dir=self.logs, name="freetime") as srv:
            legs = [(kind, load.Workload.ours(kind, db.read_secret)) for kind in runs]
            for _, work in legs:
                self.warm(srv, work)
            for r in range(1, rounds + 1):
                self.log(f" freetime round {r}/{rounds}")
                for kind, work in legs if r % 2 else reversed(legs):
                    runs[kind].append(
                        self.measure(srv, work, kind, round=r, phase="freetime", series=a.series)
                    )
        summary: dict[str, Any] = {
            kind: {**report._medians(rs), "errors": sum(r["errors"] for r in rs)}
            for kind, rs in runs.items()
        }
        pairs = list(zip(runs["freetime"], runs["list"], strict=True))
        summary["rps_ratio"] = round(
            report.median([f["rps"] / li["rps"] for f, li in pairs if li["rps"]]), 3
        )
        self.log(
            f" findFreeTime {summary['freetime']['rps']:,.0f} req/s, p99 "
            f"{summary['freetime']['p99_ms']:.2f} ms; {summary['rps_ratio']:.2f} x the list's req/s"
        )
        return summary

    def postgres_phase(self) -> dict[str, Any]:
        a = self.args
        url = a.postgres_url or DEFAULT_PG
        if not _postgres_reachable(url):
            self.log(f"== PostgreSQL skipped: {seed._display(url)} is not reachable")
            return {}
        self.log(f"== PostgreSQL ({seed._display(url)}), {a.events:,} events: 1 vs 2 workers")
        db = self.ours_postgres(url, a.events)
        summary: dict[str, Any] = {}
        with (
            servers.ours(db.url, log_dir=self.logs, workers=1, name="pg-1") as one,
            servers.ours(db.url, log_dir=self.logs, workers=2, name="pg-2") as two,
        ):
            for kind in ("list", "create"):
                token = db.read_secret if kind == "list" else db.write_secret
                work = load.Workload.ours(kind, token)
                self.warm(one, work)
                self.warm(two, work)
                runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
                for r in range(1, a.pg_rounds + 1):
                    self.log(f" {kind} round {r}/{a.pg_rounds}")
                    legs = [("1", one), ("2", two)]
                    if r % 2 == 0:
                        legs.reverse()
                    for workers, srv in legs:
                        runs[workers].append(
                            self.measure(
                                srv,
                                work,
                                f"{workers} worker(s)",
                                round=r,
                                phase="postgres",
                                workers=int(workers),
                                events=a.events,
                            )
                        )
                summary[kind] = {w: report._medians(rs) for w, rs in runs.items()}
                ratios = [
                    t["rps"] / o["rps"]
                    for o, t in zip(runs["1"], runs["2"], strict=True)
                    if o["rps"]
                ]
                summary[kind]["ratio"] = round(report.median(ratios), 3)
                self.log(
                    f" {kind}: 2 workers / 1 worker = {summary[kind]['ratio']:.2f} x "
                    "(target >= 1.6 x for list)"
                )
        return summary

    def hostile_phase(self) -> dict[str, Any]:
        """The worst recurrence rules against a fresh server each, one request at a time, with
        ``/healthz`` probed beside them (``bench/hostile.py``)."""
        self.log("\n== hostile: the worst recurrence rules, /healthz beside them ==")
        argv = ["--tiny"] if self.args.tiny else []
        if self.args.ours_tree is not None:
            argv += ["--ours-tree", str(self.args.ours_tree)]
        return hostile.run(hostile.parse_args(argv), log=self.log)

    def _write(self, summary: dict[str, Any], started: float) -> None:
        """The raw results of a partial run (no chart, no comparison)."""
        summary["seconds"] = round(time.time() - started, 1)
        doc = {"summary": summary, "runs": self.raw}
        stamp = load.now_stamp()
        (self.out / f"run-{stamp}.json").write_text(json.dumps(doc, indent=1))
        (self.out / "latest.json").write_text(json.dumps(doc, indent=1))

    def webhooks_phase(self) -> dict[str, Any]:
        """``bench/webhooks.py`` (commit-to-request latency in one process and across two,
        deliveries per second) on SQLite, then on a fresh PostgreSQL database when reachable
        (its figures under ``postgresql``): ``python -m bench.webhooks --json PATH``."""
        self.log("== webhooks (bench/webhooks.py)")
        summary = self._webhooks_run([], self.out / "webhooks.json")
        url = self.args.postgres_url or DEFAULT_PG
        if not self.args.skip_postgres and _postgres_reachable(url):
            from sqlalchemy import create_engine, text

            base = url.rsplit("/", 1)[0]
            admin = create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text('DROP DATABASE IF EXISTS "calendar_bench_hooks" WITH (FORCE)'))
                conn.execute(text('CREATE DATABASE "calendar_bench_hooks"'))
            admin.dispose()
            pg = ["--database-url", f"{base}/calendar_bench_hooks"]
            summary["postgresql"] = self._webhooks_run(pg, self.out / "webhooks-postgres.json")
        return summary

    def _webhooks_run(self, options: list[str], path: Path) -> dict[str, Any]:
        path.unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "bench.webhooks", *options, "--json", str(path)],
            cwd=ROOT,
            timeout=900,
            check=False,
        )
        if proc.returncode != 0 or not path.exists():
            self.log(f" webhooks benchmark failed (exit {proc.returncode})")
            return {"error": proc.returncode}
        return json.loads(path.read_text())  # type: ignore[no-any-return]

    def profile(self, kind: str) -> None:
        """Sample our server with py-spy while it serves ``kind``; write a summary."""
        a = self.args
        pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not Path(pyspy).exists() and shutil.which("py-spy") is None:
            raise SystemExit("py-spy is not installed: pip install py-spy")
        if a.profile_postgres:
            db = self.ours_postgres(a.postgres_url or DEFAULT_PG, a.events)
        else:
            db = self.ours_sqlite(a.events, series=a.series if a.profile_series else 0)
        token = db.read_secret if kind == "list" else db.write_secret
        work = load.Workload.ours(kind, token)
        where = ("-postgres" if a.profile_postgres else "") + (
            "-series" if a.profile_series else ""
        )
        raw = self.out / f"profile-{kind}{where}.txt"
        with servers.ours(db.url, log_dir=self.logs) as srv:
            self.warm(srv, work)
            spy = subprocess.Popen(
                [
                    pyspy,
                    "record",
                    "--pid",
                    str(srv.proc.pid),
                    "--subprocesses",
                    "--threads",
                    "--format",
                    "raw",
                    "--rate",
                    "250",
                    "--duration",
                    str(int(a.duration)),
                    "-o",
                    str(raw),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.measure(srv, work, f"ours ({kind}, profiled)", phase="profile")
            spy.wait(timeout=a.duration + 60)
        text = report.summarise_profile(raw)
        raw.with_name(raw.stem + "-summary.txt").write_text(text)
        self.log(text)

    # --- the whole run ------------------------------------------------------------------------

    def run(self) -> int:
        a = self.args
        if a.profile:
            self.profile(a.profile)
            return 0
        phases = {p.strip() for p in a.only.split(",")}
        started = time.time()
        self.log(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f}")
        summary: dict[str, Any] = {
            "machine": machine(),
            "tool": self.tool,
            "connections": a.connections,
            "duration": a.duration,
            "rounds": a.rounds,
            "events": a.events,
            "load_before": round(os.getloadavg()[0], 2),
        }
        if "hostile" in phases:  # ours alone: the worst recurrence rules (bench/hostile.py)
            summary["hostile"] = self.hostile_phase()
            if phases == {"hostile"}:
                self._write(summary, started)
                return 0
        if "main" in phases:
            summary["main"] = self.main_phase()
        if "asrun" in phases:
            summary["asrun"] = self.asrun_phase()
        if "before" in phases and a.before_tree is not None:
            summary["before"] = self.before_phase()
        if "scale" in phases and a.scale_sizes.strip():
            summary["scale"] = self.scale_phase()
        if "series" in phases and a.series:
            summary["series"] = self.series_phase()
        if "search" in phases and a.series:
            summary["search"] = self.search_phase()
        if "freetime" in phases:
            summary["freetime"] = self.freetime_phase()
        if "modes" in phases:
            summary["modes"] = self.modes_phase()
        if "ratelimit" in phases:
            summary["ratelimit"] = self.ratelimit_phase()
        if "postgres" in phases and not a.skip_postgres:
            summary["postgres"] = self.postgres_phase()
        if "webhooks" in phases and not a.skip_webhooks:
            summary["webhooks"] = self.webhooks_phase()
        summary["seconds"] = round(time.time() - started, 1)
        summary["load_after"] = round(os.getloadavg()[0], 2)
        stamp = load.now_stamp()
        doc = {"summary": summary, "runs": self.raw}
        (self.out / f"run-{stamp}.json").write_text(json.dumps(doc, indent=1))
        (self.out / "latest.json").write_text(json.dumps(doc, indent=1))
        (self.out / "latest.md").write_text(report.markdown(summary) + "\n")
        # Only a whole run redraws the committed chart; partial and tiny runs draw beside
        # their raw results.
        whole = not a.tiny and {"main", "scale", "postgres"} <= phases
        chart_path = a.chart or (
            ROOT / "docs" / "performance.png" if whole else self.out / "performance.png"
        )
        drawn = report.chart(_chart_data(summary), chart_path, summary["machine"])
        self.log("")
        self.log(summary_text(summary))
        self.log(
            f"raw results: {self.out / f'run-{stamp}.json'}"
            + (f"; chart: {drawn}" if drawn else "")
        )
        return 0


def _search_words(db: seed.Seeded) -> str:
    """The two words of the first series of the read key's calendar (its title is "Weekly
    <word> <word>"), or of any event of it when it has no series."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db.url)
    try:
        with engine.connect() as conn:
            title = conn.execute(
                text(
                    "SELECT title FROM events WHERE calendar_id = :c "
                    "ORDER BY recurrence IS NULL, starts_at, id LIMIT 1"
                ),
                {"c": db.calendar_id},
            ).scalar()
    finally:
        engine.dispose()
    return " ".join(str(title or "dentist offsite").lower().split()[-2:])


def _matched(url: str, token: str, query: str) -> int:
    """How many events ``query`` finds in one year of the events' span (2024-06-03 on)."""
    import httpx

    params = {"q": query, "timeMin": "2024-06-03", "timeMax": "2025-06-02", "limit": "2500"}
    with httpx.Client(base_url=url, timeout=60) as client:
        found = 0
        while True:
            page = client.get(
                "/api/v1/calendar/events",
                params=params,
                headers={"Authorization": f"Bearer {token}"},
            ).json()
            found += len(page["events"])
            if "nextPageToken" not in page:
                return found
            params["pageToken"] = page["nextPageToken"]


def _chart_data(summary: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if summary.get("main"):
        data["main"] = summary["main"]
    scale = {k: v for k, v in summary.get("scale", {}).items() if k != "spread"}
    if len(scale) > 1:
        data["scale"] = scale
    pg = summary.get("postgres") or {}
    if pg:
        data["postgres"] = pg
    return data


def summary_text(s: dict[str, Any]) -> str:
    out = ["== summary (medians over rounds)"]
    runs = [(kind, m) for kind, m in (s.get("main") or {}).items()]
    runs += [(f"{kind} as run", m) for kind, m in (s.get("asrun") or {}).items()]
    for kind, m in runs:
        out.append(
            f"{kind:<7} ours {m['ours']['rps']:>7,.0f} req/s p50 {m['ours']['p50_ms']:>6.2f} "
            f"p99 {m['ours']['p99_ms']:>6.2f} ms | minimum {m['minimum']['rps']:>7,.0f} req/s "
            f"p50 {m['minimum']['p50_ms']:>6.2f} p99 {m['minimum']['p99_ms']:>6.2f} ms | "
            f"ratio {m['rps_ratio']:.2f} x req/s, p99 {m['p99_ratio']:.2f} x; CPU per request "
            f"{m['ours']['cpu_us_per_req']:.0f} vs {m['minimum']['cpu_us_per_req']:.0f} us"
        )
    before = s.get("before") or {}
    for kind in ("list", "create"):
        if kind in before:
            m = before[kind]
            out.append(
                f"{kind:<7} now {m['now']['rps']:>7,.0f} req/s p99 {m['now']['p99_ms']:>6.2f} ms "
                f"| {before['commit']} {m['before']['rps']:>7,.0f} req/s p99 "
                f"{m['before']['p99_ms']:>6.2f} ms | ratio {m['rps_ratio']:.2f} x req/s; CPU "
                f"per request {m['now']['cpu_us_per_req']:.0f} vs "
                f"{m['before']['cpu_us_per_req']:.0f} us"
            )
    if s.get("series"):
        m = s["series"]
        out.append(
            f"list with series {m['with']['rps']:>7,.0f} req/s p99 {m['with']['p99_ms']:>6.2f} ms"
            f" | without {m['without']['rps']:>7,.0f} req/s p99 {m['without']['p99_ms']:>6.2f} ms"
            f" | ratio {m['rps_ratio']:.2f} x req/s, p99 {m['p99_ratio']:.2f} x"
        )
    for backend, m in (s.get("search") or {}).items():
        out.append(
            f"search {backend:<8} {m['search']['rps']:>7,.0f} req/s p99 "
            f"{m['search']['p99_ms']:>6.2f} ms ({m['matched']} events a year) | one-week list "
            f"{m['list']['rps']:>7,.0f} req/s p99 {m['list']['p99_ms']:>6.2f} ms | ratio "
            f"{m['rps_ratio']:.2f} x req/s, p99 {m['p99_ratio']:.2f} x"
        )
    if s.get("freetime"):
        m = s["freetime"]
        out.append(
            f"findFreeTime {m['freetime']['rps']:>7,.0f} req/s p99 "
            f"{m['freetime']['p99_ms']:>6.2f} ms | list on the same database "
            f"{m['list']['rps']:>7,.0f} req/s p99 {m['list']['p99_ms']:>6.2f} ms | "
            f"ratio {m['rps_ratio']:.2f} x req/s"
        )
    for size, m in (s.get("scale") or {}).items():
        if size == "spread":
            out.append(f"list spread across sizes (ours): {m:.1%}")
            continue
        out.append(
            f"list @{int(size):>9,} ours {m['ours']['rps']:>7,.0f} req/s p99 "
            f"{m['ours']['p99_ms']:>6.2f} ms | minimum {m['minimum']['rps']:>7,.0f} req/s p99 "
            f"{m['minimum']['p99_ms']:>6.2f} ms | ratio {m['rps_ratio']:.2f} x"
        )
    for kind, m in (s.get("modes") or {}).items():
        out.append(
            f"sqlite {kind:<7} "
            + " | ".join(
                f"{report.MODE_NAMES.get(mode, mode)} {r['rps']:>7,.0f} req/s "
                f"p99 {r['p99_ms']:.2f} ms"
                for mode, r in m.items()
            )
        )
    for kind, m in (s.get("postgres") or {}).items():
        one, two = m["1"], m["2"]
        out.append(
            f"postgres {kind:<7} 1 worker {one['rps']:>7,.0f} req/s p99 {one['p99_ms']:.2f} ms "
            f"(machine {one.get('machine_busy_pct', 0):.0f}% busy) | 2 workers "
            f"{two['rps']:>7,.0f} req/s p99 {two['p99_ms']:.2f} ms (machine "
            f"{two.get('machine_busy_pct', 0):.0f}% busy) | {m['ratio']:.2f} x"
        )
    for backend, m in (s.get("ratelimit") or {}).items():
        out.append(
            f"list {backend:<8} shared limiter {m['shared']['rps']:>7,.0f} req/s | in memory "
            f"{m['local']['rps']:>7,.0f} req/s | {m['rps_ratio']:.3f} x"
        )
    webhooks = s.get("webhooks") or {}
    for hooks in (webhooks, webhooks.get("postgresql") or {}):
        if "latency" in hooks and "throughput" in hooks:
            lat, thr = hooks["latency"], hooks["throughput"]
            across = hooks.get("cross_process_latency") or {}
            out.append(
                f"webhooks ({hooks.get('backend')}) commit to request p50 {lat.get('p50_ms')} "
                f"ms, p99 {lat.get('p99_ms')} ms; {thr.get('per_second')} deliveries/s; "
                f"worker in another process p50 {across.get('p50_ms')} ms, "
                f"p99 {across.get('p99_ms')} ms"
            )
        elif hooks:
            out.append(f"webhooks: {json.dumps(hooks)}")
    return "\n".join(out)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                cpu = text.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def _commit(tree: Path) -> str:
    """The short commit a checkout is at (names its cached database)."""
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _copy_sqlite(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{dst}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def _postgres_reachable(url: str) -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    base = url.rsplit("/", 1)[0].replace("+psycopg", "")
    try:
        psycopg.connect(f"{base}/postgres", connect_timeout=3).close()
    except Exception:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    return Bench(parse_args(argv)).run()


if __name__ == "__main__":
    raise SystemExit(main())
