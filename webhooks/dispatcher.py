"""Drain the outbox: claim due deliveries, send them concurrently, record every attempt.

``Dispatcher.tick()`` is the scheduled job's body: it claims as many due deliveries as there is
room for (``max_in_flight``), starts one task per delivery and returns at once; each task sends
one attempt through the shared ``http11.WebhookClient`` and records it.

Each receiver (an origin: scheme, host and port) gets at most ``per_origin`` requests at a
time, as many as the shared client keeps connections to it (``http11.PER_ORIGIN``, 16), so that
a request waits here, in a queue that costs the same however long it is, never in the client;
one endpoint gets at most ``per_origin - 1`` of them (and ``per_endpoint``), so that another
endpoint on the same receiver always has one while this one's go unanswered. Claims take up to
``batch_size`` (250) at a time, and a worker holds up to ``max_in_flight`` (1,000) deliveries
claimed and not yet recorded. Of one endpoint it holds about ``held_seconds`` (2 s) of work at
the pace its attempts go (from ``per_endpoint`` to ``endpoint_most``, 256; ``per_endpoint *
endpoint_backlog``, 64, before its first answer), and only ``failing_cap`` (4) while its last
attempt failed; endpoints at their mark are left out of the next claims. Claims
(``deliveries.claim_due``) take the deliveries of endpoints in good standing first and those of
failing endpoints (``failing_since``: on every worker alike) ``failing_cap`` a claim. So a
receiver that hangs or fails holds up only its own deliveries, never another owner's nor the
next claim, and a burst to a quick receiver is claimed in a few transactions.

A time trigger's body gets its ``late`` at its first attempt's send (``_stamped``:
``triggers.firing.stamp_late``, by the injected clock), recorded with the attempt, so a retry
sends the same bytes.

Leases are short (15 s) and renewed every third of a lease while a delivery is held
(``renew``, run by the scheduler), so that what a dead worker held is sent again by another
within a lease and a poll.

``wake()`` asks for a tick soon and is safe from any thread: the app points
``Database.on_outbox_commit`` at it, and on PostgreSQL ``listener`` calls it for every commit
that queued a delivery on any host, so a committed change is claimed within milliseconds
instead of at the next poll. Failed attempts schedule a wake-up for their retry time. The clock
(``now``) and the random source for jitter are injected.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from calendar_service.delivery import deliveries, webhook_targets
from calendar_service.delivery.triggers import firing
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import format_utc, utcnow
from webhooks import http11, sender
from webhooks.http11 import WebhookClient

logger = logging.getLogger("webhooks")

DEFAULT_LEASE = timedelta(seconds=15)
RECORD_WINDOW = 0.02  # seconds: attempts finishing this close together share a transaction


class Dispatcher:
    """Claims, sends and records webhook deliveries for one process (see module doc)."""

    def __init__(
        self,
        db: Database,
        config: Config,
        client: WebhookClient,
        *,
        now: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        resolver: webhook_targets.Resolve = webhook_targets.system_resolve,
        batch_size: int = 250,
        max_in_flight: int = 1000,
        per_endpoint: int = 16,
        endpoint_backlog: int = 4,
        endpoint_most: int = 256,
        held_seconds: float = 2.0,
        failing_cap: int = 4,
        per_origin: int = http11.PER_ORIGIN,
        lease: timedelta = DEFAULT_LEASE,
    ) -> None:
        # Leases are renewed every third of their length while held, so a claimed delivery
        # may wait for its endpoint as long as it takes; a short lease is what lets another
        # worker send what a dead one held soon (within a lease and a poll).
        if lease < timedelta(seconds=3):
            raise ValueError("the lease must be at least 3 s")
        self.db = db
        self.config = config
        self.client = client
        self.now = now
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.resolver = resolver
        self.batch_size = batch_size
        self.max_in_flight = max_in_flight
        # An endpoint's requests at a time: never all of its receiver's, so that another
        # endpoint on the same receiver always has one while this one's go unanswered.
        self.per_endpoint = max(1, min(per_endpoint, per_origin - 1))
        self.endpoint_cap = per_endpoint * endpoint_backlog
        self.endpoint_most = max(self.endpoint_cap, endpoint_most)
        self.held_seconds = held_seconds
        self.failing_cap = max(1, failing_cap)
        self.per_origin = per_origin
        # While deliveries are held, a claim waits for this much room: a full worker whose
        # deliveries finish one at a time claimed one at a time, a transaction a delivery.
        self.claim_at_least = max(1, min(batch_size, max_in_flight // 4))
        self.lease = lease
        # How a wake-up gets a tick run; the scheduler routes it through its job.
        self.kick: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._held: Counter[str] = Counter()  # endpoint id → deliveries claimed, not done
        self._failing: set[str] = set()  # endpoints held whose last attempt failed
        self._pace: dict[str, float] = {}  # endpoint held → its attempts' seconds (average)
        self._at_cap: set[str] = set()  # endpoints left out of a claim, or given back
        self._to_record: list[
            tuple[deliveries.Claim, sender.AttemptResult, asyncio.Future[deliveries.Outcome]]
        ] = []
        self._recorder: asyncio.Task[None] | None = None  # held so it is not collected
        self._recording = False
        self._slots: dict[str, asyncio.Semaphore] = {}  # per endpoint held
        self._origins: dict[tuple[str, str, int | None], _Origin] = {}  # per origin in use
        # Claims held (claimed, not yet recorded) → their lease as now renewed; renewals and
        # recordings take turns (``_lease_turn``) so that a record never carries a stale lease.
        self._leases: dict[str, datetime] = {}
        self._lease_turn = asyncio.Lock()
        self._tick_task: asyncio.Task[Any] | None = None
        self._again = False
        self._starved = False
        self._closed = False

    # -----------------------------------------------------------------------------------------
    # Waking up

    def bind(self) -> None:
        """Remember the running event loop (call once, on it) so ``wake`` can reach it."""
        self._loop = asyncio.get_running_loop()

    def wake(self) -> None:
        """Ask for a tick soon. Safe from any thread; a no-op before ``bind`` or after close."""
        loop = self._loop
        if loop is None or self._closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._wake_on_loop)

    def _wake_on_loop(self) -> None:
        if self._closed:
            return
        if self._tick_task is not None:
            self._again = True  # the running tick claims once more before it returns
        elif self.kick is not None:
            self.kick()
        else:
            self._spawn(self.tick())

    def _wake_at(self, when: datetime) -> None:
        if self._loop is not None:
            delay = max(0.0, (when - self.now()).total_seconds())
            self._loop.call_later(delay, self._wake_on_loop)

    # -----------------------------------------------------------------------------------------
    # Claiming and sending

    async def tick(self) -> int:
        """Claim what is due (as much as there is room for) and start sending it.

        Returns how many deliveries were started. A tick that finds another running asks it to
        claim once more instead."""
        if self._closed:
            return 0
        if self._tick_task is not None:
            self._again = True
            return 0
        if self._loop is None:
            self.bind()
        self._tick_task = asyncio.current_task()
        started = 0
        try:
            while not self._closed:
                self._again = False
                room = self.max_in_flight - len(self._tasks)
                if room < self.claim_at_least and self._tasks:
                    self._starved = True  # finishing deliveries wake us up again
                    break
                want = min(room, self.batch_size)
                full = [e for e, n in self._held.items() if n >= self._cap(e)]
                self._at_cap.update(full)
                claims = await self.db.run(
                    deliveries.claim_due,
                    now=self.now(),
                    limit=want,
                    lease=self.lease,
                    exclude_endpoints=full,
                    failing_limit=self.failing_cap,
                )
                excess = []
                for claim in claims:
                    if claim.failing:
                        self._failing.add(claim.endpoint_id)
                    if self._held[claim.endpoint_id] >= self._cap(claim.endpoint_id):
                        excess.append(claim)
                        self._at_cap.add(claim.endpoint_id)
                        continue
                    self._held[claim.endpoint_id] += 1
                    self._leases[claim.id] = claim.lease_until
                    self._spawn(self._deliver(claim))
                if excess:
                    await self.db.run(deliveries.release, claims=excess)
                started += len(claims) - len(excess)
                if len(claims) < want and not self._again:
                    break
        except Exception:
            logger.exception("claiming webhook deliveries failed; trying again at the next poll")
        finally:
            self._tick_task = None
        return started

    def _cap(self, endpoint: str) -> int:
        """How many of an endpoint's deliveries this worker may hold: ``failing_cap`` while
        its last attempt failed; else about ``held_seconds`` of its work at the pace its
        attempts go (``per_endpoint`` at a time), from ``per_endpoint`` to ``endpoint_most``;
        ``endpoint_cap`` before its first answer."""
        if endpoint in self._failing:
            return self.failing_cap
        pace = self._pace.get(endpoint)
        if pace is None:
            return self.endpoint_cap
        work = int(self.per_endpoint * self.held_seconds / max(pace, 0.001))
        return max(self.per_endpoint, min(self.endpoint_most, work))

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        room = self.max_in_flight - len(self._tasks)
        if self._starved and not self._closed and (room >= self.claim_at_least or not self._tasks):
            self._starved = False
            self._wake_on_loop()

    async def _deliver(self, claim: deliveries.Claim) -> None:
        endpoint = claim.endpoint_id
        slot = self._slots.get(endpoint)
        if slot is None:
            slot = self._slots[endpoint] = asyncio.Semaphore(self.per_endpoint)
        key = _origin_of(claim.url)
        origin = self._origins.get(key)
        if origin is None:
            origin = self._origins[key] = _Origin(asyncio.Semaphore(self.per_origin))
        origin.users += 1
        try:
            # The slots bound requests to the endpoint and to its receiver: they are given
            # back as soon as the answer is in, not after the attempt is recorded (which waits
            # for its batch).
            async with slot, origin.slot:
                try:
                    now = self.now()
                    claim = _stamped(claim, now)
                    result = await self._send(claim, now)
                    seconds = result.duration_ms / 1000
                    pace = self._pace.get(endpoint)
                    self._pace[endpoint] = seconds if pace is None else 0.8 * pace + 0.2 * seconds
                except Exception:  # not network trouble (the sender reports that): a bug
                    logger.exception("webhook delivery %s: the attempt failed", claim.id)
                    return  # its lease runs out and it is sent again
            await self._finish(claim, result)
        finally:
            origin.users -= 1
            if origin.users <= 0:
                self._origins.pop(key, None)
            self._leases.pop(claim.id, None)
            self._held[endpoint] -= 1
            if self._held[endpoint] <= 0:
                del self._held[endpoint]
                self._slots.pop(endpoint, None)
                self._failing.discard(endpoint)  # a claim says again (``Claim.failing``)
                self._pace.pop(endpoint, None)
                if endpoint in self._at_cap:
                    self._at_cap.discard(endpoint)
                    self._wake_on_loop()
            elif endpoint in self._at_cap and self._held[endpoint] <= self._cap(endpoint) // 2:
                self._at_cap.discard(endpoint)
                self._wake_on_loop()  # room again for this endpoint's waiting deliveries

    async def _send(self, claim: deliveries.Claim, now: datetime) -> sender.AttemptResult:
        return await sender.attempt(
            self.client,
            url=claim.url,
            msg_id=claim.id,
            body=claim.payload.encode(),
            secrets=list(claim.secrets),
            seed_header=self.config.signature_header,
            allow_local=self.config.webhook_allow_local,
            deadline=self.config.webhook_timeout_seconds,
            now=now,
            resolver=self.resolver,
        )

    async def _finish(self, claim: deliveries.Claim, result: sender.AttemptResult) -> None:
        try:
            outcome = await self._record(claim, result)
        except Exception:
            # Recorded nowhere: the lease runs out and the delivery is sent again.
            logger.exception("webhook delivery %s: the attempt could not be recorded", claim.id)
            return
        _log(claim, result, outcome)
        if outcome.status != "lost" and claim.endpoint_id in self._held:
            if result.ok:
                self._failing.discard(claim.endpoint_id)
            else:
                self._failing.add(claim.endpoint_id)
        if outcome.next_attempt_at is not None:
            self._wake_at(outcome.next_attempt_at)

    async def _record(
        self, claim: deliveries.Claim, result: sender.AttemptResult
    ) -> deliveries.Outcome:
        """Record an attempt together with the others that finish within a few milliseconds:
        one transaction for the lot (the request has been sent; only its record waits)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[deliveries.Outcome] = loop.create_future()
        self._to_record.append((claim, result, done))
        if not self._recording:
            self._recording = True
            loop.call_later(RECORD_WINDOW, self._start_recording)
        return await done

    def _start_recording(self) -> None:
        self._recorder = asyncio.get_running_loop().create_task(self._record_batches())

    async def _record_batches(self) -> None:
        try:
            while self._to_record:
                batch, self._to_record = self._to_record, []
                try:
                    async with self._lease_turn:  # the leases as renewed last
                        items = [(self._renewed(claim), result) for claim, result, _ in batch]
                        outcomes = await self.db.run(
                            deliveries.record_attempts,
                            items=items,
                            now=self.now(),
                            schedule=self.config.webhook_retry_schedule,
                            rng=self.rng,
                        )
                except Exception as exc:
                    for _, _, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                else:
                    for (_, _, done), outcome in zip(batch, outcomes, strict=True):
                        if not done.done():  # cancelled by a shutdown past its grace
                            done.set_result(outcome)
        finally:
            self._recording = False
            self._recorder = None

    # -----------------------------------------------------------------------------------------
    # Leases

    @property
    def renew_every(self) -> float:
        """Seconds between lease renewals: a third of a lease."""
        return self.lease.total_seconds() / 3

    def _renewed(self, claim: deliveries.Claim) -> deliveries.Claim:
        lease_until = self._leases.get(claim.id, claim.lease_until)
        if lease_until == claim.lease_until:
            return claim
        return dataclasses.replace(claim, lease_until=lease_until)

    async def renew(self) -> int:
        """Extend the lease of every delivery held (waiting for its endpoint, being sent, or
        waiting to be recorded) by a whole lease from now; how many were renewed. The scheduler
        runs it every third of a lease (``renew_every``), also while closing. A worker that
        dies stops renewing: what it held is due again within one lease."""
        async with self._lease_turn:
            held = dict(self._leases)
            if not held:
                return 0
            try:
                lease_until = self.now() + self.lease
                renewed = await self.db.run(deliveries.renew, held=held, lease_until=lease_until)
            except Exception:
                logger.exception("renewing webhook leases failed; trying again shortly")
                return 0
            for delivery_id in renewed:
                if delivery_id in self._leases:
                    self._leases[delivery_id] = lease_until
        return len(renewed)

    # -----------------------------------------------------------------------------------------
    # Draining and stopping

    async def drain(self) -> None:
        """Send everything due now and wait until it is recorded (tests, benchmarks)."""
        while True:
            started = await self.tick()
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            elif not started:
                return

    async def close(self, grace: float = 15.0) -> None:
        """Stop claiming; let attempts under way finish (cancelled after ``grace`` seconds, in
        which case their leases run out and another worker sends them again)."""
        self._closed = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while True:
            pending: set[Awaitable[Any]] = set(self._tasks)
            if self._tick_task is not None:
                pending.add(self._tick_task)
            remaining = deadline - loop.time()
            if not pending or remaining <= 0:
                break
            await asyncio.wait(pending, timeout=remaining)  # type: ignore[type-var]
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            logger.warning("%d webhook attempts cut short by shutdown", len(self._tasks))
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _stamped(claim: deliveries.Claim, now: datetime) -> deliveries.Claim:
    """A time trigger's first attempt, its body's ``late`` set for a send at ``now``
    (``firing.stamp_late``; recorded with the attempt, so a retry sends the same body)."""
    if claim.attempts or claim.stamped:
        return claim
    body = firing.stamp_late(claim.payload, now)
    if body is None:
        return claim
    return dataclasses.replace(claim, payload=body, stamped=True)


