"""Attendees and email invitations over REST, against a real SMTP server (``aiosmtpd`` on
127.0.0.1): every message parsed with the standard library's ``email`` and with
``icalendar``; who may send; the limits; replies by link and by iMIP ``REPLY``
(docs/invitations.md)."""

from __future__ import annotations

import email
import email.policy
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from aiosmtpd.controller import Controller
from icalendar import Calendar

from calendar_service.access import keys
from calendar_service.cli.asgi_app import create_app
from calendar_service.delivery.mail import sending as outbox
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.conftest import make_config
from tests.rest.test_changes import with_webhook
from tests.support import (
    Factory,
    Owner,
    RunningServer,
    bearer,
    bind_free_port,
    fresh_database_url,
    migrated_database,
    own_server,
    queued,
    run_server,
    wait_for,
)

EVENTS = "/api/v1/calendar/events"
INBOUND_SECRET = "inbound-secret-for-tests"


@dataclass
class Inbox:
    """What the SMTP server received: (envelope sender, recipients, raw message)."""

    port: int = 0
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.received.append(
                (envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.original_content))
            )
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            found = [raw for _, rcpts, raw in self.received if address in rcpts]
        return [parse(raw) for raw in found]


def parse(raw: bytes) -> EmailMessage:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    assert not message.defects, message.defects
    return message


def calendar_of(message: EmailMessage) -> tuple[str, Calendar, Calendar]:
    """The message's method, its text/calendar part and its attachment, checked in shape:
    multipart/mixed of multipart/alternative (plain, html, calendar) and the .ics."""
    assert message.get_content_type() == "multipart/mixed"
    parts = list(message.iter_parts())
    assert [p.get_content_type() for p in parts] == ["multipart/alternative", "application/ics"]
    inner = list(parts[0].iter_parts())
    assert [p.get_content_type() for p in inner] == ["text/plain", "text/html", "text/calendar"]
    method = inner[2].get_param("method")
    assert isinstance(method, str)
    body = Calendar.from_ical(inner[2].get_content())
    attached = Calendar.from_ical(parts[1].get_payload(decode=True))
    assert parts[1].get_filename() == "invite.ics"
    assert str(body["METHOD"]) == method
    return method, body, attached


def vevent(cal: Calendar) -> Any:
    found = list(cal.walk("VEVENT"))
    assert len(found) == 1
    return found[0]


@dataclass
class Env:
    config: Config
    db: Database
    server: RunningServer
    factory: Factory
    inbox: Inbox

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, timeout=30)

    def key(self, owner: Owner, *, may_invite: bool = True) -> str:
        _, secret = self.db.call(
            keys.create_key,
            user_id=owner.id,
            name="assistant",
            permission="write",
            expires_at=utcnow().replace(year=utcnow().year + 1),
            calendar_id=None,
            now=utcnow(),
            may_invite=may_invite,
        )
        return str(secret)

    def mail(self, owner: Owner) -> list[dict[str, Any]]:
        return self.db.call(outbox.list_mail, user_id=owner.id)  # type: ignore[no-any-return]

    def wait_mail(self, address: str, count: int = 1) -> list[EmailMessage]:
        return wait_for(
            lambda: (found := self.inbox.to(address)) and len(found) >= count and found,
            what=f"{count} message(s) to {address}",
        )


@pytest.fixture(scope="module")
def inbox() -> Iterator[Inbox]:
    handler = Inbox()
    sock = bind_free_port()
    handler.port = sock.getsockname()[1]
    sock.close()
    controller = Controller(handler, hostname="127.0.0.1", port=handler.port)
    controller.start()
    try:
        yield handler
    finally:
        controller.stop()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, inbox: Inbox) -> Iterator[Env]:
    sock = bind_free_port()
    port = sock.getsockname()[1]
    with fresh_database_url(Path(tmp_path_factory.mktemp("mail"))) as url:
        config = make_config(
            url,
            base_url=f"http://127.0.0.1:{port}",
            smtp_url=f"smtp://127.0.0.1:{inbox.port}",
            mail_from="calendar@example.com",
            inbound_secret=INBOUND_SECRET,
            invites_per_day=40,
        )
        with (
            migrated_database(config) as db,
            run_server(create_app(config, db=db), sock=sock) as running,
        ):
            yield Env(config, db, running, Factory(db), inbox)


