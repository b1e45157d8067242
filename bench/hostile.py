"""``python -m bench.hostile`` (``python -m bench --only hostile``): the worst recurrence rules
found (issue 24, B and G) against a real server, one request at a time.

For each rule: a calendar of its own with that one series (created through REST, so the
server's own validation and write path), then, on a fresh server (``calendar-service serve``,
one process), the requests an attacker would send: the list from 1901 to 2199 ten at a time
(cold, the same again warm, the next page), the same with ``singleEvents=false``, and free/busy
over the longest window accepted (92 days). Reported for each request: its time (capped by the
client's timeout: "> 30 s"), the ``/healthz`` latency measured beside it by a prober (every
50 ms, its slowest and its median), and the server's resident memory after it; for each rule,
the server's peak resident memory (``VmHWM``).

Bounded: at most ``len(RULES) x 5`` requests, each cut at ``--timeout`` (after a timeout the
server is restarted, so that the next request does not wait behind the last one's work), the
whole run at ``--deadline``. SQLite in a temporary directory by default (removed at the end);
``--postgres-admin-url`` makes a database of its own and drops it. ``--ours-tree`` serves the
code of another checkout (a worktree of an older commit: before/after figures)."""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bench import servers
from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.timeutil import utcnow

QUARTERS = "BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE=0,15,30,45"
RULES = {
    "daily-96": f"RRULE:FREQ=DAILY;{QUARTERS}",
    "yearly-96": f"RRULE:FREQ=YEARLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;{QUARTERS}",
    "weekly-96": f"RRULE:FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;{QUARTERS}",
    "monday-29-february": "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
    "setpos-180": "RRULE:FREQ=YEARLY;BYDAY=MO,TU,WE,TH,FR,SA,SU;BYSETPOS="
    + ",".join(str(n) for n in range(-180, 0)),
}
WHOLE = {"timeMin": "1901-01-01T00:00:00Z", "timeMax": "2199-12-31T00:00:00Z", "limit": "10"}
EVENTS = "/api/v1/calendar/events"
FREE_BUSY = "/api/v1/calendar/freeBusy"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n")[0])
    p.add_argument("--timeout", type=float, default=30.0, help="client timeout per request (s)")
    p.add_argument("--deadline", type=float, default=900.0, help="bound on the whole run (s)")
    p.add_argument("--rules", default=",".join(RULES), help="which rules, by name")
    p.add_argument("--postgres-admin-url", default=None, help="default: SQLite in a temp dir")
    p.add_argument("--ours-tree", type=Path, default=None, help="serve ours from this checkout")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    p.add_argument("--tiny", action="store_true", help="one rule, a smoke run in seconds")
    args = p.parse_args(argv)
    if args.tiny:
        args.rules = "daily-96"
    return args


@dataclass
class Prober:
    """``GET /healthz`` every 50 ms on a thread of its own; the latencies of each stretch."""

    url: str
    latencies: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    client.get("/healthz")
                self.latencies.append(time.perf_counter() - started)
                self._stop.wait(0.05)

    @contextlib.contextmanager
    def beside(self) -> Iterator[list[float]]:
        """Probe while the block runs; the latencies measured meanwhile."""
        self.latencies = []
        self._stop.clear()
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self.latencies
        finally:
            self._stop.set()
            thread.join(timeout=70)


def _memory(pid: int) -> dict[str, int]:
    """The process's resident memory now and at its peak (MB), from /proc."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) // 1024
    return found


@contextlib.contextmanager
def database(admin_url: str | None) -> Iterator[str]:
    """An empty database of its own: SQLite in a temporary directory, or a new PostgreSQL
    database (dropped afterwards)."""
    if admin_url is None:
        with tempfile.TemporaryDirectory(prefix="bench-hostile-") as directory:
            yield f"sqlite:///{directory}/hostile.db"
        return
    with servers.postgres_database(admin_url, "calendar_hostile") as url:
        yield url


def _prepare(url: str, names: list[str]) -> dict[str, str]:
    """The schema, an owner, and for each rule a calendar and a key to it (secrets by rule)."""
    db = Database(Config(database_url=url))
    try:
        upgrade(db.engine)
        now = utcnow()
        owner = db.call(
            calendars.create_owner,
            email=f"hostile-{uuid.uuid4().hex[:8]}@example.com",
            password="correct horse 1",
            now=now,
            time_zone="UTC",
        )
        secrets = {}
        for name in names:
            calendar = db.call(
                calendars.create_calendar,
                user_id=owner["id"],
                name=f"hostile {len(secrets)}",
                time_zone="Europe/Berlin",
                now=now,
            )
            _, secret = db.call(
                keys.create_key,
                user_id=owner["id"],
                name=name,
                permission="write",
                expires_at=now + timedelta(days=1),
                calendar_id=calendar["id"],
                now=now,
            )
            secrets[name] = secret
        return secrets
    finally:
        db.close()


def _requests() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(label, method, path, params or body) of what is sent for one rule, in order; the next
    page's token is filled in from the first page."""
    return [
        ("list, cold", "GET", EVENTS, dict(WHOLE)),
        ("list, warm", "GET", EVENTS, dict(WHOLE)),
        ("list, next page", "GET", EVENTS, {**WHOLE, "pageToken": "?"}),
        ("singleEvents=false", "GET", EVENTS, {**WHOLE, "singleEvents": "false"}),
        (
            "freeBusy, 92 days",
            "POST",
            FREE_BUSY,
            {"timeMin": "2026-03-02T00:00:00Z", "timeMax": "2026-06-02T00:00:00Z"},
        ),
    ]


