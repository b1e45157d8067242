"""``python -m bench.connections``: what connected calendars cost (issue 42, item 8).

1. ``queryFreeBusy`` and ``findFreeTime`` over random one-week windows, one request at a time
   against a real server (``calendar-service serve``, one process, SQLite): an owner with two
   connected calendars of 5,000 events each against an owner without, the two alternated round
   by round; req/s of each and their ratio (the issue asks ≥ 0.8).
2. A poll of an unchanged CalDAV calendar of 5,000 events on a Radicale server (its own
   process): the requests the poll sent and the CPU seconds it cost this process (the poller;
   the server's are not counted), after a first full read (also reported).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import httpx

from bench import servers
from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.delivery import connections as store
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.sealed import sealing_key
from calendar_service.platform.timeutil import utcnow
from webhooks.caldav_client import sync_collection_body
from webhooks.connections import ConnectionPoller, discover

START = datetime(2027, 1, 4, tzinfo=UTC)
WEEKS = 40


def _ics(prefix: str, count: int) -> bytes:
    """``count`` events of 30 minutes spread over ``WEEKS`` weeks of working hours."""
    rng = random.Random(prefix)
    out = ["BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\n"]
    for i in range(count):
        at = START + timedelta(days=rng.randrange(WEEKS * 7), hours=8 + rng.randrange(9))
        out.append(_vevent(f"{prefix}-{i}", at))
    out.append("END:VCALENDAR\r\n")
    return "".join(out).encode()


def _vevent(uid: str, at: datetime) -> str:
    end = at + timedelta(minutes=30)
    return (
        f"BEGIN:VEVENT\r\nUID:{uid}\r\nDTSTAMP:20260101T000000Z\r\n"
        f"DTSTART:{at:%Y%m%dT%H%M%SZ}\r\nDTEND:{end:%Y%m%dT%H%M%SZ}\r\nSUMMARY:m\r\nEND:VEVENT\r\n"
    )


def _serve_ics(bodies: dict[str, bytes]) -> str:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies[self.path]
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def _owner(db: Database, email: str) -> tuple[str, str]:
    made = db.call(calendars.create_owner, email=email, password="bench-password-1", now=utcnow())
    _, secret = db.call(
        keys.create_key,
        user_id=made["id"],
        name="bench",
        permission="read",
        expires_at=utcnow() + timedelta(days=1),
        calendar_id=None,
        now=utcnow(),
    )
    return made["id"], secret


def _rate(client: httpx.Client, path: str, secret: str, n: int, extra: dict[str, Any]) -> float:
    rng = random.Random(path + secret[-4:])
    began = time.perf_counter()
    for _ in range(n):
        low = START + timedelta(days=rng.randrange((WEEKS - 1) * 7))
        body = {
            "timeMin": low.isoformat(),
            "timeMax": (low + timedelta(days=7)).isoformat(),
            **extra,
        }
        answer = client.post(path, json=body, headers={"authorization": f"Bearer {secret}"})
        assert answer.status_code == 200, answer.text
    return n / (time.perf_counter() - began)


def availability(args: argparse.Namespace, directory: Path, log: Any) -> dict[str, Any]:
    url = f"sqlite:///{directory / 'bench.db'}"
    config = Config(database_url=url, webhook_allow_local=True)
    db = Database(config)
    upgrade(db.engine)
    _, plain = _owner(db, "plain@example.com")
    connected_id, connected = _owner(db, "connected@example.com")
    base = _serve_ics({"/a.ics": _ics("a", 5000), "/b.ics": _ics("b", 5000)})
    key = db.call(lambda c: sealing_key(c, configured=None, now=utcnow()))
    ids = [
        db.call(lambda c, p=p: store.add_ics(c, user_id=connected_id, url=base + p, name=p,
                                              visibility="busy", key=key, now=utcnow()))["id"]
        for p in ("/a.ics", "/b.ics")
    ]  # fmt: skip

    async def poll() -> None:
        poller = ConnectionPoller(db, config)
        for i in ids:
            await poller.poll_now(i)

    asyncio.run(poll())
    log(
        "connected:",
        [db.call(store.get_connection, user_id=None, connection_id=i)["events"] for i in ids],
    )
    found: dict[str, Any] = {}
    with (
        servers.ours(url, log_dir=directory) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        for name, path, extra in (
            ("queryFreeBusy", "/api/v1/calendar/freeBusy", {}),
            ("findFreeTime", "/api/v1/calendar/freeTime", {"durationMinutes": 30}),
        ):
            _rate(client, path, plain, 200, extra)  # warm-up
            _rate(client, path, connected, 200, extra)
            pairs = []
            for _ in range(args.rounds):
                without = _rate(client, path, plain, args.requests, extra)
                with_two = _rate(client, path, connected, args.requests, extra)
                pairs.append((without, with_two, with_two / without))
                log(f"{name}: without {without:.0f} req/s, with two {with_two:.0f} req/s")
            found[name] = {
                "without": statistics.median(p[0] for p in pairs),
                "withTwo": statistics.median(p[1] for p in pairs),
                "ratio": statistics.median(p[2] for p in pairs),
            }
    db.close()
    return found


def caldav_poll(directory: Path, log: Any) -> dict[str, Any]:
    port = servers.free_port()
    folder = directory / "radicale"
    proc = subprocess.Popen(
        [sys.executable, "-m", "radicale", "--storage-filesystem-folder", str(folder),
         "--server-hosts", f"127.0.0.1:{port}", "--auth-type", "none",
         "--logging-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(200):
            try:
                httpx.request("PROPFIND", base, headers={"depth": "0"}, auth=("u", "p"))
                break
            except httpx.TransportError:
                time.sleep(0.1)
        with httpx.Client(auth=("u", "p"), timeout=30) as client:
            assert client.request("MKCALENDAR", base + "u/work/").status_code == 201
        # The objects written straight into Radicale's storage (5,000 PUTs would take minutes).
        home = folder / "collection-root" / "u" / "work"
        rng = random.Random(5)
        for i in range(5000):
            at = START + timedelta(days=rng.randrange(WEEKS * 7), hours=8 + rng.randrange(9))
            body = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\n" + _vevent(
                f"o{i}", at
            )
            (home / f"o{i}.ics").write_text(body + "END:VCALENDAR\r\n")
        # Radicale builds its caches on the first read of a collection: once, before measuring.
        began = time.perf_counter()
        warm = httpx.request("REPORT", base + "u/work/", content=sync_collection_body(None),
                             headers={"depth": "0"}, auth=("u", "p"), timeout=600)  # fmt: skip
        log(f"radicale warm-up: HTTP {warm.status_code} in {time.perf_counter() - began:.1f} s")
        config = Config(
            database_url=f"sqlite:///{directory / 'caldav.db'}", webhook_allow_local=True
        )
        db = Database(config)
        upgrade(db.engine)
        user_id, _ = _owner(db, "dav@example.com")
        found = asyncio.run(discover(base, username="u", password="p", allow_local=True))
        key = db.call(lambda c: sealing_key(c, configured=None, now=utcnow()))
        [added] = db.call(store.add_caldav, user_id=user_id, url=base, username="u", password="p",
                          calendars=[store.Picked(f.url, f.name) for f in found], visibility="busy",
                          key=key, now=utcnow())  # fmt: skip
        poller = ConnectionPoller(db, config)
        figures: dict[str, Any] = {}
        for name in ("first", "unchanged"):
            before_requests, before_cpu, began = (
                poller.requests,
                time.process_time(),
                time.perf_counter(),
            )
            asyncio.run(poller.poll_now(added["id"]))
            figures[name] = {
                "requests": poller.requests - before_requests,
                "cpuSeconds": round(time.process_time() - before_cpu, 3),
                "wallSeconds": round(time.perf_counter() - began, 3),
            }
            shown = db.call(store.get_connection, user_id=None, connection_id=added["id"])
            log(
                f"caldav poll ({name}): {figures[name]}, status {shown['status']}, "
                f"{shown['events']} events"
            )
        db.close()
        return figures
    finally:
        proc.kill()
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.connections", description=__doc__.split("\n")[0]
    )
    p.add_argument("--requests", type=int, default=500, help="requests per round and case")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", choices=("availability", "caldav"), default=None)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        directory = Path(folder)
        result: dict[str, Any] = {}
        if args.only in (None, "availability"):
            result["availability"] = availability(args, directory, print)
        if args.only in (None, "caldav"):
            result["caldav"] = caldav_poll(directory, print)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
