"""Time triggers on a fleet (real hosts in network namespaces, as ``test_fleet``): a database
host with its own PostgreSQL, two service hosts each running ``calendar-service serve``, a
worker host running ``calendar-service worker`` (three processes planning and firing), and
a client host that receives the webhooks (``trigger_client``).

A key's subscription (``starting`` at 0 and 1 minute before, ``ended``) and the owner's own
webhook (``starting`` at 0, ``ended``) hear of single events and of the first occurrences of
daily series, created over both service hosts to start a second apart a minute from now.
Asserted: each (endpoint, occurrence, offset) was queued exactly once (none doubled, none
lost), every one of those deliveries succeeded and arrived once, nothing was skipped, and no
process logged an error.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.hosts import Fleet, missing_requirements, start_postgres
from tests.fleet.test_fleet import CLI, _tails, env_for, read_line
from tests.fleet.trigger_client import TIME_TYPES

SINGLES, SERIES = 12, 4
LEAD = 75  # seconds from the client's creates to the first start (the 1-minute offset first)

pytestmark = pytest.mark.postgresql  # the fleet test runs in the PostgreSQL leg (own PostgreSQL)


def _key(fleet: Fleet, host: Any, env: dict[str, str], permission: str) -> str:
    made = fleet.run(
        host,
        [CLI, "keys", "create", "--user", "fleet@example.com", "--name", permission,
         "--permission", permission, "--json"],
        env=env,
    )  # fmt: skip
    return str(json.loads(made)["secret"])


def test_a_fleet_fires_each_trigger_once_none_doubled_none_lost(tmp_path: Path) -> None:
    missing = missing_requirements()
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{missing} (CI must run the fleet test)")
        pytest.skip(missing)
    with Fleet() as fleet:
        db_host = fleet.add_host("db", 10)
        first, second = fleet.add_host("svc1", 21), fleet.add_host("svc2", 22)
        worker_host, client_host = fleet.add_host("worker", 30), fleet.add_host("client", 50)
        database_url = start_postgres(fleet, db_host)
        env = env_for(database_url)
        fleet.run(client_host, [CLI, "migrate"], env=env)
        fleet.run(client_host, [CLI, "users", "create", "fleet@example.com"], env=env)
        write, read = _key(fleet, client_host, env, "write"), _key(fleet, client_host, env, "read")
        fleet.run(
            client_host,
            [CLI, "webhook", "set", "--user", "fleet@example.com", "--url",
             f"http://{client_host.address}:8080/own", "--minutes-before", "0", "--ended"],
            env=env,
        )  # fmt: skip
        logs = tmp_path
        services = [
            fleet.spawn(
                host,
                [CLI, "serve", "--host", host.address, "--port", "8000", "--log-level", "warning"],
                env=env,
                log=logs / f"{host.name}.log",
            )
            for host in (first, second)
        ]
        worker = fleet.spawn(
            worker_host, [CLI, "worker", "--log-level", "warning"], env=env, log=logs / "worker.log"
        )
        client = fleet.spawn(
            client_host,
            [sys.executable, "-m", "tests.fleet.trigger_client"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            log=logs / "client.log",
        )
        assert client.stdin is not None
        settings = {
            "address": client_host.address,
            "port": 8080,
            "databaseUrl": database_url,
            "serviceUrls": [f"http://{h.address}:8000" for h in (first, second)],
            "writeKey": write,
            "readKey": read,
            "singles": SINGLES,
            "series": SERIES,
            "lead": LEAD,
        }
        client.stdin.write((json.dumps(settings) + "\n").encode())
        client.stdin.flush()
        answer = read_line(client, [client, *services, worker], timeout=900, logs=logs)
        assert client.wait(timeout=120) == 0, _tails(logs)
    result: dict[str, Any] = json.loads(answer)
    _check(result)
    for log in logs.glob("*.log"):
        assert " ERROR " not in log.read_text(errors="replace"), _tails(logs)


def _check(result: dict[str, Any]) -> None:
    occurrences = [event_id for event_id, _ in result["expected"]]
    assert len(occurrences) == SINGLES + SERIES
    wanted = Counter(
        [("sub", o, "calendar.event.starting", m) for o in occurrences for m in (0, 1)]
        + [("sub", o, "calendar.event.ended", 0) for o in occurrences]
        + [("own", o, "calendar.event.starting", 0) for o in occurrences]
        + [("own", o, "calendar.event.ended", 0) for o in occurrences]
    )
    queued = result["queued"]
    got = Counter((q["path"], q["eventId"], q["type"], q["minutesBefore"]) for q in queued)
    assert got == wanted  # each once: none doubled, none lost
    assert {q["status"] for q in queued} == {"succeeded"}
    timed = [a for a in result["arrivals"] if a["type"] in TIME_TYPES]
    arrived = Counter(a["webhookId"] for a in timed)
    assert arrived == Counter({q["id"]: 1 for q in queued})
    assert result["plan"].get("skipped", 0) == 0
    late = sorted(a["late"] for a in timed)
    print(  # for the record (pytest -s): how late the triggers went out
        f"fleet triggers: {len(queued)} deliveries, each once; late p50 "
        f"{statistics.median(late)} s, max {late[-1]} s"
    )