def unique(name: str) -> str:
    return f"{name}-{time.monotonic_ns()}@example.org"


def meeting(title: str = "Planning", **extra: Any) -> dict[str, Any]:
    return {
        "title": title,
        "startsAt": "2027-03-02T10:00:00Z",
        "endsAt": "2027-03-02T10:30:00Z",
        **extra,
    }


def test_attendees_are_stored_and_shown_in_get_list_and_ics_without_mail(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner, may_invite=False)
    ana = unique("ana")
    with env.client() as api:
        made = api.post(
            EVENTS,
            json=meeting(
                location="Room 1",
                attendees=[
                    {"email": ana, "name": "Ana Lima"},
                    {"email": "bob@ÉXAMPLE.de", "optional": True},
                ],
            ),
            headers=bearer(secret),
        )
        assert made.status_code == 201, made.text
        event = made.json()
        assert event["organizer"] == {"email": owner.email, "name": owner.email}
        assert event["attendees"] == [
            {"email": ana, "name": "Ana Lima", "responseStatus": "needsAction"},
            {"email": "bob@éxample.de", "optional": True, "responseStatus": "needsAction"},
        ]
        assert event["sequence"] == 0
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got == event
        listed = api.get(
            EVENTS,
            params={"timeMin": "2027-03-02T00:00:00Z", "timeMax": "2027-03-03T00:00:00Z"},
            headers=bearer(secret),
        ).json()["events"]
        assert [e for e in listed if e["id"] == event["id"]] == [event]
        token = api.get(EVENTS, headers=bearer(secret)).json()["nextSyncToken"]
        changed = api.patch(
            f"{EVENTS}/{event['id']}",
            json={"attendees": [{"email": ana, "responseStatus": "accepted"}]},
            headers=bearer(secret),
        ).json()
        assert changed["sequence"] == 1 and len(changed["attendees"]) == 1
        synced = api.get(EVENTS, params={"syncToken": token}, headers=bearer(secret)).json()
        assert synced["events"] == [changed]
    assert env.mail(owner) == []  # sendUpdates defaults to none


