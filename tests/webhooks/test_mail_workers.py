"""The mail outbox under workers that die and workers that race (docs/invitations.md,
"Reliable sending"): a worker killed with SIGKILL while the SMTP server holds its message
leaves it to the next worker, which sends it once; two workers on one database never send
one message twice."""

from __future__ import annotations

import asyncio
import email
import email.policy
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from calendar_service.access import keys
from calendar_service.access.keys import authorize, key_row_by_id
from calendar_service.calendar.events import create_event_from_input
from calendar_service.delivery.mail import sending as outbox
from calendar_service.journal.invitations import MailPolicy
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.support import (
    Factory,
    Owner,
    bind_free_port,
    fresh_database_url,
    migrated_database,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Smtp:
    """An SMTP server on 127.0.0.1 that keeps what it accepted; with ``hold``, it keeps the
    first message's DATA unanswered until ``release`` is set, then refuses it (4xx)."""

    hold: bool = False
    port: int = 0
    accepted: list[tuple[list[str], bytes]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.hold and not self.arrived.is_set():
            self.arrived.set()
            while not self.release.is_set():
                await asyncio.sleep(0.02)
            return "451 4.3.0 held, then refused"
        with self.lock:
            self.accepted.append((list(envelope.rcpt_tos), bytes(envelope.original_content)))
        return "250 OK"

    def count(self) -> int:
        with self.lock:
            return len(self.accepted)


@contextmanager
def smtp(hold: bool = False) -> Iterator[Smtp]:
    handler = Smtp(hold=hold)
    sock = bind_free_port()
    handler.port = sock.getsockname()[1]
    sock.close()
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    try:
        yield handler
    finally:
        handler.release.set()
        controller.stop()


@contextmanager
def worker(config: Config) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "CALENDAR_DATABASE_URL": config.database_url,
        "CALENDAR_SMTP_URL": str(config.smtp_url),
        "CALENDAR_MAIL_FROM": config.mail_from,
        "CALENDAR_WEBHOOK_RETRY_SCHEDULE": "1s,1s,1s",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", "worker", "--poll-interval", "0.1"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def invite(db: Database, config: Config, owner: Owner, people: list[str]) -> None:
    record, _ = db.call(
        keys.create_key,
        user_id=owner.id,
        name="assistant",
        permission="write",
        expires_at=utcnow().replace(year=utcnow().year + 1),
        calendar_id=None,
        now=utcnow(),
        may_invite=True,
    )
    principal = db.call(
        lambda conn: authorize(key_row_by_id(conn, key_id=record["id"]), now=utcnow())
    )
    db.call(
        create_event_from_input,
        principal=principal,
        body={
            "title": "Planning",
            "startsAt": "2027-03-02T10:00:00Z",
            "endsAt": "2027-03-02T10:30:00Z",
            "attendees": [{"email": p} for p in people],
        },
        now=utcnow(),
        send_updates="all",
        mail=MailPolicy(True, 1000, config.base_url, b"k" * 32),
    )


@pytest.mark.long
def test_a_message_held_by_a_worker_killed_mid_send_is_sent_once_by_the_next(
    tmp_path: Path,
) -> None:
    with smtp(hold=True) as server, fresh_database_url(tmp_path) as url:
        config = make_config(
            url, smtp_url=f"smtp://127.0.0.1:{server.port}", mail_from="calendar@example.com"
        )
        with migrated_database(config) as db:
            owner = Factory(db).owner()
            invite(db, config, owner, ["ana@example.org"])
            with worker(config) as first:
                wait_for(server.arrived.is_set, what="the first worker to send")
                first.send_signal(signal.SIGKILL)
                first.wait(timeout=30)
            server.release.set()
            assert server.count() == 0
            with worker(config):
                wait_for(lambda: server.count() == 1, what="the next worker to send it")
                (message,) = wait_for(
                    lambda: (
                        (m := db.call(outbox.list_mail, user_id=owner.id))
                        and m[0]["status"] == "sent"
                        and m
                    )
                )
            assert server.count() == 1
            assert message["attempts"] == 1  # the killed attempt was never recorded
            rcpts, raw = server.accepted[0]
            assert rcpts == ["ana@example.org"]
            parsed = email.message_from_bytes(raw, policy=email.policy.default)
            assert parsed["Message-ID"].startswith(f"<{message['id']}@")


@pytest.mark.long
def test_two_workers_on_one_database_never_send_one_message_twice(tmp_path: Path) -> None:
    people = [f"p{i}@example.org" for i in range(30)]
    with smtp() as server, fresh_database_url(tmp_path) as url:
        config = make_config(
            url, smtp_url=f"smtp://127.0.0.1:{server.port}", mail_from="calendar@example.com"
        )
        with migrated_database(config) as db:
            owner = Factory(db).owner()
            with worker(config), worker(config):
                invite(db, config, owner, people)
                wait_for(lambda: server.count() >= len(people), what="every message")
                wait_for(
                    lambda: all(
                        m["status"] == "sent" for m in db.call(outbox.list_mail, user_id=owner.id)
                    )
                )
            recipients = sorted(r for rcpts, _ in server.accepted for r in rcpts)
            assert recipients == sorted(people)


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")  # see below
@pytest.mark.parametrize("implicit", [False, True], ids=["starttls", "smtps"])
def test_a_message_goes_over_tls_and_signs_in_with_the_urls_user(
    tmp_path: Path, implicit: bool
) -> None:
    import ssl
    from email.message import EmailMessage

    from aiosmtpd.smtp import AuthResult, LoginPassword

    from tests.support import make_tls
    from webhooks.mail import SmtpServer, send_one

    tls = make_tls(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(tls.certfile, tls.keyfile)
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        assert isinstance(data, LoginPassword)
        logins.append((data.login, data.password))
        return AuthResult(success=data.password == b"p@ss:w/rd")

    handler = Smtp()
    sock = bind_free_port()
    handler.port = sock.getsockname()[1]
    sock.close()
    options: dict[str, Any] = {"authenticator": authenticator, "auth_required": True}
    if implicit:
        # aiosmtpd counts only STARTTLS as TLS when it decides whether AUTH may be offered;
        # this connection is TLS from its first byte all the same.
        controller: Any = Controller(
            handler, hostname="127.0.0.1", port=handler.port, ssl_context=server_context,
            auth_require_tls=False, **options,
        )  # fmt: skip
    else:
        controller = Controller(
            handler, hostname="127.0.0.1", port=handler.port, tls_context=server_context,
            require_starttls=True, **options,
        )  # fmt: skip
    controller.start()
    try:
        scheme = "smtps" if implicit else "smtp"
        url = f"{scheme}://calendar%40example.com:p%40ss%3Aw%2Frd@127.0.0.1:{handler.port}"
        message = EmailMessage()
        message["From"] = "calendar@example.com"
        message["To"] = "ana@example.org"
        message["Subject"] = "Invitation"
        message.set_content("Hello")
        send_one(
            SmtpServer.from_url(url),
            message,
            sender="calendar@example.com",
            recipient="ana@example.org",
            context=tls.client_context(),
        )
    finally:
        controller.stop()
    assert logins == [(b"calendar@example.com", b"p@ss:w/rd")]
    assert [rcpts for rcpts, _ in handler.accepted] == [["ana@example.org"]]
