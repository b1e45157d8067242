"""Claiming, leases and the retry arithmetic, driven with an injected clock."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from datetime import UTC, datetime, timedelta

from calendar_service.calendar import events
from calendar_service.delivery import deliveries as store
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.journal import webhook_outbox as outbox
from calendar_service.platform.db import Database
from calendar_service.platform.models import EventCreate
from calendar_service.platform.timeutil import utcnow
from tests.support import Owner
from tests.webhooks.support import Receiver, deliveries, delivery, make_owner, set_webhook
from webhooks.dispatcher import Dispatcher
from webhooks.sender import AttemptResult, parse_retry_after
from webhooks.transport import make_client

SCHEDULE = (timedelta(seconds=5), timedelta(minutes=1), timedelta(hours=2))
LEASE = timedelta(seconds=60)


def create_event(db: Database, owner: Owner, title: str = "Standup") -> dict[str, object]:
    data = EventCreate(
        title=title, starts_at="2026-03-02T09:00:00Z", ends_at="2026-03-02T09:15:00Z"
    )
    return db.call(
        events.create_event, principal=events.owner_principal(owner.id), data=data, now=utcnow()
    )


def record(
    db: Database, *attempts: tuple[store.Claim, AttemptResult], now: datetime, seed: int = 1
) -> list[store.Outcome]:
    """``store.record_attempts`` on ``SCHEDULE``, with the jitter's random numbers seeded."""
    return db.call(
        store.record_attempts,
        items=list(attempts),
        now=now,
        schedule=SCHEDULE,
        rng=random.Random(seed),
    )


def due_deliveries(db: Database, url: str, count: int = 1) -> tuple[Owner, datetime]:
    """An owner whose webhook points at ``url``, with ``count`` deliveries due; returns the
    owner and a moment (just ahead of the clock) at which they are due."""
    owner = make_owner(db)
    set_webhook(db, owner, url)
    for n in range(count):
        create_event(db, owner, f"Event {n}")
    return owner, utcnow() + timedelta(seconds=1)


