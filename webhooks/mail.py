"""Send the mail outbox: invitations over SMTP (``CALENDAR_SMTP_URL``).

``MailJob.tick`` is a scheduled job's body (``scheduler.delivery_job`` runs it beside the
webhook deliveries when SMTP is set): it claims due messages (``delivery.mail.sending.claim_due``:
a lease, ``FOR UPDATE SKIP LOCKED`` on PostgreSQL), makes each into its RFC 5322 text
(``mail.messages.build``) and sends it with the standard library's ``smtplib``, on a thread,
one at a time; the lease is renewed while a slow server takes its time. Each attempt is
recorded; a failure is retried on the webhooks' schedule (``CALENDAR_WEBHOOK_RETRY_SCHEDULE``)
with jitter; a permanent refusal (5xx for the recipient or the message) fails at once.

``smtp://host[:port]`` (25 by default) upgrades with ``STARTTLS`` where the server offers
it; ``smtps://host[:port]`` (465) is TLS from the start; ``user:password@`` in the URL
(percent-encoded) signs in with ``AUTH``. Nothing of the URL or the message is logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import smtplib
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from calendar_service.delivery.mail import sending as outbox
from calendar_service.delivery.mail.messages import build
from calendar_service.journal.mail_queue import RETRYING
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.emails import mail_address
from calendar_service.platform.timeutil import utcnow

logger = logging.getLogger("webhooks.mail")

DEFAULT_LEASE = timedelta(seconds=15)
SMTP_TIMEOUT = 20.0  # seconds, each network operation


@dataclass(frozen=True, slots=True)
class SmtpServer:
    """Where and how to send (from ``CALENDAR_SMTP_URL``)."""

    host: str
    port: int
    tls: bool  # smtps: TLS from the start
    user: str | None
    password: str | None = field(repr=False)  # never in a log line

    @classmethod
    def from_url(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        tls = parts.scheme == "smtps"
        return cls(
            host=parts.hostname or "localhost",
            port=parts.port or (465 if tls else 25),
            tls=tls,
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )


class Permanent(Exception):
    """The server refused the message for good (a 5xx for the recipient or the data)."""


def send_one(
    server: SmtpServer,
    message: EmailMessage,
    *,
    sender: str,
    recipient: str,
    context: ssl.SSLContext | None = None,
) -> None:
    """Send ``message`` to ``recipient`` (blocking: run on a thread). Raises ``Permanent``
    for a refusal that a retry cannot change, anything else for one it may."""
    context = context or ssl.create_default_context()
    client: smtplib.SMTP
    if server.tls:
        client = smtplib.SMTP_SSL(server.host, server.port, timeout=SMTP_TIMEOUT, context=context)
    else:
        client = smtplib.SMTP(server.host, server.port, timeout=SMTP_TIMEOUT)
    with client:
        client.ehlo()
        if not server.tls and client.has_extn("starttls"):
            client.starttls(context=context)
            client.ehlo()
        if server.user is not None:
            client.login(server.user, server.password or "")
        options = ["SMTPUTF8"] if not recipient.isascii() else []
        try:
            client.send_message(
                message, from_addr=sender, to_addrs=[recipient], mail_options=options
            )
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            if codes and all(500 <= code < 600 for code in codes):
                raise Permanent(f"the server refused the recipient ({codes[0]})") from None
            raise
        except (smtplib.SMTPDataError, smtplib.SMTPSenderRefused) as exc:
            if 500 <= exc.smtp_code < 600:
                raise Permanent(f"the server refused the message ({exc.smtp_code})") from None
            raise


def _error(exc: BaseException) -> str:
    """What an attempt's failure says (no server text: it may quote the message)."""
    if isinstance(exc, Permanent):
        return str(exc)
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"SMTP error {exc.smtp_code}"
    if isinstance(exc, smtplib.SMTPException | OSError):
        return f"{type(exc).__name__}: could not send"
    return type(exc).__name__


class MailJob:
    """Claims, sends and records the mail outbox for one process (see the module doc)."""

    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        now: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        lease: timedelta = DEFAULT_LEASE,
        batch_size: int = 20,
        context: ssl.SSLContext | None = None,
    ) -> None:
        assert config.smtp_url is not None
        self.db = db
        self.config = config
        self.server = SmtpServer.from_url(config.smtp_url)
        self.now = now
        self.rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self.lease = lease
        self.batch_size = batch_size
        self.context = context
        self.kick: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running = False
        self._again = False
        self._closed = False
        self._task: asyncio.Task[Any] | None = None

    def bind(self) -> None:
        self._loop = asyncio.get_running_loop()

    def wake(self) -> None:
        """Ask for a tick soon; safe from any thread."""
        loop = self._loop
        if loop is None or self._closed or self.kick is None:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self.kick)

    async def tick(self) -> int:
        """Send what is due, batch after batch; how many messages were attempted."""
        if self._closed:
            return 0
        if self._running:
            self._again = True
            return 0
        self._running = True
        self._task = asyncio.current_task()
        done = 0
        try:
            while not self._closed:
                self._again = False
                claims = await self.db.run(
                    outbox.claim_due, now=self.now(), limit=self.batch_size, lease=self.lease
                )
                for claim in claims:
                    if self._closed:
                        break
                    await self._send(claim)
                    done += 1
                if len(claims) < self.batch_size and not self._again:
                    break
        except Exception:
            logger.exception("sending mail failed; trying again at the next poll")
        finally:
            self._running = False
            self._task = None
        return done

    async def _send(self, claim: outbox.MailClaim) -> None:
        lease_until = claim.lease_until
        work = asyncio.ensure_future(asyncio.to_thread(self._deliver, claim))
        while True:  # renew the lease while the server takes its time
            finished, _ = await asyncio.wait({work}, timeout=self.lease.total_seconds() / 3)
            if finished:
                break
            renewed = self.now() + self.lease
            await self.db.run(
                outbox.renew,
                claims=[outbox.MailClaim(claim.id, claim.attempts, lease_until, "", "")],
                lease_until=renewed,
            )
            lease_until = renewed
        error: str | None = None
        permanent = False
        try:
            work.result()
        except Exception as exc:
            error, permanent = _error(exc), isinstance(exc, Permanent)
        status = await self.db.run(
            outbox.record_attempt,
            claim=claim,
            lease_until=lease_until,
            error=error,
            permanent=permanent,
            now=self.now(),
            schedule=self.config.webhook_retry_schedule,
            rng=self.rng,
        )
        if status == RETRYING and self._loop is not None:
            due = await self.db.run(outbox.next_due)
            if due is not None:
                delay = max(0.0, (due - self.now()).total_seconds())
                self._loop.call_later(delay, self.wake)

    def _deliver(self, claim: outbox.MailClaim) -> None:
        payload = orjson.loads(claim.payload)
        message = build(
            payload,
            message_id=claim.id,
            mail_from=self.config.mail_from,
            service_name=self.config.service_name,
            now=self.now(),
        )
        send_one(
            self.server,
            message,
            sender=self.config.mail_from,
            recipient=mail_address(claim.recipient),
            context=self.context,
        )

    async def close(self, grace: float = SMTP_TIMEOUT + 5) -> None:
        """Stop claiming; let a message being sent finish (within ``grace`` seconds)."""
        self._closed = True
        task = self._task
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait({task}, timeout=grace)