def test_bad_attendees_are_refused_field_by_field(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    with env.client() as api:
        bad = api.post(
            EVENTS,
            json=meeting(
                attendees=[
                    {"email": "not an address"},
                    {"email": "x@example.com", "name": "two\r\nlines"},
                    {"email": "x@example.com"},
                    {"email": "y@example.com", "responseStatus": "maybe"},
                ]
            ),
            headers=bearer(secret),
        )
        assert bad.status_code == 400
        fields = {e["field"] for e in bad.json()["errors"]}
        assert {"attendees.0.email", "attendees.1.name", "attendees.3.responseStatus"} <= fields
        many = [{"email": f"p{i}@example.com"} for i in range(101)]
        too_many = api.post(EVENTS, json=meeting(attendees=many), headers=bearer(secret))
        assert too_many.status_code == 400
        assert "at most 100" in too_many.text


def test_an_attendee_domain_mixing_scripts_is_refused_naming_the_letters(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    with env.client() as api:
        bad = api.post(
            EVENTS,
            json=meeting(
                attendees=[
                    {"email": "ok@example.com"},
                    {"email": "bob@ex\u0430mple.com"},  # a Cyrillic а among Latin letters
                    {"email": "eve@\u03b1pple.com"},  # a Greek α
                ]
            ),
            headers=bearer(secret),
        )
        assert bad.status_code == 400, bad.text
        assert bad.json()["code"] == "validation_error"
        errors = {e["field"]: e["message"] for e in bad.json()["errors"]}
        assert set(errors) == {"attendees.1.email", "attendees.2.email"}
        assert "Latin and Cyrillic" in errors["attendees.1.email"]
        assert "\u0430 U+0430" in errors["attendees.1.email"]
        assert "Latin and Greek" in errors["attendees.2.email"]
        assert "\u03b1 U+03B1" in errors["attendees.2.email"]
        fine = [
            "anna@m\u00fcnchen.de",  # one script, Latin
            "anna@\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444",  # one script, Cyrillic
            "ken@abc\u6f22\u5b57\u3072\u3089\u30ab\u30bf.jp",  # Latin, Han, Hiragana, Katakana
            "min@abc\ud55c\uad6d\u6f22.kr",  # Latin, Hangul, Han
            "ivan@\u043f\u0440\u0438\u043c\u0435\u0440.com",  # each label one script
        ]
        made = api.post(
            EVENTS, json=meeting(attendees=[{"email": e} for e in fine]), headers=bearer(secret)
        )
        assert made.status_code == 201, made.text


def test_send_updates_all_without_smtp_is_mail_not_configured_and_changes_nothing(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()  # the suite's own server has no CALENDAR_SMTP_URL
    _, secret = factory.key(owner, may_invite=True)
    refused = api.post(
        EVENTS,
        params={"sendUpdates": "all"},
        json=meeting(attendees=[{"email": unique("d")}]),
        headers=bearer(secret),
    )
    assert refused.status_code == 400
    assert refused.json()["code"] == "mail_not_configured"
    assert "CALENDAR_SMTP_URL" in refused.json()["detail"]
    listed = api.get(EVENTS, headers=bearer(secret))
    assert listed.status_code == 200
    assert listed.json()["events"] == []


def test_send_updates_needs_a_key_that_may_invite(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner, may_invite=False)
    with env.client() as api:
        refused = api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(attendees=[{"email": unique("c")}]),
            headers=bearer(secret),
        )
        assert refused.status_code == 403
        assert refused.json()["code"] == "may_not_invite"
        wrong = api.post(
            EVENTS,
            params={"sendUpdates": "some"},
            json=meeting(),
            headers=bearer(secret),
        )
        assert wrong.status_code == 400
    assert env.mail(owner) == []


def test_an_invitation_is_a_multipart_imip_request_and_a_change_sends_it_again(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    ana, bob = unique("ana"), unique("bob")
    hostile = "Board\r\nBcc: victim@example.com <b>Личное</b> " + "x" * 400
    with env.client() as api:
        made = api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(
                title=hostile[:300],
                description="<script>alert(1)</script>\r\nSecond line",
                attendees=[{"email": ana, "name": "Ana\u202e Lima"}, {"email": owner.email}],
            ),
            headers=bearer(secret),
        )
        assert made.status_code == 201, made.text
        event = made.json()
        (message,) = env.wait_mail(ana)
        assert message["To"].addresses[0].addr_spec == ana
        assert "Bcc" not in message
        assert "\n" not in str(message["Subject"]) and "Личное" in str(message["Subject"])
        assert message["Reply-To"].addresses[0].addr_spec == owner.email
        method, body, attached = calendar_of(message)
        assert method == "REQUEST"
        vev = vevent(body)
        assert str(vev["UID"]) == event["id"]
        assert int(vev["SEQUENCE"]) == 0
        assert str(vev["ORGANIZER"]) == f"mailto:{owner.email}"
        listed = vev["ATTENDEE"] if isinstance(vev["ATTENDEE"], list) else [vev["ATTENDEE"]]
        assert f"mailto:{ana}" in [str(a) for a in listed]
        html_part = list(next(iter(message.iter_parts())).iter_parts())[1].get_content()
        assert "<script>" not in html_part and "&lt;script&gt;" in html_part
        assert vevent(attached)["UID"] == vev["UID"]
        assert env.inbox.to(owner.email) == []  # the organizer is never mailed

        # time change: REQUEST again, SEQUENCE 1; Bob added gets it too
        moved = api.patch(
            f"{EVENTS}/{event['id']}",
            params={"sendUpdates": "all"},
            json={
                "startsAt": "2027-03-02T11:00:00Z",
                "endsAt": "2027-03-02T11:30:00Z",
                "attendees": [{"email": ana}, {"email": bob}],
            },
            headers=bearer(secret),
        )
        assert moved.status_code == 200, moved.text
        assert moved.json()["sequence"] == 1
        second = env.wait_mail(ana, 2)[-1]
        method, body, _ = calendar_of(second)
        assert method == "REQUEST" and int(vevent(body)["SEQUENCE"]) == 1
        (to_bob,) = env.wait_mail(bob)
        assert calendar_of(to_bob)[0] == "REQUEST"

        # Bob removed: a CANCEL to him only
        api.patch(
            f"{EVENTS}/{event['id']}",
            params={"sendUpdates": "all"},
            json={"attendees": [{"email": ana}]},
            headers=bearer(secret),
        ).raise_for_status()
        cancel = env.wait_mail(bob, 2)[-1]
        method, body, _ = calendar_of(cancel)
        assert method == "CANCEL" and str(vevent(body)["STATUS"]) == "CANCELLED"
        # Ana, still invited, is sent the new list (as Google's "send to all guests")
        method, body, _ = calendar_of(env.wait_mail(ana, 3)[-1])
        assert method == "REQUEST" and int(vevent(body)["SEQUENCE"]) == 2

        # deleted: a CANCEL to everyone left
        api.delete(
            f"{EVENTS}/{event['id']}", params={"sendUpdates": "all"}, headers=bearer(secret)
        ).raise_for_status()
        last = env.wait_mail(ana, 4)[-1]
        method, body, _ = calendar_of(last)
        assert method == "CANCEL" and int(vevent(body)["SEQUENCE"]) >= 3
    listed = wait_for(
        lambda: (m := env.mail(owner)) and all(x["status"] == "sent" for x in m) and m
    )
    assert {m["recipient"] for m in listed} == {ana, bob}
    assert all(m["attempts"] == 1 for m in listed)


def test_a_series_is_one_invitation_with_its_rule_and_an_occurrence_has_its_recurrence_id(
    env: Env,
) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    ana = unique("ana")
    with env.client() as api:
        series = api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(recurrence=["RRULE:FREQ=WEEKLY;COUNT=5"], attendees=[{"email": ana}]),
            headers=bearer(secret),
        ).json()
        (first,) = env.wait_mail(ana)
        vev = vevent(calendar_of(first)[1])
        assert "RRULE" in vev and str(vev["UID"]) == series["id"]
        occurrence = f"{series['id']}_20270309T100000Z"
        api.patch(
            f"{EVENTS}/{occurrence}",
            params={"sendUpdates": "all"},
            json={"location": "Room 9"},
            headers=bearer(secret),
        ).raise_for_status()
        changed = env.wait_mail(ana, 2)[-1]
        vev = vevent(calendar_of(changed)[1])
        assert str(vev["UID"]) == series["id"]
        assert vev["RECURRENCE-ID"].dt.isoformat() == "2027-03-09T10:00:00+00:00"
        assert "RRULE" not in vev
        # an occurrence may have attendees of its own; the others keep the series'
        bob = unique("bob")
        own = api.patch(
            f"{EVENTS}/{series['id']}_20270316T100000Z",
            json={"attendees": [{"email": bob}]},
            headers=bearer(secret),
        ).json()
        assert [a["email"] for a in own["attendees"]] == [bob]
        listed = api.get(
            EVENTS,
            params={"timeMin": "2027-03-01T00:00:00Z", "timeMax": "2027-04-10T00:00:00Z"},
            headers=bearer(secret),
        ).json()["events"]
        assert [[a["email"] for a in e["attendees"]] for e in listed] == [
            [ana],
            [ana],
            [bob],
            [ana],
            [ana],
        ]


def test_the_daily_limit_is_429_naming_it(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    people = [{"email": unique(f"p{i}")} for i in range(25)]
    with env.client() as api:
        api.post(
            EVENTS, params={"sendUpdates": "all"}, json=meeting(attendees=people),
            headers=bearer(secret),
        ).raise_for_status()  # fmt: skip
        over = api.post(
            EVENTS, params={"sendUpdates": "all"}, json=meeting(attendees=people),
            headers=bearer(secret),
        )  # fmt: skip
        assert over.status_code == 429, over.text
        assert over.json()["code"] == "invite_limit"
        assert "CALENDAR_INVITES_PER_DAY" in over.json()["detail"]
    assert len(env.mail(owner)) == 25


@dataclass
class Limited:
    """Two servers (each its own app and connections, as two hosts) on one database whose
    keys may invite ``LIMIT`` recipients a day."""

    env: Env
    servers: tuple[RunningServer, RunningServer]


LIMIT = 20


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, inbox: Inbox) -> Iterator[Limited]:
    with fresh_database_url(Path(tmp_path_factory.mktemp("limited"))) as url:
        config = make_config(
            url,
            smtp_url=f"smtp://127.0.0.1:{inbox.port}",
            mail_from="calendar@example.com",
            invites_per_day=LIMIT,
        )
        with (
            migrated_database(config) as db,
            own_server(config) as first,
            own_server(config) as second,
        ):
            yield Limited(Env(config, db, first, Factory(db), inbox), (first, second))


@pytest.mark.parametrize("each", [3, 2])
def test_parallel_invitations_on_two_hosts_queue_no_more_than_the_daily_limit(
    limited: Limited, each: int
) -> None:
    env = limited.env
    owner = env.factory.owner()
    secret = env.key(owner)
    creates = 32
    start = threading.Barrier(creates)

    def create(n: int) -> int:
        people = [{"email": unique(f"p{n}-{i}")} for i in range(each)]
        server = limited.servers[n % 2]
        with httpx.Client(base_url=server.url, timeout=60) as api:
            start.wait(timeout=30)
            return api.post(
                EVENTS, params={"sendUpdates": "all"}, json=meeting(attendees=people),
                headers=bearer(secret),
            ).status_code  # fmt: skip

    with ThreadPoolExecutor(creates) as pool:
        statuses = sorted(pool.map(create, range(creates)))
    fit = LIMIT // each  # a create is invited whole or refused whole
    assert len(env.mail(owner)) == fit * each
    assert statuses == [201] * fit + [429] * (creates - fit)


def _links(message: EmailMessage) -> dict[str, str]:
    plain = next(iter(next(iter(message.iter_parts())).iter_parts())).get_content()
    found = {}
    for line in plain.splitlines():
        if "/invitations/reply?" in line:
            url = line.split(": ", 1)[1].strip()
            found[parse_qs(urlsplit(url).query)["r"][0]] = url
    return found


def test_a_reply_link_records_the_answer_once_and_forged_or_old_links_change_nothing(
    env: Env,
) -> None:
    owner = env.factory.owner()
    with_webhook(env.factory, owner)
    secret = env.key(owner)
    ana = unique("ana")
    with env.client() as api:
        event = api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(attendees=[{"email": ana}]),
            headers=bearer(secret),
        ).json()
        assert queued(env.db, owner)[-1][1]["attendees"] == event["attendees"]  # the webhook
        links = _links(env.wait_mail(ana)[0])
        assert set(links) == {"accepted", "tentative", "declined"}
        page = httpx.get(links["accepted"], timeout=30)  # GET records nothing
        assert page.status_code == 200 and "<form" in page.text
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got["attendees"][0]["responseStatus"] == "needsAction"
        query = parse_qs(urlsplit(links["accepted"]).query)
        done = httpx.post(
            f"{env.server.url}/invitations/reply",
            data={"t": query["t"][0], "r": "accepted"},
            timeout=30,
        )
        assert done.status_code == 200, done.text
        assert "Recorded" in done.text and ana in done.text
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got["attendees"][0]["responseStatus"] == "accepted"
        changes = api.get(
            "/api/v1/calendar/changes", params={"eventId": event["id"]}, headers=bearer(secret)
        ).json()["changes"]
        assert changes[0]["actor"] == {"type": "attendee", "name": ana}
        assert changes[0]["transport"] == "link"
        assert changes[0]["reply"] == {"email": ana, "responseStatus": "accepted"}
        kind, hooked = queued(env.db, owner)[-1]
        assert kind == "calendar.event.updated"
        assert hooked["attendees"][0]["responseStatus"] == "accepted"
        # altered: another response is fine (the token is the attendee's), a changed token not
        token = query["t"][0]
        forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
        refused = httpx.post(
            f"{env.server.url}/invitations/reply", data={"t": forged, "r": "declined"}, timeout=30
        )
        assert refused.status_code == 400
        # a newer invitation: the old link no longer counts
        api.patch(
            f"{EVENTS}/{event['id']}",
            params={"sendUpdates": "all"},
            json={"location": "Elsewhere"},
            headers=bearer(secret),
        ).raise_for_status()
        old = httpx.post(
            f"{env.server.url}/invitations/reply", data={"t": token, "r": "declined"}, timeout=30
        )
        assert old.status_code == 400 and "older" in old.text
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got["attendees"][0]["responseStatus"] == "accepted"


