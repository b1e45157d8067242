"""What a change tells its attendees (``sendUpdates=all``): invitations and cancellations,
queued in the change's transaction (``mail_outbox``), one row a recipient.

As Google Calendar does: a create invites every attendee (``METHOD:REQUEST``); a change of
time, place or rule sends the invitation again, with a greater ``SEQUENCE``, to every
attendee; so does a change of the attendees (as Google's "send to all guests": everyone sees
the new list, and their reply links follow the new ``SEQUENCE``); attendees removed get a
``METHOD:CANCEL``, and so does everyone when the event, the series or
the occurrence is deleted. A series is one invitation with its ``RRULE``; a change of one
occurrence one with its ``RECURRENCE-ID``; a series split (``scope=following``) invites to
the new series and updates the old one. The organizer (the owner) is never mailed, even if
listed. A title, description or transparency change alone mails nobody.

Who may: a key made with ``may_invite`` (``MayNotInvite`` otherwise); a service with SMTP set
(``MailNotConfigured``); at most ``MailPolicy.per_day`` recipients a key in the last 24 hours
(``InviteLimit``). The checks run before the change is made (``check``), and the limit once
its recipients are known: either way nothing is written. A change is invited whole or refused
whole (never some of its recipients), and the limit holds under concurrent writes on any
number of hosts (``_check_limit``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, func, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from calendar_service.access.keys import Principal
from calendar_service.journal.mail_queue import CANCEL, PENDING, REQUEST, mail_t
from calendar_service.journal.reply_links import reply_links
from calendar_service.journal.webhook_outbox import notify_committed
from calendar_service.platform.config import Config
from calendar_service.platform.errors import (
    FieldError,
    InviteLimit,
    MailNotConfigured,
    MayNotInvite,
    ValidationFailed,
)
from calendar_service.platform.ids import new_id

SEND_UPDATES = ("all", "none")
# What makes a change worth an invitation again (as the public event shows it).
_SIGNIFICANT = ("startsAt", "endsAt", "allDay", "location", "recurrence", "timeZone")
SUBJECT_MOST = 200


@dataclass(frozen=True, slots=True)
class MailPolicy:
    """What the fronts know of mail (from the configuration): whether SMTP is set, the
    key's daily recipients, the address reply links point at, and their signing key."""

    configured: bool
    per_day: int
    base_url: str
    link_key: bytes

    @classmethod
    def of(cls, config: Config, link_key: bytes) -> MailPolicy:
        """The policy ``config`` sets, reply links signed with ``link_key``."""
        return cls(config.mail_configured, config.invites_per_day, config.base_url, link_key)


def parse_send_updates(value: str | None) -> bool:
    """``sendUpdates`` as sent: whether mail goes out (``all``); ``none`` or nothing: no."""
    if value is None or value == "none":
        return False
    if value == "all":
        return True
    raise ValidationFailed([FieldError("sendUpdates", "must be all or none (the default)")])


def check(principal: Principal, policy: MailPolicy | None) -> MailPolicy:
    """Refuse ``sendUpdates=all`` before anything is written: a key that may not invite (what
    its caller can act on), then a service without SMTP. Returns the policy to send with."""
    if not principal.may_invite:
        raise MayNotInvite()
    if policy is None or not policy.configured:
        raise MailNotConfigured()
    return policy


def queue(
    conn: Connection,
    *,
    principal: Principal,
    policy: MailPolicy,
    made: Sequence[dict[str, Any]],
    now: datetime,
) -> int:
    """Queue what the changes ``made`` (as ``journal.change_record`` returns them) tell their
    attendees; the number of messages queued."""
    rows: list[dict[str, Any]] = []
    for change in made:
        for method, event, recipients in plan(change):
            rows.extend(_rows(principal, policy, change, method, event, recipients, now))
    if not rows:
        return 0
    _check_limit(conn, principal, policy, len(rows), now)
    insert = sqlite_insert if conn.dialect.name == "sqlite" else postgresql_insert
    conn.execute(insert(mail_t).values(rows).on_conflict_do_nothing())
    notify_committed(conn)
    return len(rows)


