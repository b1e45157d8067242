"""The client host of the fleet test (``python -m tests.fleet.client``, in its namespace).

Reads its settings as JSON from the first line of stdin, then:

1. runs a webhook receiver on its own address (answering each request after ``receiverDelay``
   seconds, so that the senders have deliveries in flight), and waits for the service hosts;
2. creates events with one key at ``rate`` a second for ``seconds``, alternating between the
   service hosts;
3. midway, once the receiver holds a request from the host to be killed, prints ``midway``
   and reads ``killed`` from stdin (the test has SIGKILLed that host's process group); it notes
   the deliveries leased at that moment, and 6 s later which of them still carry the same
   lease: those were held by the dead host (a live one renews every 5 s or finishes);
4. when the load is over, waits until every delivery in the database has succeeded;
5. prints one JSON object with what it saw and what the database holds (``Result``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from typing import Any

import httpx
import psycopg
import uvicorn

from webhooks.listener import libpq_url

EVENTS = "/api/v1/calendar/events"


class Receiver:
    """A webhook receiver (raw ASGI) that notes every request: id, event, time, sender, and
    ``seq``, the order in which it noted them."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.arrivals: list[dict[str, Any]] = []
        self.holding: Counter[str] = Counter()  # sender address → requests being held

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        sender = scope["client"][0]
        self.arrivals.append(
            {
                "webhookId": headers[b"webhook-id"].decode(),
                "eventId": json.loads(body)["data"]["event"]["id"],
                "at": time.time(),
                "sender": sender,
                "seq": len(self.arrivals),
            }
        )
        self.holding[sender] += 1
        try:
            await asyncio.sleep(self.delay)  # a receiver that takes its time
        finally:
            self.holding[sender] -= 1
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def wait_until(check: Any, *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.05)


async def main(cfg: dict[str, Any]) -> dict[str, Any]:
    receiver = Receiver(cfg["receiverDelay"])
    server = uvicorn.Server(
        uvicorn.Config(
            receiver, host=cfg["address"], port=cfg["port"], log_level="warning", lifespan="off"
        )
    )
    serving = asyncio.create_task(server.serve())
    db = await psycopg.AsyncConnection.connect(libpq_url(cfg["databaseUrl"]), autocommit=True)
    hosts = cfg["serviceUrls"]
    doomed = cfg["killedAddress"]
    headers = {"Authorization": f"Bearer {cfg['secret']}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:

        async def services_up() -> bool:
            try:
                answers = [await http.get(f"{url}/healthz") for url in hosts]
            except httpx.TransportError:
                return False
            return all(a.status_code == 200 for a in answers) and server.started

        # Generous: four uvicorn processes and a worker import and migrate-check at once on
        # what may be a loaded 2-core machine. The test fails at once, with the hosts' logs,
        # if one of them exits meanwhile (test_fleet.read_line).
        began = time.monotonic()
        await wait_until(services_up, timeout=300, what="the service hosts")
        print(
            f"client: the service hosts answered after {time.monotonic() - began:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        outcomes: list[dict[str, Any]] = []

        async def create(n: int) -> None:
            url = hosts[n % len(hosts)]
            body = {
                "title": f"fleet {n}",
                "startsAt": f"2026-03-02T{n % 24:02d}:00:00Z",
                "endsAt": f"2026-03-02T{n % 24:02d}:30:00Z",
            }
            try:
                answer = await http.post(f"{url}{EVENTS}", json=body)
            except httpx.TransportError as exc:
                outcomes.append({"host": url, "status": type(exc).__name__, "end": time.time()})
                return
            created = answer.json().get("id") if answer.status_code == 201 else None
            outcomes.append(
                {"host": url, "status": answer.status_code, "id": created, "end": time.time()}
            )

        kill: dict[str, Any] = {}

        async def midway(at: float) -> None:
            await asyncio.sleep(max(0.0, at - time.time()))

            async def holding() -> bool:
                return receiver.holding[doomed] > 0

            await wait_until(holding, timeout=120, what="a delivery in flight from the doomed host")
            print("midway", flush=True)
            line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            assert line.strip() == "killed", line
            kill["at"] = time.time()
            query = (
                "SELECT id, lease_until FROM webhook_deliveries "
                "WHERE status IN ('pending', 'retrying') AND lease_until > now()"
            )
            leased = dict(await (await db.execute(query)).fetchall())
            await asyncio.sleep(6.0)  # more than a renewal period (5 s): live holders renewed
            again = dict(
                await (
                    await db.execute(
                        "SELECT id, lease_until FROM webhook_deliveries "
                        "WHERE id = ANY(%s) AND status IN ('pending', 'retrying')",
                        (list(leased),),
                    )
                ).fetchall()
            )
            kill["leased"] = sorted(leased)
            kill["held"] = sorted(i for i, lease in again.items() if leased[i] == lease)

        total = int(cfg["rate"] * cfg["seconds"])
        start = time.time()
        watcher = asyncio.create_task(midway(start + cfg["seconds"] / 2))
        tasks = []
        for n in range(total):
            await asyncio.sleep(max(0.0, start + n / cfg["rate"] - time.time()))
            tasks.append(asyncio.create_task(create(n)))
        await asyncio.gather(*tasks)
        await watcher

    async def drained() -> bool:
        cur = await db.execute(
            "SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded'"
        )
        row = await cur.fetchone()
        return row is not None and row[0] == 0

    await wait_until(drained, timeout=180, what="every delivery to succeed")

    async def column(query: str) -> list[Any]:
        return [row[0] for row in await (await db.execute(query)).fetchall()]

    result = {
        "start": start,
        "outcomes": outcomes,
        "kill": kill,
        "arrivals": receiver.arrivals,
        "dbEvents": await column("SELECT id FROM events"),
        "dbDeliveries": await column("SELECT id FROM webhook_deliveries"),
        "dbAttempts": dict(
            await (
                await db.execute(
                    "SELECT delivery_id, count(*) FROM webhook_attempts GROUP BY delivery_id"
                )
            ).fetchall()
        ),
        "served": (await column("SELECT count(*) FROM calls WHERE status <> 429"))[0],
        "refused": (await column("SELECT count(*) FROM calls WHERE status = 429"))[0],
    }
    await db.close()
    server.should_exit = True
    await serving
    return result


if __name__ == "__main__":
    settings = json.loads(sys.stdin.readline())
    print(json.dumps(asyncio.run(main(settings))), flush=True)
