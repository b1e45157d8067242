"""``python -m bench.undo [--changes N] [--postgres-admin-url URL]``: ``/healthz`` while a real
server undoes a key's work (issue 39, A).

An owner and a key with N changes (events it created, written through the core), a fresh
``calendar-service serve``; the owner signs in and posts *Revoke and undo*; a prober asks
``/healthz`` every 50 ms until the job is done. Reported: the job's time (from the POST to
the state ``done``), the POST's own time, and ``/healthz``'s slowest and median answers.
SQLite in a temporary directory by default; ``--postgres-admin-url`` makes a database of its
own and drops it."""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from bench import servers
from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.calendar.events.create import create_event_from_input
from calendar_service.governance import undo_jobs
from calendar_service.journal.change_record import default_via
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.migrate import upgrade
from calendar_service.platform.timeutil import utcnow

PASSWORD = "correct horse battery 1"


def _seed(db: Database, count: int) -> tuple[str, str]:
    owner = db.call(calendars.create_owner, email=f"bench-{uuid.uuid4().hex[:8]}@example.com",
                    password=PASSWORD, now=utcnow(), time_zone="UTC")  # fmt: skip
    key, _ = db.call(keys.create_key, user_id=owner["id"], name="Busy agent",
                     permission="write", expires_at=utcnow() + timedelta(days=1),
                     calendar_id=None, now=utcnow())  # fmt: skip
    principal = keys.Principal(key["id"], owner["id"], "write", None, utcnow() + timedelta(1))

    def made(conn: Any, n: int) -> None:
        for i in range(n):
            body = {"title": f"e{i}", "startsAt": "2031-01-01T10:00:00Z",
                    "endsAt": "2031-01-01T11:00:00Z"}  # fmt: skip
            create_event_from_input(conn, principal=principal, body=body, now=utcnow(),
                                    via=default_via(principal))  # fmt: skip

    for start in range(0, count, 1000):
        db.call(made, n=min(1000, count - start))
    return owner["email"], key["id"]


def run(url: str, count: int) -> dict[str, Any]:
    db = Database(Config(database_url=url, session_secret="bench-session-secret-0123456789"))
    upgrade(db.engine)
    email, key_id = _seed(db, count)
    with tempfile.TemporaryDirectory() as logs, servers.ours(url, log_dir=Path(logs)) as server:
        client = httpx.Client(base_url=server.url, timeout=120)
        form = client.get("/settings/sign-in")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
        assert token is not None
        client.post("/settings/sign-in", data={"email": email, "password": PASSWORD,
                                               "csrf_token": token.group(1)})  # fmt: skip
        token = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/settings/keys").text)
        assert token is not None
        began = time.perf_counter()
        form_data = {"csrf_token": token.group(1), "since": "2000-01-01T00:00:00Z", "revoke": "yes"}
        answer = client.post(f"/settings/keys/{key_id}/undo", data=form_data)
        posted = time.perf_counter() - began
        job_id = answer.headers["location"].rsplit("/", 1)[1]
        probe = httpx.Client(base_url=server.url, timeout=120)
        latencies = []
        while True:
            t = time.perf_counter()
            probe.get("/healthz").raise_for_status()
            latencies.append(time.perf_counter() - t)
            job = db.call(undo_jobs.undo_job, user_id=None, job_id=job_id)
            if job["state"] == undo_jobs.DONE:
                break
            time.sleep(0.05)
        total = time.perf_counter() - began
    db.close()
    return {
        "changes": count,
        "undone": job["undone"],
        "postSeconds": round(posted, 3),
        "jobSeconds": round(total, 1),
        "healthzMaxMs": round(max(latencies) * 1000, 1),
        "healthzMedianMs": round(statistics.median(latencies) * 1000, 1),
        "healthzProbes": len(latencies),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--changes", type=int, default=15_000)
    parser.add_argument("--postgres-admin-url")
    args = parser.parse_args(argv)
    if args.postgres_admin_url:
        with servers.postgres_database(args.postgres_admin_url, "bench_undo") as url:
            print(json.dumps({"database": "postgresql", **run(url, args.changes)}))
        return
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{directory}/undo.db"
        print(json.dumps({"database": "sqlite", **run(url, args.changes)}))


if __name__ == "__main__":
    main()
