"""The client host of the fleet's time-trigger test (``python -m tests.fleet.trigger_client``).

Reads its settings as JSON from the first line of stdin, then:

1. runs a webhook receiver on its own address and waits for the service hosts;
2. subscribes a URL of the receiver with a read key (``calendar.event.starting`` at 0 and 1
   minute before, and ``calendar.event.ended``), beside the owner's own webhook (set by the
   test with ``--minutes-before 0 --ended``);
3. creates single events and daily series over both service hosts, each starting a second
   after the last, about a minute and a bit from now, five seconds long;
4. waits until every trigger of theirs has fallen due and been fired, and every delivery has
   succeeded;
5. prints one JSON object: what is expected, what the database queued, what arrived.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import uvicorn

from tests.fleet.client import wait_until
from webhooks.listener import libpq_url

EVENTS = "/api/v1/calendar/events"
SUBSCRIPTIONS = "/api/v1/webhooks/subscriptions"
TIME_TYPES = ("calendar.event.starting", "calendar.event.ended")


class Receiver:
    """Notes every request: which URL, its webhook-id, type and trigger, when."""

    def __init__(self) -> None:
        self.arrivals: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        payload = json.loads(body)
        data = payload["data"]
        self.arrivals.append(
            {
                "path": scope["path"],
                "webhookId": dict(scope["headers"])[b"webhook-id"].decode(),
                "type": payload["type"],
                "eventId": data["event"]["id"],
                "minutesBefore": data.get("minutesBefore"),
                "scheduledFor": data.get("scheduledFor"),
                "late": data.get("late"),
                "at": time.time(),
            }
        )
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _z(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


async def main(cfg: dict[str, Any]) -> dict[str, Any]:
    receiver = Receiver()
    server = uvicorn.Server(
        uvicorn.Config(
            receiver, host=cfg["address"], port=cfg["port"], log_level="warning", lifespan="off"
        )
    )
    serving = asyncio.create_task(server.serve())
    db = await psycopg.AsyncConnection.connect(libpq_url(cfg["databaseUrl"]), autocommit=True)
    hosts = cfg["serviceUrls"]
    write = {"Authorization": f"Bearer {cfg['writeKey']}"}
    read = {"Authorization": f"Bearer {cfg['readKey']}"}
    base = f"http://{cfg['address']}:{cfg['port']}"
    async with httpx.AsyncClient(timeout=30) as http:

        async def services_up() -> bool:
            try:
                answers = [await http.get(f"{url}/healthz") for url in hosts]
            except httpx.TransportError:
                return False
            return all(a.status_code == 200 for a in answers) and server.started

        await wait_until(services_up, timeout=300, what="the service hosts")
        made = await http.post(
            f"{hosts[1]}{SUBSCRIPTIONS}",
            headers=read,
            json={"url": f"{base}/sub", "events": list(TIME_TYPES), "minutesBefore": [0, 1]},
        )
        assert made.status_code == 201, made.text
        first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=cfg["lead"])
        expected: list[tuple[str, str]] = []  # (occurrence id, its start)
        for n in range(cfg["singles"] + cfg["series"]):
            start = first + timedelta(seconds=n)
            body: dict[str, Any] = {
                "title": f"trigger {n}",
                "startsAt": _z(start),
                "endsAt": _z(start + timedelta(seconds=5)),
            }
            series = n >= cfg["singles"]
            if series:
                body["recurrence"] = ["RRULE:FREQ=DAILY;COUNT=3"]
            answer = await http.post(f"{hosts[n % len(hosts)]}{EVENTS}", headers=write, json=body)
            assert answer.status_code == 201, answer.text
            event_id = answer.json()["id"]
            if series:
                event_id += "_" + start.strftime("%Y%m%dT%H%M%SZ")
            expected.append((event_id, _z(start)))
        last_due = first + timedelta(seconds=len(expected) + 5)

    async def settled() -> bool:
        if datetime.now(UTC) < last_due + timedelta(seconds=1):
            return False
        cur = await db.execute(
            "SELECT (SELECT count(*) FROM trigger_plan WHERE status = 'planned' "
            "AND due_at <= %s), (SELECT count(*) FROM webhook_deliveries "
            "WHERE status IN ('pending', 'retrying'))",
            (last_due,),
        )
        row = await cur.fetchone()
        return row is not None and row == (0, 0)

    await wait_until(settled, timeout=300, what="every trigger fired and delivered")
    rows = await (
        await db.execute(
            "SELECT d.id, e.url, d.event_type, d.status, d.payload FROM webhook_deliveries d "
            "JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.event_type = ANY(%s)",
            (list(TIME_TYPES),),
        )
    ).fetchall()
    queued = []
    for delivery_id, url, event_type, status, payload in rows:
        data = json.loads(payload)["data"]
        queued.append(
            {
                "id": delivery_id,
                "path": url.rsplit("/", 1)[-1],
                "type": event_type,
                "status": status,
                "eventId": data["event"]["id"],
                "minutesBefore": data["minutesBefore"],
            }
        )
    plan = await (
        await db.execute("SELECT status, count(*) FROM trigger_plan GROUP BY status")
    ).fetchall()
    await db.close()
    server.should_exit = True
    await serving
    return {
        "expected": expected,
        "queued": queued,
        "arrivals": receiver.arrivals,
        "plan": dict(plan),
    }


if __name__ == "__main__":
    settings = json.loads(sys.stdin.readline())
    print(json.dumps(asyncio.run(main(settings))), flush=True)
