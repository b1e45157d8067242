"""The delivery job: an APScheduler interval job running ``Dispatcher.tick``.

``serve`` enters ``delivery_job`` in the app's lifespan (unless ``--no-webhooks``);
``calendar-service worker`` runs it alone (``run_worker``). The same scheduler renews the leases
of the deliveries this worker holds (every third of a lease, ``Dispatcher.renew``). Both enter
the housekeeping job (``webhooks.housekeeping``) beside it. The job polls every
``poll_interval`` seconds (to pick up retries that fell due and expired leases) and is also run at
once whenever this process commits a change that queued a delivery (``Database.on_outbox_commit``
points at ``Dispatcher.wake``) and, on PostgreSQL, whenever any process on any host does
(``listener``: ``LISTEN/NOTIFY``; polling is the fallback when that connection is lost).
When SMTP is set, the same scheduler sends the mail outbox (``mail.MailJob``: invitations),
woken by the same commits. The same scheduler runs the time triggers' job
(``triggers.TriggerJob``: plan, fire what fell due, every second and at the moment the next
one falls due), which wakes the dispatcher whenever it queues deliveries. The same scheduler
polls the owners' connected calendars (``connections.ConnectionPoller``: a lease per
connection, so one host polls each).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from apscheduler.job import Job
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from webhooks.connections import TICK_SECONDS, ConnectionPoller
from webhooks.dispatcher import Dispatcher
from webhooks.http11 import WebhookClient
from webhooks.listener import listen
from webhooks.mail import MailJob
from webhooks.transport import make_client
from webhooks.triggers import TriggerJob

JOB_ID = "webhook-deliveries"
RENEW_JOB_ID = "webhook-leases"
TRIGGERS_JOB_ID = "time-triggers"
MAIL_JOB_ID = "mail-outbox"
CONNECTIONS_JOB_ID = "connected-calendars"
DEFAULT_POLL_SECONDS = 1.0


@contextlib.asynccontextmanager
async def delivery_job(
    config: Config,
    db: Database,
    *,
    client: WebhookClient | None = None,
    poll_interval: float = DEFAULT_POLL_SECONDS,
    run_triggers: bool = True,
    mail_options: dict[str, Any] | None = None,
    connection_options: dict[str, Any] | None = None,
    **dispatcher_options: Any,
) -> AsyncIterator[Dispatcher]:
    """Run the delivery job on the running event loop for the duration of the block, and
    the time triggers' job beside it (unless ``run_triggers`` is false).

    ``client`` is the shared ``WebhookClient`` (``make_client()`` when not given); the job
    owns it from then on and closes it on exit. Extra keyword arguments go to ``Dispatcher``."""
    http = client if client is not None else make_client()
    dispatcher = Dispatcher(db, config, http, **dispatcher_options)
    dispatcher.bind()
    scheduler = AsyncIOScheduler(timezone=UTC)
    job = _polling(scheduler, dispatcher.tick, poll_interval, JOB_ID)
    dispatcher.kick = lambda: job.modify(next_run_time=datetime.now(UTC))
    scheduler.add_job(
        dispatcher.renew,
        "interval",
        seconds=dispatcher.renew_every,
        id=RENEW_JOB_ID,
        coalesce=True,
        max_instances=1,
        misfire_grace_time=None,
    )
    triggers: TriggerJob | None = None
    if run_triggers:
        triggers = TriggerJob(db, config, wake_deliveries=dispatcher.wake)
        _polling(scheduler, triggers.tick, triggers.poll_interval, TRIGGERS_JOB_ID)
    mail: MailJob | None = None
    if config.mail_configured:  # invitations (webhooks.mail), on the same wake-ups
        mail = MailJob(db, config, **(mail_options or {}))
        mail.bind()
        mail_job = _polling(scheduler, mail.tick, poll_interval, MAIL_JOB_ID)
        mail.kick = lambda: mail_job.modify(next_run_time=datetime.now(UTC))
    poller = ConnectionPoller(db, config, **(connection_options or {}))
    scheduler.add_job(
        poller.tick,
        "interval",
        seconds=TICK_SECONDS,
        id=CONNECTIONS_JOB_ID,
        next_run_time=datetime.now(UTC),
        coalesce=True,
        max_instances=2,  # a run during another returns at once (``tick``)
        misfire_grace_time=None,
    )
    previous_hook = db.on_outbox_commit
    db.on_outbox_commit = dispatcher.wake if mail is None else _both(dispatcher.wake, mail.wake)
    scheduler.start()
    listener: asyncio.Task[None] | None = None
    if not config.is_sqlite:  # commits on other processes and hosts wake this one too
        listener = asyncio.get_running_loop().create_task(
            listen(config.database_url, dispatcher.wake)
        )
    try:
        yield dispatcher
    finally:
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        db.on_outbox_commit = previous_hook
        await poller.close()
        if triggers is not None:
            await triggers.close()
        if mail is not None:
            await mail.close()
        await dispatcher.close(grace=config.webhook_timeout_seconds + 5)
        scheduler.shutdown(wait=False)
        await http.aclose()


def _polling(
    scheduler: AsyncIOScheduler, tick: Callable[[], Awaitable[object]], seconds: float, job_id: str
) -> Job:
    """A job that polls: ``tick`` every ``seconds``, the first at once. A run while another is
    under way only asks it to run once more (each job's ``tick``), so overlapping runs are
    harmless; a low cap would only log "skipped" warnings."""
    return scheduler.add_job(
        tick,
        "interval",
        seconds=seconds,
        id=job_id,
        next_run_time=datetime.now(UTC),
        coalesce=True,
        max_instances=10,
        misfire_grace_time=None,
    )


async def run_worker(
    config: Config,
    db: Database,
    *,
    stop: asyncio.Event,
    client: WebhookClient | None = None,
    poll_interval: float = DEFAULT_POLL_SECONDS,
) -> None:
    """``calendar-service worker``: run the delivery job until ``stop`` is set."""
    async with delivery_job(config, db, client=client, poll_interval=poll_interval):
        await stop.wait()


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def wake() -> None:
        first()
        second()

    return wake