def run(args: argparse.Namespace, log: Any = print) -> dict[str, Any]:
    names = [n.strip() for n in args.rules.split(",") if n.strip()]
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise SystemExit(f"unknown rules: {unknown}; known: {list(RULES)}")
    deadline = time.monotonic() + args.deadline
    figures: dict[str, Any] = {"timeout_s": args.timeout, "rules": {}}
    with tempfile.TemporaryDirectory(prefix="bench-hostile-logs-") as logs:
        log_dir = Path(logs)
        with database(args.postgres_admin_url) as url:
            secrets = _prepare(url, names)
            for name in names:
                if time.monotonic() > deadline:
                    log(f"{name}: skipped, past the run's deadline")
                    continue
                figures["rules"][name] = _one_rule(args, url, log_dir, name, secrets[name], log)
    return figures


def _one_rule(
    args: argparse.Namespace, url: str, log_dir: Path, name: str, secret: str, log: Any
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"}
    found: dict[str, Any] = {"rule": RULES[name], "requests": []}
    stack = contextlib.ExitStack()
    server = stack.enter_context(servers.ours(url, log_dir=log_dir, tree=args.ours_tree))
    try:
        with httpx.Client(base_url=server.url, timeout=args.timeout) as client:
            made = client.post(
                EVENTS,
                headers=headers,
                json={
                    "title": name,
                    "startsAt": "2026-03-02T00:00:00Z",
                    "endsAt": "2026-03-02T00:10:00Z",
                    "recurrence": [RULES[name]],
                },
            )
            if made.status_code != 201:
                found["refused"] = made.text[:300]
                log(f"{name}: refused when written ({made.status_code})")
                return found
            token = None
            for label, method, path, payload in _requests():
                if payload.get("pageToken") == "?":
                    if token is None:
                        continue
                    payload["pageToken"] = token
                prober = Prober(server.url)
                timed_out = False
                with prober.beside() as healthz:
                    started = time.perf_counter()
                    try:
                        if method == "GET":
                            answer = client.get(path, params=payload, headers=headers)
                        else:
                            answer = client.post(path, json=payload, headers=headers)
                        status = answer.status_code
                        if label == "list, cold" and status == 200:
                            token = answer.json().get("nextPageToken")
                    except httpx.TimeoutException:
                        timed_out, status = True, 0
                    took = time.perf_counter() - started
                memory = _memory(server.proc.pid)
                row = {
                    "request": label,
                    "status": status,
                    "seconds": None if timed_out else round(took, 4),
                    "healthz_max_ms": round(max(healthz) * 1000, 1) if healthz else None,
                    "healthz_p50_ms": round(statistics.median(healthz) * 1000, 1)
                    if healthz
                    else None,
                    "rss_mb": memory.get("VmRSS"),
                }
                found["requests"].append(row)
                shown = f"> {args.timeout:.0f} s" if timed_out else f"{took * 1000:.1f} ms"
                probed = "-" if not healthz else f"{row['healthz_max_ms']:.1f} ms"
                log(
                    f"{name:20} {label:20} {shown:>10}  healthz max {probed:>10}  "
                    f"RSS {row['rss_mb']} MB"
                )
                if timed_out:  # the server is still at it: start afresh for the next request
                    found["peak_rss_mb"] = max(found.get("peak_rss_mb", 0), memory["VmHWM"])
                    stack.close()
                    stack = contextlib.ExitStack()
                    server = stack.enter_context(
                        servers.ours(url, log_dir=log_dir, tree=args.ours_tree)
                    )
                    client.base_url = httpx.URL(server.url)
            memory = _memory(server.proc.pid)
            found["peak_rss_mb"] = max(found.get("peak_rss_mb", 0), memory["VmHWM"])
            log(f"{name:20} peak RSS {found['peak_rss_mb']} MB")
    finally:
        stack.close()
    return found


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    figures = run(args)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    sys.exit(main())