@dataclasses.dataclass(slots=True)
class _Origin:
    """A receiver's slots (``per_origin``), and how many deliveries held use them."""

    slot: asyncio.Semaphore
    users: int = 0


def _origin_of(url: str) -> tuple[str, str, int | None]:
    """The receiver a URL's requests go to: scheme, host and port, as the client keeps its
    connections (``http11.WebhookClient``; a URL the sender will refuse gets a slot of its own)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "", url, None
    if port == _DEFAULT_PORTS.get(parts.scheme):
        port = None  # one key whether the port is written or not
    return parts.scheme, (parts.hostname or ""), port


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _log(
    claim: deliveries.Claim, result: sender.AttemptResult, outcome: deliveries.Outcome
) -> None:
    # Ids, status codes and short errors only: never a URL, a body or a secret.
    if outcome.status == "succeeded":
        logger.debug("webhook delivery %s: delivered (%s)", claim.id, result.status_code)
        return
    what = result.error or f"HTTP {result.status_code}"
    if outcome.status == "retrying" and outcome.next_attempt_at is not None:
        logger.info(
            "webhook delivery %s: attempt %d failed (%s); retrying at %s",
            claim.id,
            claim.attempts + 1,
            what,
            format_utc(outcome.next_attempt_at),
        )
    else:
        logger.warning(
            "webhook delivery %s: attempt %d failed (%s); %s%s",
            claim.id,
            claim.attempts + 1,
            what,
            outcome.status,
            " and the endpoint was disabled" if outcome.endpoint_disabled else "",
        )