def test_a_reply_link_shows_the_event_title_time_and_organizer_before_the_guest_answers(
    env: Env,
) -> None:
    owner = env.factory.owner()
    berlin = env.factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    secret = env.key(owner)
    ana = unique("ana")
    with env.client() as api:
        api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(
                "Board <review> & plan",
                calendarId=berlin,
                location="Room <b>4</b>",
                attendees=[{"email": ana}],
            ),
            headers=bearer(secret),
        ).raise_for_status()
    page = httpx.get(_links(env.wait_mail(ana)[0])["declined"], timeout=30)
    assert page.status_code == 200 and "<form" in page.text
    text = page.text
    assert "Board &lt;review&gt; &amp; plan" in text and "<review>" not in text
    # 10:00 UTC is 11:00 in Berlin in March: the event's own zone, named.
    assert "Tuesday 2 March 2027, 11:00 to 11:30 (Europe/Berlin)" in text
    assert "Room &lt;b&gt;4&lt;/b&gt;" in text
    assert owner.email in text and ana in text
    assert "No, I won&#x27;t attend" in text or "No, I won't attend" in text


def _reply(
    uid: str,
    attendee: str,
    organizer: str,
    sequence: int,
    partstat: str,
    stamp: str = "20270101T000000Z",
) -> bytes:
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nMETHOD:REPLY\r\n"
        "BEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:{stamp}\r\nSEQUENCE:{sequence}\r\n"
        f"ORGANIZER:mailto:{organizer}\r\n"
        f"ATTENDEE;PARTSTAT={partstat}:mailto:{attendee}\r\n"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    message = EmailMessage()
    message["From"] = attendee
    message["To"] = "calendar@example.com"
    message["Subject"] = "Accepted"
    message.set_content("I'll be there")
    message.add_alternative(ics, subtype="calendar", params={"method": "REPLY"})
    return message.as_bytes()