def _check_limit(
    conn: Connection, principal: Principal, policy: MailPolicy, asked: int, now: datetime
) -> None:
    """Refuse ``asked`` more recipients past the key's daily limit. The count and the insert
    that follows it are one decision per key across every process: on PostgreSQL under a
    transaction-scoped advisory lock on the key (under READ COMMITTED, writes made together
    would each count only the rows committed before any of theirs, and all pass); on SQLite
    the transaction is a write transaction from its first statement, one at a time."""
    if conn.dialect.name == "postgresql":
        lock = int.from_bytes(
            hashlib.sha256(f"invites\0{principal.key_id}".encode()).digest()[:8],
            "big",
            signed=True,
        )
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock})
    sent = conn.execute(
        select(func.count()).where(
            mail_t.c.key_id == principal.key_id, mail_t.c.created_at > now - timedelta(days=1)
        )
    ).scalar_one()
    if sent + asked > policy.per_day:
        raise InviteLimit(policy.per_day, int(sent), asked)


def _key(attendee: dict[str, Any]) -> str:
    return str(attendee["email"]).lower()


def plan(change: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """What one change sends: ``(method, the event as the message shows it, recipients)``."""
    before, after = change.get("before"), change.get("after")
    organizer = (after or before or {}).get("organizer") or {}
    own = str(organizer.get("email", "")).lower()
    old = {_key(a): a for a in (before or {}).get("attendees", ())}
    new = {_key(a): a for a in (after or {}).get("attendees", ())}
    old.pop(own, None)
    new.pop(own, None)
    out: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    if after is None:
        if before is not None and old:
            out.append((CANCEL, before, list(old.values())))
    elif before is None:
        if new:
            out.append((REQUEST, after, list(new.values())))
    else:
        removed = [a for k, a in old.items() if k not in new]
        if removed:
            told = after
            if "organizer" not in after:  # everyone removed: the event keeps no people
                sequence = int(before.get("sequence") or 0) + 1
                told = {**after, "organizer": before.get("organizer"), "sequence": sequence}
            out.append((CANCEL, told, removed))
        # As Google Calendar's "send to all guests": a new guest list is news to everyone
        # (and their reply links follow the new SEQUENCE).
        if new and (
            after.get("sequence") != before.get("sequence")
            or any(before.get(f) != after.get(f) for f in _SIGNIFICANT)
        ):
            out.append((REQUEST, after, list(new.values())))
    started = change.get("newSeries")
    if started is not None:
        fresh = {_key(a): a for a in started.get("attendees", ())}
        fresh.pop(own, None)
        if fresh:
            out.append((REQUEST, started, list(fresh.values())))
    return out


def _rows(
    principal: Principal,
    policy: MailPolicy,
    change: dict[str, Any],
    method: str,
    event: dict[str, Any],
    recipients: list[dict[str, Any]],
    now: datetime,
) -> list[dict[str, Any]]:
    sequence = int(event.get("sequence") or 0)
    if method == CANCEL and change.get("after") is None:
        sequence += 1  # a deletion writes no row: its CANCEL outranks the last REQUEST
    subject = subject_of(method, event)
    rows = []
    for recipient in recipients:
        payload: dict[str, Any] = {
            "method": method,
            "event": event,
            "sequence": sequence,
            "recipient": recipient,
        }
        if method == REQUEST:
            payload["links"] = reply_links(
                base_url=policy.base_url,
                key=policy.link_key,
                event_id=event["id"],
                email=recipient["email"],
                sequence=sequence,
            )
        rows.append(
            {
                "id": new_id("mail"),
                "user_id": principal.user_id,
                "key_id": None if principal.key_id == "owner" else principal.key_id,
                "change_id": change["id"],
                "event_id": event["id"],
                "recipient": recipient["email"],
                "method": method,
                "subject": subject,
                "payload": orjson.dumps(payload).decode(),
                "status": PENDING,
                "attempts": 0,
                "next_attempt_at": now,
                "lease_until": None,
                "last_error": None,
                "created_at": now,
                "sent_at": None,
            }
        )
    return rows


def one_line(text: str, most: int = SUBJECT_MOST) -> str:
    """``text`` as one header-safe line: every control character (CR, LF...) a space, at
    most ``most`` characters."""
    line = " ".join("".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in text).split())
    return line if len(line) <= most else line[: most - 1] + "…"


def subject_of(method: str, event: dict[str, Any]) -> str:
    title = one_line(str(event.get("title") or ""), SUBJECT_MOST - 40)
    when = str(event.get("startsAt", ""))[:16].replace("T", " ")
    if method == CANCEL:
        return f"Cancelled: {title} @ {when}"
    if int(event.get("sequence") or 0) > 0:
        return f"Updated invitation: {title} @ {when}"
    return f"Invitation: {title} @ {when}"
