"""The dispatcher under a slow receiver and a time trigger's ``late``: an endpoint that never
answers holds only its own slots (on PostgreSQL, on two hosts), and ``late`` says the seconds
from the trigger's due instant to its first attempt's send, by the dispatcher's clock."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from starlette.types import Receive, Scope, Send

from bench.webhooks import read_body
from calendar_service.calendar import events
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.delivery.triggers import firing, planner
from calendar_service.delivery.webhook_settings import deliveries_t
from calendar_service.journal import webhook_outbox as outbox
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from tests.support import (
    POSTGRES_ADMIN_URL,
    fresh_database_url,
    migrated_database,
    run_server,
    wait_for,
)
from tests.webhooks.conftest import hooks_config_for
from tests.webhooks.support import Receiver, make_owner, running_job, set_webhook
from webhooks.dispatcher import Dispatcher
from webhooks.transport import make_client


class HangingAndHealthy:
    """One receiver (one host and port) with two paths: ``/hang`` reads the request and never
    answers (until ``release``), ``/ok`` answers 204 at once and notes each message id."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.hanging = 0  # requests to /hang waiting for an answer now
        self.healthy: set[str] = set()
        self.base_url = ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await read_body(receive)
        if scope["path"] == "/hang":
            with self.lock:
                self.hanging += 1
            # Never answered while the test looks: a thread waits for the release, not a timer.
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait)
            with self.lock:
                self.hanging -= 1
        else:
            headers = dict(scope["headers"])
            with self.lock:
                self.healthy.add(headers[b"webhook-id"].decode())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@contextlib.contextmanager
def hanging_and_healthy() -> Iterator[HangingAndHealthy]:
    app = HangingAndHealthy()
    with run_server(app) as running:
        app.base_url = running.url
        try:
            yield app
        finally:
            app.release.set()


@contextlib.contextmanager
def answered_at_the_end(receiver: HangingAndHealthy) -> Iterator[None]:
    """The hanging requests answered before the delivery jobs stop (which wait for them)."""
    try:
        yield
    finally:
        receiver.release.set()


def queue(db: Database, owner_id: str, count: int, at: datetime) -> list[str]:
    """``count`` deliveries to the owner's webhook, due at ``at``, in one transaction."""
    endpoint = db.call(webhook_config.get_endpoint, user_id=owner_id)

    def work(conn: object) -> list[str]:
        return [
            outbox.enqueue(
                conn,  # type: ignore[arg-type]
                user_id=owner_id,
                endpoint_id=endpoint["id"],
                event_type="calendar.event.created",
                data={"n": n},
                now=at,
            )
            for n in range(count)
        ]

    return db.call(work)


@contextlib.contextmanager
def hosts(config: Config, db: Database) -> Iterator[None]:
    """The delivery job as one host runs it; on PostgreSQL two, each with its own pool."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(running_job(config, db, run_triggers=False))
        if POSTGRES_ADMIN_URL:  # a second host
            other = stack.enter_context(migrated_database(config))
            stack.enter_context(running_job(config, other, run_triggers=False))
        yield


def test_an_endpoint_that_never_answers_holds_only_its_own_slots_and_another_on_its_host_gets_all(
    tmp_path: Path,
) -> None:
    count = 40
    # The deadline outlasts the test: the hanging attempts stay in flight throughout.
    with (
        fresh_database_url(tmp_path) as url,
        migrated_database(hooks_config_for(url, webhook_timeout_seconds=600)) as db,
        hanging_and_healthy() as receiver,
    ):
        slow, healthy = make_owner(db), make_owner(db)
        set_webhook(db, slow, receiver.base_url + "/hang")
        set_webhook(db, healthy, receiver.base_url + "/ok")
        # The hanging endpoint's deliveries are older: claimed (and queued for the host's
        # connections) first.
        earlier = datetime.now(UTC) - timedelta(minutes=1)
        hanging = queue(db, slow.id, count, earlier)
        wanted = set(queue(db, healthy.id, count, earlier + timedelta(seconds=1)))
        with hosts(db.config, db), answered_at_the_end(receiver):
            wait_for(lambda: receiver.healthy >= wanted, timeout=120, what="the healthy 40")
            with receiver.lock:
                in_flight = receiver.hanging
            # Meanwhile none of the hanging endpoint's was answered: each waits for its
            # receiver, or for a connection to it, or for its turn in the claim.
            rows = db.call(
                lambda conn: conn.execute(
                    deliveries_t.select().where(deliveries_t.c.id.in_(hanging))
                ).all()
            )
            assert {(r.status, r.attempts) for r in rows} == {("pending", 0)}
            assert in_flight >= 1


def test_a_time_triggers_late_is_the_seconds_from_its_due_instant_to_its_first_attempt(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    due = datetime(2027, 3, 20, 10, 0, tzinfo=UTC)
    owner = make_owner(quiet_db)
    url = plain_receiver.url(500, 200)  # the first attempt fails, the retry is answered
    set_webhook(quiet_db, owner, url)
    quiet_db.call(
        webhook_config.set_time_triggers,
        user_id=owner.id,
        minutes_before=[0],
        ended=False,
        now=due - timedelta(hours=2),
    )
    quiet_db.call(
        events.create_event,
        principal=events.owner_principal(owner.id),
        data=EventCreate(title="Call", starts_at=due.isoformat(), ends_at="2027-03-20T10:30:00Z"),
        now=due - timedelta(hours=2),
    )
    quiet_db.call(lambda conn: conn.execute(deliveries_t.delete()))  # the change's own
    grace = timedelta(hours=1)
    quiet_db.call(planner.plan, now=due - timedelta(minutes=30), grace=grace)
    fired = quiet_db.call(firing.fire_due, now=due + timedelta(seconds=3), grace=grace)
    assert fired.deliveries == 1
    # The dispatcher's clock: the first attempt is sent 42.7 s after the due instant, the
    # retry an hour later.
    clock = [due + timedelta(seconds=42.7)]
    dispatcher = Dispatcher(quiet_db, quiet_db.config, make_client(), now=lambda: clock[0])

    async def send_all() -> None:
        await dispatcher.drain()
        clock[0] += timedelta(hours=1)
        await dispatcher.drain()
        await dispatcher.client.aclose()

    asyncio.run(send_all())
    first, retry = plain_receiver.received(url)
    assert orjson.loads(first.body)["data"]["late"] == 42
    assert orjson.loads(first.body)["data"]["scheduledFor"] == "2027-03-20T10:00:00Z"
    # The retry is the same message, body and all (Standard Webhooks): late says the first.
    assert retry.body == first.body
    assert retry.headers["webhook-id"] == first.headers["webhook-id"]