def test_an_imip_reply_posted_inbound_sets_the_response_and_bad_ones_change_nothing(
    env: Env,
) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    ana = unique("ana")
    inbound = f"{env.server.url}/api/v1/inbound/mail"
    with env.client() as api:
        event = api.post(
            EVENTS, json=meeting(attendees=[{"email": ana}]), headers=bearer(secret)
        ).json()
        good = _reply(event["id"], ana, owner.email, 0, "TENTATIVE")
        assert httpx.post(inbound, content=good, timeout=30).status_code == 401
        wrong = httpx.post(inbound, content=good, headers=bearer("nope"), timeout=30)
        assert wrong.status_code == 401
        for bad in (
            b"not a message at all",
            _reply("ev_unknown", ana, owner.email, 0, "ACCEPTED"),
            _reply(event["id"], ana, "mallory@example.com", 0, "ACCEPTED"),
            _reply(event["id"], "eve@example.com", owner.email, 0, "ACCEPTED"),
        ):
            refused = httpx.post(inbound, content=bad, headers=bearer(INBOUND_SECRET), timeout=30)
            assert refused.status_code == 400, refused.text
            assert refused.json()["code"] == "inbound_mail_refused"
        huge = httpx.post(
            inbound, content=b"x" * (10 * 1024 * 1024 + 1), headers=bearer(INBOUND_SECRET),
            timeout=60,
        )  # fmt: skip
        assert huge.status_code == 413
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got["attendees"][0]["responseStatus"] == "needsAction"
        done = httpx.post(inbound, content=good, headers=bearer(INBOUND_SECRET), timeout=30)
        assert done.status_code == 200, done.text
        assert done.json()["responseStatus"] == "tentative"
        got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
        assert got["attendees"][0]["responseStatus"] == "tentative"


