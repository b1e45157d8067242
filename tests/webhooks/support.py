"""A webhook receiver that records every request, a test CA, and fresh databases."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from starlette.types import Receive, Scope, Send

from bench.webhooks import read_body
from calendar_service.calendar import calendars
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery import webhook_targets
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner, wait_for
from webhooks.dispatcher import Dispatcher
from webhooks.scheduler import delivery_job


@dataclass(frozen=True)
class Reply:
    """How the receiver answers one request: a status, headers, a body, or a hold."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    hold: float = 0.0  # seconds to wait before answering (longer than the attempt deadline)


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float  # time.time() on arrival


class Receiver:
    """An ASGI app: ``POST /hook/<name>`` is recorded and answered from that name's script
    (then 200 once the script runs out)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log: dict[str, list[Received]] = defaultdict(list)
        self._scripts: dict[str, list[Reply]] = {}
        self.base_url = ""

    def path(self, *script: Reply | int) -> str:
        """A fresh path with its own script of replies."""
        name = uuid.uuid4().hex[:12]
        self._scripts[name] = [r if isinstance(r, Reply) else Reply(status=r) for r in script]
        return f"/hook/{name}"

    def url(self, *script: Reply | int) -> str:
        return self.base_url + self.path(*script)

    def received(self, url_or_path: str) -> list[Received]:
        name = url_or_path.rsplit("/", 1)[-1]
        with self._lock:
            return list(self._log[name])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            assert message["type"] == "lifespan.shutdown"
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await read_body(receive)
        name = scope["path"].rsplit("/", 1)[-1]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        with self._lock:
            self._log[name].append(Received(headers=headers, body=body, at=time.time()))
            script = self._scripts.get(name, [])
            reply = script.pop(0) if script else Reply()
        if reply.hold:
            await asyncio.sleep(reply.hold)  # a slow receiver, not a test waiting
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode(), v.encode()) for k, v in reply.headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": reply.body})


def set_webhook(db: Database, owner: Owner, url: str) -> str:
    """Set the owner's webhook through the core; returns its secret."""
    target = webhook_targets.check_endpoint_url(
        url, allow_local=True, resolve=webhook_targets.system_resolve
    )
    _, secret = db.call(webhook_config.set_endpoint, user_id=owner.id, target=target, now=utcnow())
    return secret


def delivery(db: Database, owner: Owner, delivery_id: str) -> dict[str, object]:
    """One delivery of the owner, with its attempt log."""
    return db.call(webhook_config.get_delivery, user_id=owner.id, delivery_id=delivery_id)


def deliveries(db: Database, owner: Owner, limit: int = 50) -> list[dict[str, object]]:
    """The owner's deliveries, newest first."""
    return db.call(webhook_config.list_deliveries, user_id=owner.id, limit=limit)


def make_owner(db: Database) -> Owner:
    """An owner without a password (hashing one costs a quarter of a second)."""
    email = f"hooks-{uuid.uuid4().hex[:12]}@example.com"
    data = db.call(calendars.create_owner, email=email, password=None, now=utcnow())
    return Owner(data["id"], email, data["defaultCalendarId"], "")


class Subscriber(NamedTuple):
    owner: Owner
    key: str  # a write key's secret, for the API
    secret: str  # the webhook's signing secret


def subscriber(db: Database, url: str) -> Subscriber:
    """A new owner with a write key, whose webhook points at ``url``."""
    owner = make_owner(db)
    _, key = Factory(db).key(owner)
    return Subscriber(owner, key, set_webhook(db, owner, url))


@contextlib.contextmanager
def running_job(config: Config, db: Database, **options: Any) -> Iterator[Dispatcher]:
    """The delivery job on its own event loop in a thread, like a worker process."""
    started: list[tuple[asyncio.AbstractEventLoop, asyncio.Event, Dispatcher]] = []
    failed: list[BaseException] = []

    async def main() -> None:
        stop = asyncio.Event()
        async with delivery_job(config, db, **options) as dispatcher:
            started.append((asyncio.get_running_loop(), stop, dispatcher))
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by the waiting test
            failed.append(exc)

    thread = threading.Thread(target=run, name="delivery-job", daemon=True)
    thread.start()
    wait_for(lambda: started or failed, what="the delivery job to start")
    if failed:
        raise failed[0]
    loop, stop, dispatcher = started[0]
    try:
        yield dispatcher
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        assert not thread.is_alive(), "the delivery job did not stop"
