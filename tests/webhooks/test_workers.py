"""Delivery jobs as workers: woken on commit, and several sharing one outbox."""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter

import pytest
from sqlalchemy import text

from calendar_service.calendar import events
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utcnow
from tests.support import wait_for
from tests.webhooks.support import Receiver, deliveries, make_owner, running_job, set_webhook
from webhooks.http11 import WebhookClient
from webhooks.transport import make_client


def add_events(db: Database, owner_id: str, count: int) -> None:
    """``count`` events created in one transaction (so ``count`` deliveries commit at once)."""
    principal = events.owner_principal(owner_id)
    data = EventCreate(
        title="Sync", starts_at="2026-03-02T09:00:00Z", ends_at="2026-03-02T09:30:00Z"
    )

    def work(conn: object) -> None:
        for _ in range(count):
            events.create_event(conn, principal=principal, data=data, now=utcnow())  # type: ignore[arg-type]

    db.call(work)


def test_a_committed_change_is_sent_at_once_not_at_the_next_poll(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner = make_owner(quiet_db)
    url = plain_receiver.url()
    set_webhook(quiet_db, owner, url)
    with running_job(quiet_db.config, quiet_db, poll_interval=60):
        for _ in range(3):
            seen = len(plain_receiver.received(url))
            add_events(quiet_db, owner.id, 1)
            # The next poll is a minute away: a delivery within a third of that was woken by
            # the commit. (How soon is measured in bench/webhooks.py, not asserted here.)
            wait_for(lambda s=seen: plain_receiver.received(url)[s:], timeout=20, what="it")


@pytest.mark.postgresql  # FOR UPDATE SKIP LOCKED
def test_two_workers_draining_one_outbox_deliver_each_message_exactly_once(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    count = 300
    owner = make_owner(quiet_db)
    url = plain_receiver.url()
    set_webhook(quiet_db, owner, url)
    sent: Counter[str] = Counter()

    def counting_client(name: str) -> WebhookClient:
        async def count_request(url: str) -> None:
            sent[name] += 1

        client = make_client()
        client.before_request.append(count_request)
        return client

    # The default 10 s deadline: a time-out (a failure) would rightly cause a second send.
    config = dataclasses.replace(quiet_db.config, webhook_timeout_seconds=10.0)
    with contextlib.ExitStack() as stack:
        for name in ("first", "second"):
            own_db = Database(config)  # its own engine and connections, as in another process
            stack.callback(own_db.close)
            stack.enter_context(
                running_job(
                    config,
                    own_db,
                    client=counting_client(name),
                    poll_interval=0.05,
                    batch_size=10,
                    max_in_flight=40,
                )
            )
        add_events(quiet_db, owner.id, count)
        wait_for(lambda: len(plain_receiver.received(url)) >= count, timeout=30, what="all")
        wait_for(
            lambda: all(d["status"] == "succeeded" for d in deliveries(quiet_db, owner, 1000)),
            timeout=30,
            what="every delivery to be recorded",
        )
    assert {d["attempts"] for d in deliveries(quiet_db, owner, limit=1000)} == {1}
    ids = Counter(r.headers["webhook-id"] for r in plain_receiver.received(url))
    assert len(ids) == count and set(ids.values()) == {1}
    assert sent["first"] > 0 and sent["second"] > 0 and sum(sent.values()) == count


def listener_pids(db: Database) -> list[int]:
    """The server processes of the workers' LISTEN connections on ``db``'s database."""
    return db.call(
        lambda conn: list(
            conn.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'"
                )
            ).scalars()
        )
    )


@pytest.mark.postgresql  # LISTEN/NOTIFY
def test_a_commit_in_another_process_wakes_the_worker_at_once_and_after_a_lost_connection(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner = make_owner(quiet_db)
    url = plain_receiver.url()
    set_webhook(quiet_db, owner, url)
    writer = Database(quiet_db.config)  # its own engine, no wake-up hook: as another process
    try:
        with running_job(quiet_db.config, quiet_db, poll_interval=60):
            wait_for(lambda: listener_pids(writer), what="the worker to LISTEN")
            for round_ in range(2):
                seen = len(plain_receiver.received(url))
                add_events(writer, owner.id, 1)
                # Well before the next poll (a minute away): woken by the NOTIFY.
                wait_for(lambda s=seen: plain_receiver.received(url)[s:], timeout=30, what="it")
                if round_ == 0:  # the LISTEN connection is cut: the worker connects again
                    [pid] = listener_pids(writer)
                    writer.call(
                        lambda conn, p=pid: conn.execute(
                            text("SELECT pg_terminate_backend(:pid)"), {"pid": p}
                        )
                    )
                    wait_for(
                        lambda p=pid: (pids := listener_pids(writer)) and p not in pids,
                        timeout=30,
                        what="the worker to LISTEN again",
                    )
    finally:
        writer.close()