def test_an_older_imip_reply_sent_again_after_a_newer_one_is_ignored(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    bob = unique("bob")
    inbound = f"{env.server.url}/api/v1/inbound/mail"
    with env.client() as api:
        event = api.post(
            EVENTS, json=meeting(attendees=[{"email": bob}]), headers=bearer(secret)
        ).json()

        def post(partstat: str, stamp: str) -> dict[str, Any]:
            raw = _reply(event["id"], bob, owner.email, 0, partstat, stamp)
            done = httpx.post(inbound, content=raw, headers=bearer(INBOUND_SECRET), timeout=30)
            assert done.status_code == 200, done.text
            return done.json()  # type: ignore[no-any-return]

        def status() -> str:
            got = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
            return str(got["attendees"][0]["responseStatus"])

        accepted = post("ACCEPTED", "20270101T090000Z")
        assert (accepted["outcome"], accepted["changed"]) == ("recorded", True)
        declined = post("DECLINED", "20270101T100000Z")
        assert (declined["outcome"], declined["changed"]) == ("recorded", True)
        assert status() == "declined"
        old = post("ACCEPTED", "20270101T090000Z")  # the first reply, delivered again
        assert (old["outcome"], old["changed"]) == ("older", False)
        assert old["responseStatus"] == "declined"  # what stands
        assert status() == "declined"
        same = post("DECLINED", "20270101T100000Z")  # the same reply again: nothing new
        assert (same["outcome"], same["changed"]) == ("older", False)
        later = post("TENTATIVE", "20270101T110000Z")
        assert (later["outcome"], later["responseStatus"]) == ("recorded", "tentative")
        assert status() == "tentative"
        changes = api.get(
            "/api/v1/calendar/changes", params={"eventId": event["id"]}, headers=bearer(secret)
        ).json()["changes"]
        assert [c["reply"]["responseStatus"] for c in changes if "reply" in c] == [
            "tentative", "declined", "accepted",
        ]  # fmt: skip


def _nested(depth: int) -> bytes:
    """A message of ``depth`` multipart/mixed parts, each inside the one before."""
    head = [b"From: a@example.org\r\nTo: b@example.org\r\nMIME-Version: 1.0\r\n"]
    for n in range(depth):
        head.append(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (n, n))
    head.append(b"Content-Type: text/plain\r\n\r\nhi\r\n")
    tail = [b"--b%d--\r\n" % n for n in reversed(range(depth))]
    return b"".join(head + tail)


def _many_parts(parts: int) -> bytes:
    """A message of one multipart/mixed with ``parts`` small text parts."""
    head = (
        b"From: a@example.org\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
    )
    part = b"--b\r\nContent-Type: text/plain\r\n\r\nsome text of a part, a line or two of it\r\n"
    return head + part * parts + b"--b--\r\n"


def test_inbound_mail_nested_too_deep_or_in_too_many_parts_is_refused_naming_the_limit(
    env: Env,
) -> None:
    inbound = f"{env.server.url}/api/v1/inbound/mail"
    nested, many = _nested(2000), _many_parts(60_000)
    assert len(nested) > 100_000 and len(many) > 4_000_000
    for raw, limit in ((nested, "more than 50 nested"), (many, "more than 200 parts")):
        refused = httpx.post(inbound, content=raw, headers=bearer(INBOUND_SECRET), timeout=120)
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "inbound_mail_refused"
        assert limit in refused.json()["detail"]
    environ = {**os.environ, "CALENDAR_DATABASE_URL": env.config.database_url}
    for raw, limit in ((nested, "more than 50 nested"), (many, "more than 200 parts")):
        ran = subprocess.run(
            [sys.executable, "-m", "calendar_service.cli", "inbound-mail"],
            input=raw, env=environ, capture_output=True, timeout=120,
        )  # fmt: skip
        stderr = ran.stderr.decode()
        assert ran.returncode == 1 and ran.stdout == b"", stderr
        assert stderr.startswith("error: ") and limit in stderr, stderr
        assert "Traceback" not in stderr


def test_ics_export_and_import_carry_attendees(env: Env) -> None:
    owner = env.factory.owner()
    secret = env.key(owner)
    ana = unique("ana")
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        "UID:imported-1@test\r\nDTSTAMP:20270101T000000Z\r\n"
        "DTSTART:20270405T090000Z\r\nDTEND:20270405T100000Z\r\nSUMMARY:Imported\r\n"
        f"ORGANIZER;CN=Someone:mailto:{owner.email}\r\n"
        f'ATTENDEE;CN="Ana, L.";PARTSTAT=ACCEPTED:mailto:{ana}\r\n'
        "ATTENDEE;ROLE=OPT-PARTICIPANT:mailto:opt@example.com\r\n"
        "ATTENDEE:mailto:not an address\r\n"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    with env.client() as api:
        done = api.post(
            f"{EVENTS}/import",
            content=ics.encode(),
            headers={**bearer(secret), "content-type": "text/calendar"},
        )
        assert done.status_code == 200, done.text
        listed = api.get(
            EVENTS,
            params={"timeMin": "2027-04-05T00:00:00Z", "timeMax": "2027-04-06T00:00:00Z"},
            headers=bearer(secret),
        ).json()["events"]
        (event,) = listed
        assert event["attendees"] == [
            {"email": ana, "name": "Ana, L.", "responseStatus": "accepted"},
            {"email": "opt@example.com", "optional": True, "responseStatus": "needsAction"},
        ]


async def test_the_mcp_tools_take_attendees_and_send_updates(env: Env) -> None:
    from tests.mcp_tools.clients import connect, structured, text_of

    owner = env.factory.owner()
    secret = env.key(owner)
    ana = unique("ana")
    async with connect(env.server.url, secret) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        create = tools["createCalendarEvent"]
        assert "ask your user" in (create.description or "").lower()
        assert create.input_schema["properties"]["sendUpdates"]["enum"] == ["none", "all"]
        made = await client.call_tool(
            "createCalendarEvent",
            {**meeting(attendees=[{"email": ana, "name": "Ana"}]), "sendUpdates": "all"},
        )
        event = structured(made)
        assert event["attendees"][0]["email"] == ana
        bad = await client.call_tool(
            "updateCalendarEvent", {"eventId": event["id"], "sendUpdates": "sometimes"}
        )
        assert bad.is_error and "sendUpdates" in text_of(bad)
    (message,) = env.wait_mail(ana)
    assert calendar_of(message)[0] == "REQUEST"


def test_the_cli_makes_inviting_keys_lists_mail_and_takes_a_reply_on_stdin(env: Env) -> None:
    import json

    from typer.testing import CliRunner

    from calendar_service.cli import app

    owner = env.factory.owner()
    runner = CliRunner()
    environ = {"CALENDAR_DATABASE_URL": env.config.database_url}
    made = runner.invoke(
        app,
        ["keys", "create", "--user", owner.email, "--name", "a", "--permission", "write",
         "--may-invite", "--json"],
        env=environ, catch_exceptions=False,
    )  # fmt: skip
    assert made.exit_code == 0, made.stderr
    key = json.loads(made.stdout)
    assert key["mayInvite"] is True
    ana = unique("ana")
    with env.client() as api:
        event = api.post(
            EVENTS,
            params={"sendUpdates": "all"},
            json=meeting(attendees=[{"email": ana}]),
            headers=bearer(key["secret"]),
        ).json()
    env.wait_mail(ana)
    listed = wait_for(
        lambda: (
            (
                m := json.loads(
                    runner.invoke(
                        app, ["mail", "list", "--user", owner.email, "--json"], env=environ
                    ).stdout
                )["messages"]
            )
            and m[0]["status"] == "sent"
            and m
        )
    )
    assert listed[0]["recipient"] == ana and listed[0]["attempts"] == 1
    reply = _reply(event["id"], ana, owner.email, 0, "DECLINED")
    done = runner.invoke(app, ["inbound-mail", "--json"], input=reply, env=environ)
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["responseStatus"] == "declined"
    again = runner.invoke(app, ["inbound-mail"], input=b"garbage", env=environ)
    assert again.exit_code != 0 and "Nothing was recorded" in again.stderr


def test_a_feed_carries_the_organizer_and_the_attendees(env: Env) -> None:
    from calendar_service.interop.ical.feeds import create_feed

    owner = env.factory.owner()
    secret = env.key(owner)
    ana = unique("ana")
    with env.client() as api:
        api.post(
            EVENTS,
            json=meeting(
                title="With people",
                attendees=[
                    {"email": ana, "name": 'Ana "the; boss"', "responseStatus": "accepted"},
                    {"email": "opt@example.org", "optional": True},
                ],
            ),
            headers=bearer(secret),
        ).raise_for_status()
        feed = env.db.call(
            create_feed,
            user_id=owner.id,
            calendar_id=owner.default_calendar_id,
            base_url=env.server.url,
            now=utcnow(),
        )
        text = httpx.get(feed["url"], timeout=30)
        assert text.status_code == 200
    cal = Calendar.from_ical(text.content)
    (vev,) = [v for v in cal.walk("VEVENT") if str(v["SUMMARY"]) == "With people"]
    assert str(vev["ORGANIZER"]) == f"mailto:{owner.email}"
    first, second = vev["ATTENDEE"]
    assert str(first) == f"mailto:{ana}"
    assert first.params["PARTSTAT"] == "ACCEPTED" and first.params["CN"] == "Ana 'the; boss'"
    assert second.params["ROLE"] == "OPT-PARTICIPANT" and second.params["RSVP"] == "TRUE"
