"""The booking core directly: the guest's invitation carries their manage link (when the
service has mail and the key may invite), and the link's window is the slots' bound."""

from __future__ import annotations

from datetime import UTC, timedelta

import orjson
from sqlalchemy import select

from calendar_service.access import keys
from calendar_service.calendar import booking, links
from calendar_service.delivery.mail.messages import build
from calendar_service.journal.change_record import Via
from calendar_service.journal.invitations import MailPolicy
from calendar_service.journal.mail_queue import mail_t
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory

BASE = "https://calendar.example.com"


def test_the_guest_s_invitation_carries_the_manage_link(db: Database, factory: Factory) -> None:
    owner = factory.owner()
    key_id, _ = factory.key(owner, may_invite=True)
    principal = db.call(
        lambda conn: keys.authorize(keys.key_row_by_id(conn, key_id=key_id), now=utcnow())
    )
    day = (utcnow() + timedelta(days=2)).astimezone(UTC).date().isoformat()
    now = utcnow()
    made = db.call(
        links.create_link,
        principal=principal,
        body={
            "title": "Intro",
            "durationMinutes": 30,
            "timeMin": f"{day}T09:00:00Z",
            "timeMax": f"{day}T10:00:00Z",
        },
        now=now,
        base_url=BASE,
    )
    token = made["url"].rsplit("/", 1)[1]
    slots = db.call(booking.link_slots, token=token, now=now)["slots"]
    assert [s["startsAt"] for s in slots] == [
        f"{day}T09:00:00Z",
        f"{day}T09:15:00Z",
        f"{day}T09:30:00Z",
    ]
    mail = MailPolicy(configured=True, per_day=100, base_url=BASE, link_key=b"k" * 32)
    done = db.call(
        booking.book,
        principal=principal,
        token=token,
        body={"startsAt": slots[1]["startsAt"], "name": "Dana", "email": "dana@example.com"},
        now=now,
        base_url=BASE,
        via=Via.of(principal, "link"),
        mail=mail,
    )
    manage = done["booking"]["manageUrl"]
    assert manage.startswith(f"{BASE}/book/manage/")
    rows = db.call(
        lambda conn: conn.execute(
            select(mail_t.c.recipient, mail_t.c.payload).where(
                mail_t.c.event_id == done["booking"]["eventId"]
            )
        ).all()
    )
    assert [r.recipient for r in rows] == ["dana@example.com"]
    payload = orjson.loads(rows[0].payload)
    assert payload["manage"] == manage
    message = build(
        payload, message_id="m1", mail_from="calendar@example.com", service_name="calendar", now=now
    )
    text = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert f"Reschedule or cancel: {manage}" in text
    assert manage not in str(done["booking"]["eventId"])