def test_a_claimed_delivery_is_leased_and_claimed_again_only_after_the_lease_expires(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    _, now = due_deliveries(quiet_db, plain_receiver.url())

    [claim] = quiet_db.call(store.claim_due, now=now, limit=10, lease=LEASE)
    assert claim.lease_until == now + LEASE and claim.attempts == 0
    assert (
        quiet_db.call(
            store.claim_due, now=now + LEASE - timedelta(seconds=1), limit=10, lease=LEASE
        )
        == []
    )
    [again] = quiet_db.call(
        store.claim_due, now=now + LEASE + timedelta(seconds=1), limit=10, lease=LEASE
    )
    assert again.id == claim.id and again.lease_until > claim.lease_until


async def test_a_delivery_stranded_by_a_dead_worker_is_sent_by_another_with_the_same_id(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    url = plain_receiver.url()
    owner, start = due_deliveries(quiet_db, url)
    # The first worker claims it and dies before sending.
    [stranded] = quiet_db.call(store.claim_due, now=start, limit=10, lease=LEASE)

    clock = [start + timedelta(seconds=30)]
    survivor = Dispatcher(
        quiet_db, quiet_db.config, make_client(), now=lambda: clock[0], lease=LEASE
    )
    await survivor.drain()
    assert plain_receiver.received(url) == []  # still leased by the dead worker

    clock[0] = start + LEASE + timedelta(seconds=1)
    await survivor.drain()
    await survivor.close()
    [request] = plain_receiver.received(url)
    assert request.headers["webhook-id"] == stranded.id
    assert delivery(quiet_db, owner, stranded.id)["status"] == "succeeded"


def test_an_attempt_recorded_after_the_lease_passed_does_not_overwrite_the_new_holder(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner, now = due_deliveries(quiet_db, plain_receiver.url())
    [old] = quiet_db.call(store.claim_due, now=now, limit=10, lease=LEASE)
    later = now + LEASE + timedelta(seconds=1)
    [new] = quiet_db.call(store.claim_due, now=later, limit=10, lease=LEASE)

    late = AttemptResult(at=now, duration_ms=1.0, status_code=500, error="HTTP 500")
    [outcome] = record(quiet_db, (old, late), now=later)
    assert outcome.status == "lost"
    fresh = AttemptResult(at=later, duration_ms=1.0, status_code=204)
    [outcome] = record(quiet_db, (new, fresh), now=later)
    assert outcome.status == "succeeded"
    found = delivery(quiet_db, owner, new.id)
    assert found["status"] == "succeeded" and found["attempts"] == 1
    assert [a["statusCode"] for a in found["attemptLog"]] == [500, 204]  # both happened


def test_retries_follow_the_schedule_with_jitter_and_retry_after_up_to_the_longest() -> None:
    rng = random.Random(7)
    for number, base in enumerate(SCHEDULE, start=1):
        delay = store.next_delay(
            attempt_number=number, schedule=SCHEDULE, retry_after=None, rng=rng
        )
        assert delay is not None and base * 0.9 <= delay <= base * 1.1
    assert store.next_delay(attempt_number=4, schedule=SCHEDULE, retry_after=None, rng=rng) is None
    longer = store.next_delay(attempt_number=1, schedule=SCHEDULE, retry_after=120, rng=rng)
    assert longer == timedelta(seconds=120)
    capped = store.next_delay(attempt_number=1, schedule=SCHEDULE, retry_after=10**9, rng=rng)
    assert capped == timedelta(hours=2)
    shorter = store.next_delay(attempt_number=2, schedule=SCHEDULE, retry_after=1, rng=rng)
    assert shorter is not None and shorter >= timedelta(seconds=54)


def test_retry_after_is_read_as_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert parse_retry_after("120", now=now) == 120
    assert parse_retry_after("Mon, 02 Mar 2026 09:02:00 GMT", now=now) == 120
    assert parse_retry_after("soon", now=now) is None
    assert parse_retry_after(None, now=now) is None


def test_a_retry_after_answer_pushes_the_next_attempt_back(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner, now = due_deliveries(quiet_db, plain_receiver.url())
    [claim] = quiet_db.call(store.claim_due, now=now, limit=10, lease=LEASE)
    busy = AttemptResult(
        at=now, duration_ms=3.0, status_code=429, error="HTTP 429", retry_after=600
    )
    [outcome] = record(quiet_db, (claim, busy), now=now)
    assert outcome.status == "retrying"
    assert outcome.next_attempt_at == now + timedelta(seconds=600)
    listed = delivery(quiet_db, owner, claim.id)
    assert listed["status"] == "retrying" and listed["lastStatusCode"] == 429


def test_changes_are_recorded_as_failed_while_the_endpoint_is_disabled_and_never_claimed(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner = make_owner(quiet_db)
    set_webhook(quiet_db, owner, plain_receiver.url())
    quiet_db.call(webhook_config.disable_endpoint, user_id=owner.id, reason="test", now=utcnow())
    create_event(quiet_db, owner)
    [listed] = deliveries(quiet_db, owner)
    assert listed["status"] == "failed" and "disabled" in listed["lastError"]
    assert (
        quiet_db.call(store.claim_due, now=utcnow() + timedelta(days=1), limit=10, lease=LEASE)
        == []
    )


def test_no_webhook_means_no_delivery_row(quiet_db: Database) -> None:
    owner = make_owner(quiet_db)
    create_event(quiet_db, owner)
    assert deliveries(quiet_db, owner) == []
    assert (
        quiet_db.call(
            outbox.record_change,
            user_id=owner.id,
            event_type="calendar.event.created",
            event={},
            now=utcnow(),
        )
        is None
    )


def test_a_batch_of_attempts_is_recorded_in_one_go_and_a_410_among_them_disables_the_endpoint(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner, now = due_deliveries(quiet_db, plain_receiver.url(), count=3)
    claims = quiet_db.call(store.claim_due, now=now, limit=10, lease=LEASE)
    answers = [
        AttemptResult(at=now, duration_ms=2.0, status_code=204),
        AttemptResult(at=now, duration_ms=2.0, status_code=503, error="HTTP 503"),
        AttemptResult(at=now, duration_ms=2.0, status_code=410, error="HTTP 410"),
    ]
    outcomes = record(quiet_db, *zip(claims, answers, strict=True), now=now, seed=3)
    assert [o.status for o in outcomes] == ["succeeded", "retrying", "failed"]
    assert outcomes[2].endpoint_disabled
    endpoint = quiet_db.call(webhook_config.get_endpoint, user_id=owner.id)
    assert endpoint["status"] == "disabled" and "410" in endpoint["disabledReason"]
    by_id = {d["id"]: d for d in deliveries(quiet_db, owner)}
    # The retrying one is failed too: a disabled endpoint gets nothing more.
    assert [by_id[c.id]["status"] for c in claims] == ["succeeded", "failed", "failed"]
    assert [by_id[c.id]["lastStatusCode"] for c in claims] == [204, 503, 410]


def test_a_renewed_lease_keeps_the_delivery_from_other_workers_and_its_record_counts(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner, now = due_deliveries(quiet_db, plain_receiver.url())
    lease = timedelta(seconds=15)
    [claim] = quiet_db.call(store.claim_due, now=now, limit=10, lease=lease)
    renewed_until = now + timedelta(seconds=10) + lease
    renewed = quiet_db.call(
        store.renew, held={claim.id: claim.lease_until}, lease_until=renewed_until
    )
    assert renewed == [claim.id]
    after_first_lease = now + lease + timedelta(seconds=1)
    assert quiet_db.call(store.claim_due, now=after_first_lease, limit=10, lease=lease) == []
    held = dataclasses.replace(claim, lease_until=renewed_until)
    ok = AttemptResult(at=after_first_lease, duration_ms=1.0, status_code=204)
    [outcome] = record(quiet_db, (held, ok), now=after_first_lease)
    assert outcome.status == "succeeded"
    assert delivery(quiet_db, owner, claim.id)["status"] == "succeeded"


def test_a_lease_taken_over_by_another_worker_is_not_renewed(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    _, now = due_deliveries(quiet_db, plain_receiver.url())
    lease = timedelta(seconds=15)
    [old] = quiet_db.call(store.claim_due, now=now, limit=10, lease=lease)
    later = now + lease + timedelta(seconds=1)
    [new] = quiet_db.call(store.claim_due, now=later, limit=10, lease=lease)
    assert (
        quiet_db.call(store.renew, held={old.id: old.lease_until}, lease_until=later + lease) == []
    )
    [again] = quiet_db.call(
        store.claim_due, now=new.lease_until + timedelta(seconds=1), limit=10, lease=lease
    )
    assert again.id == old.id  # the new holder's lease stood (and ran out, unrenewed)


async def test_a_worker_renews_the_lease_of_a_delivery_it_is_still_sending(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    owner, start = due_deliveries(quiet_db, plain_receiver.url())
    lease = timedelta(seconds=15)
    clock = [start]
    answered = asyncio.Event()
    asked = asyncio.Event()

    async def held_up(url: str) -> None:  # the request waits to be let go
        asked.set()
        await answered.wait()

    client = make_client()
    client.before_request.append(held_up)
    worker = Dispatcher(quiet_db, quiet_db.config, client, now=lambda: clock[0], lease=lease)
    assert worker.renew_every == 5.0
    assert await worker.tick() == 1
    await asyncio.wait_for(asked.wait(), timeout=60)
    for seconds in (5, 10, 15, 20):  # renewed every 5 s: the lease never runs out
        clock[0] = start + timedelta(seconds=seconds)
        assert await worker.renew() == 1
        due = await quiet_db.run(store.claim_due, now=clock[0], limit=10, lease=lease)
        assert due == []
    clock[0] = start + timedelta(seconds=30)  # past the first lease by far
    answered.set()
    await worker.close()
    await client.aclose()
    found = delivery(quiet_db, owner, deliveries(quiet_db, owner)[0]["id"])
    assert found["status"] == "succeeded" and found["attempts"] == 1


def test_deliveries_to_an_endpoint_failing_now_are_claimed_after_the_others_due_a_few_a_claim(
    quiet_db: Database, plain_receiver: Receiver
) -> None:
    failing, _ = due_deliveries(quiet_db, plain_receiver.url(), count=10)  # older, but failing
    _, now = due_deliveries(quiet_db, plain_receiver.url(), count=10)
    quiet_db.call(
        lambda conn: conn.execute(
            webhook_config.endpoints_t.update()
            .where(webhook_config.endpoints_t.c.user_id == failing.id)
            .values(failing_since=now - timedelta(minutes=5))
        )
    )
    claimed = []
    for _ in range(2):
        claims = quiet_db.call(store.claim_due, now=now, limit=8, lease=LEASE, failing_limit=2)
        claimed.append(sorted((c.user_id == failing.id, c.failing) for c in claims))
    # Each claim: the failing endpoint's (older) at most 2, the others' the rest.
    assert claimed[0] == [(False, False)] * 6 + [(True, True)] * 2
    assert claimed[1] == [(False, False)] * 4 + [(True, True)] * 2
    # With nothing else due, still at most 2 of the failing endpoint's a claim.
    rest = quiet_db.call(store.claim_due, now=now, limit=8, lease=LEASE, failing_limit=2)
    assert [c.user_id for c in rest] == [failing.id] * 2
