"""Replies: an attendee's answer sets their ``responseStatus``, as a change of its own.

Two ways in, one rule:

- a reply link (``links``) from the invitation: signed for that attendee, event and
  ``SEQUENCE``; ``apply_link``;
- an iMIP ``REPLY`` message (RFC 6047 §3) handed to ``calendar-service inbound-mail`` or
  posted to ``POST /api/v1/inbound/mail``: ``apply_inbound`` reads it (at most
  ``MAX_INBOUND_BYTES``), finds its ``text/calendar`` part, and takes its one ``ATTENDEE``
  (whose address must be the message's ``From``), ``PARTSTAT``, ``UID`` (and
  ``RECURRENCE-ID``), ``SEQUENCE`` and ``ORGANIZER`` (which must be the event's).

A reply for another ``SEQUENCE`` than the event's (a newer invitation went out since), for an
event that is gone, from someone not invited, or altered, changes nothing and says why
(``InboundMailRefused``). One that is recorded is a change (actor ``attendee``, transport
``link`` for a link, ``rest`` or ``cli`` for a message), with the reply in it
(``reply: {email, responseStatus}``), and a ``calendar.event.updated`` webhook. The event's
``SEQUENCE`` does not grow: a reply changes no one else's invitation.

Replies arrive out of order (mail is retried, forwarded, sent twice): of two replies of one
attendee to one ``SEQUENCE``, the later ``DTSTAMP`` stands (RFC 5546 §2.1.5). The column keeps,
beside the attendees, the ``SEQUENCE`` and stamp of each attendee's last reply (``replies``,
never shown); a reply by mail stamped no later than that changes nothing and is answered with
``outcome: "older"`` (not refused: it is no mistake of its sender's). A reply without a
``DTSTAMP`` is stamped when it arrives; a link followed is the attendee's latest word, always
recorded, and stamped when it is (or with the last reply's stamp, if that is later).
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from email.message import EmailMessage
from email.utils import getaddresses
from typing import Any

import orjson
from icalendar import Calendar
from sqlalchemy import Connection, select, update

from calendar_service.access.keys import Principal, owner_principal
from calendar_service.calendar.attendees import decode
from calendar_service.calendar.events.changelog import Edit
from calendar_service.calendar.events.queries import load_in_scope
from calendar_service.calendar.events.shapes import Row, event_public
from calendar_service.calendar.events.writes import after_write
from calendar_service.journal.change_record import Via, record
from calendar_service.journal.change_table import ATTENDEE
from calendar_service.journal.change_table import UPDATED as CHANGE_UPDATED
from calendar_service.journal.reply_links import RESPONSES, read_token
from calendar_service.journal.webhook_outbox import UPDATED
from calendar_service.platform.errors import InboundMailRefused, PayloadTooLarge
from calendar_service.platform.models import calendars_t, events_t
from calendar_service.platform.timeutil import zone

MAX_INBOUND_BYTES = 10 * 1024 * 1024
MAX_NESTED = 50  # multipart and message/* parts in one message (a reply has two or three)
MAX_PARTS = 200  # parts of all its multiparts together (a reply has four to ten)
# A Content-Type header at the start of a line, with its folded lines.
_CONTENT_TYPE = re.compile(
    rb"^content-type:((?:[^\r\n]|\r?\n[ \t])*)", re.IGNORECASE | re.MULTILINE
)
_BOUNDARY = re.compile(
    rb"""boundary\s*=\s*(?:"([^"\r\n]{1,200})"|([^\s;"]{1,200}))""", re.IGNORECASE
)
# A line opening a part: ``--`` and a boundary (a closing one ends in ``--``: not counted).
_DELIMITER = re.compile(rb"^--([^\r\n]{1,200}?)[ \t]*\r?$", re.MULTILINE)
_PARTSTATS = {"ACCEPTED": "accepted", "TENTATIVE": "tentative", "DECLINED": "declined"}
_WORDS = {"accepted": "accepted", "tentative": "maybe", "declined": "declined"}
# What became of a reply (``outcome``): recorded; the answer it gives already stood; or older
# than the reply last recorded for that attendee and SEQUENCE, so ignored.
RECORDED, UNCHANGED, OLDER = "recorded", "unchanged", "older"


def _refused(why: str) -> InboundMailRefused:
    return InboundMailRefused(f"{why} Nothing was recorded.")


def apply_link(
    conn: Connection, *, key: bytes, token: str, response: str, now: datetime
) -> dict[str, Any]:
    """A reply link followed (and confirmed): ``{eventId, title, email, responseStatus}``."""
    found = read_token(key, token)
    if found is None:
        raise _refused("This reply link is not valid: it was altered, or not made here.")
    if response not in RESPONSES:
        raise _refused("A reply is accepted, tentative or declined.")
    event_id, address, sequence = found
    return _apply(
        conn,
        event_id=event_id,
        address=address,
        sequence=sequence,
        response=response,
        transport="link",
        now=now,
        stamp=None,
    )


def _invited(
    conn: Connection, *, event_id: str, address: str, sequence: int, what: str
) -> tuple[Principal, Any, Any, dict[str, Any], list[dict[str, Any]]]:
    """The event a reply (``what``: "reply" or "link") is to, read in its owner's scope:
    ``(owner, row, calendar, attendees document, [address's entry])``; refused
    (``InboundMailRefused``) when the event is gone, ``address`` no longer invited, or the
    invitation's ``sequence`` older than the event's."""
    owner = conn.execute(
        select(calendars_t.c.user_id)
        .select_from(events_t.join(calendars_t, calendars_t.c.id == events_t.c.calendar_id))
        .where(events_t.c.id == event_id)
    ).scalar()
    if owner is None:
        raise _refused("The event of this invitation no longer exists.")
    principal = owner_principal(str(owner))
    row, calendar = load_in_scope(conn, principal=principal, event_id=event_id)
    people = decode(row.attendees)
    mine = [a for a in (people or {}).get("attendees", []) if a["email"].lower() == address.lower()]
    if people is None or not mine:
        raise _refused(f"{address} is not invited to this event (any more).")
    if sequence != int(people["sequence"]):
        raise _refused(
            f"This {what} is to an older version of the invitation: the event changed since. "
            "Use the links of the latest invitation."
        )
    return principal, row, calendar, people, mine


def _apply(
    conn: Connection,
    *,
    event_id: str,
    address: str,
    sequence: int,
    response: str,
    transport: str,
    now: datetime,
    stamp: datetime | None,
    organizer: str | None = None,
) -> dict[str, Any]:
    """Record ``address``'s ``response``: a reply by mail stamped ``stamp`` (its
    ``DTSTAMP``), or a link followed (``None``: always the latest word)."""
    principal, row, calendar, people, mine = _invited(
        conn, event_id=event_id, address=address, sequence=sequence, what="reply"
    )
    if organizer is not None and organizer.lower() != people["organizer"]["email"].lower():
        raise _refused("The reply's ORGANIZER is not this event's organizer.")
    answer = {"eventId": row.id, "title": row.title, "email": mine[0]["email"]}
    replied = people.setdefault("replies", {})
    last = replied.get(address.lower())
    latest = None
    if last is not None and int(last["sequence"]) == sequence:
        latest = datetime.fromisoformat(last["stamp"])
    if stamp is not None and latest is not None and stamp <= latest:
        # RFC 5546 §2.1.5: of two replies to one SEQUENCE, the later DTSTAMP stands.
        return {**answer, "responseStatus": mine[0]["responseStatus"], "changed": False,
                "outcome": OLDER}  # fmt: skip
    mark = stamp if stamp is not None else now
    replied[address.lower()] = {
        "sequence": sequence,
        "stamp": (mark if latest is None else max(mark, latest)).isoformat(),
    }
    answer["responseStatus"] = response
    if mine[0]["responseStatus"] == response:
        # Nothing to show anyone; the stamp is kept so that an older reply stays older.
        conn.execute(
            update(events_t)
            .where(events_t.c.id == row.id)
            .values(attendees=orjson.dumps(people).decode())
        )
        return {**answer, "changed": False, "outcome": UNCHANGED}
    mine[0]["responseStatus"] = response
    stored = orjson.dumps(people).decode()
    tz = zone(calendar.time_zone)
    edit = Edit.of_row(conn, row)
    before = event_public(row, calendar_name=calendar.name, tz=tz)
    conn.execute(
        update(events_t).where(events_t.c.id == row.id).values(attendees=stored, updated_at=now)
    )
    changed = Row({**row._asdict(), "attendees": stored, "updated_at": now})
    after = after_write(
        conn,
        principal=principal,
        calendar=calendar,
        tz=tz,
        row=changed,
        span=None,
        change=UPDATED,
        now=now,
    )
    via = Via(ATTENDEE, None, transport)
    rows = edit.rows(conn)
    change_id = None
    if rows is not None:
        change_id = record(
            conn,
            via=via,
            user_id=principal.user_id,
            kind=CHANGE_UPDATED,
            event_id=row.id,
            calendar_id=calendar.id,
            now=now,
            before=before,
            after=after,
            rows=rows,
            recurring_event_id=row.recurring_event_id,
            detail={"reply": {"email": mine[0]["email"], "responseStatus": response}},
        )["id"]
    return {**answer, "changed": True, "outcome": RECORDED, "changeId": change_id}


def said(result: dict[str, Any]) -> str:
    """What was recorded, in a sentence (the reply page's)."""
    return f"{result['email']}: {_WORDS[result['responseStatus']]} to “{result['title']}”."


def invitation(conn: Connection, *, key: bytes, token: str) -> dict[str, Any]:
    """What a reply link answers, for the guest to see before answering (the reply page):
    ``{title, when, location, recurrence, organizer, email, responseStatus}``, ``when`` in
    words in the event's time zone (``when_words``). Refused as the reply itself would be
    (``InboundMailRefused``): a link altered, an event gone, a guest no longer invited, an
    older invitation. Reads only."""
    found = read_token(key, token)
    if found is None:
        raise _refused("This reply link is not valid: it was altered, or not made here.")
    event_id, address, sequence = found
    _, row, calendar, people, mine = _invited(
        conn, event_id=event_id, address=address, sequence=sequence, what="link"
    )
    event = event_public(row, calendar_name=calendar.name, tz=zone(calendar.time_zone))
    organizer = people["organizer"]
    name, organizer_email = organizer.get("name") or "", organizer["email"]
    return {
        "title": event["title"],
        "when": when_words(event, calendar.time_zone),
        "location": event.get("location") or None,
        "recurrence": event.get("recurrence") or [],
        "organizer": (
            f"{name} <{organizer_email}>" if name and name != organizer_email else organizer_email
        ),
        "email": mine[0]["email"],
        "responseStatus": mine[0]["responseStatus"],
    }


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def _day(d: date) -> str:
    return f"{_DAYS[d.weekday()]} {d.day} {_MONTHS[d.month - 1]} {d.year}"


def when_words(event: dict[str, Any], time_zone: str) -> str:
    """An event's time in words, in its calendar's time zone (``event``: the public object,
    whose times carry that zone's offset): ``Tuesday 2 March 2027, 11:00 to 11:30
    (Europe/Berlin)``; ``Tuesday 2 March 2027 (all day)``; the end's day too when it is
    another (an all-day event's ``endsAt`` is the next midnight, not shown)."""
    start = datetime.fromisoformat(event["startsAt"])
    end = datetime.fromisoformat(event["endsAt"])
    if event.get("allDay"):
        last = max(start.date(), end.date() - timedelta(days=1))
        days = (
            _day(start.date()) if last == start.date() else f"{_day(start.date())} to {_day(last)}"
        )
        return f"{days} (all day)"
    ends = f"{end:%H:%M}" if end.date() == start.date() else f"{_day(end.date())}, {end:%H:%M}"
    return f"{_day(start.date())}, {start:%H:%M} to {ends} ({time_zone})"


@dataclass(frozen=True, slots=True)
class InboundReply:
    """What an iMIP ``REPLY`` message says (``parse_reply``)."""

    uid: str
    recurrence_id: Any
    address: str
    organizer: str
    response: str
    sequence: int
    stamp: datetime | None  # its DTSTAMP, in UTC (None: it has none)


def apply_inbound(
    conn: Connection, *, raw: bytes, now: datetime, transport: str = "cli"
) -> dict[str, Any]:
    """An iMIP REPLY message (raw RFC 5322): the attendee's answer recorded."""
    return apply_reply(conn, reply=parse_reply(raw), now=now, transport=transport)


def apply_reply(
    conn: Connection, *, reply: InboundReply, now: datetime, transport: str
) -> dict[str, Any]:
    """A reply ``parse_reply`` read: the attendee's answer recorded."""
    event_id = _event_id(conn, reply.uid, reply.recurrence_id)
    return _apply(
        conn,
        event_id=event_id,
        address=reply.address,
        sequence=reply.sequence,
        response=reply.response,
        transport=transport,
        now=now,
        stamp=reply.stamp if reply.stamp is not None else now,
        organizer=reply.organizer,
    )


def parse_reply(raw: bytes) -> InboundReply:
    """Read an iMIP REPLY message (no database: the fronts run it off the event loop)."""
    if len(raw) > MAX_INBOUND_BYTES:
        raise PayloadTooLarge(
            f"The message is larger than {MAX_INBOUND_BYTES // (1024 * 1024)} MB: an iMIP reply "
            "is a few kilobytes. Nothing was recorded."
        )
    check_shape(raw)
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        if not isinstance(message, EmailMessage):  # pragma: no cover - the policy makes one
            raise _refused("The body is not an email message.")
        return _read_reply(message)
    except RecursionError:  # a nesting ``check_shape`` did not see: refused all the same
        raise _refused(
            f"The message nests its parts too deeply (more than {MAX_NESTED} nested multipart "
            "or message parts; an iMIP reply has a few)."
        ) from None


def check_shape(raw: bytes) -> None:
    """Refuse, before Python's ``email`` parser reads it, a message nested deeper or split
    into more parts than any reply is: the parser recurses once a nested part (2,000 nested
    parts: ``RecursionError``) and takes some 0.2 ms of CPU a part (60,000 parts: 12 s).

    A scan of the raw bytes, linear and in C (``re``): every ``Content-Type`` header of a
    multipart or ``message/*`` part counts as a nested part (no part nests without one), and
    every line that opens a part of a boundary so declared counts as a part. It counts such
    lines wherever they stand, so a text that quotes them counts them too: a reply that does
    so hundreds of times is no reply."""
    nested = 0
    boundaries: set[bytes] = set()
    for found in _CONTENT_TYPE.finditer(raw):
        value = found.group(1).lower().lstrip()
        if value.startswith((b"multipart/", b"message/")):
            nested += 1
            if nested > MAX_NESTED:
                raise _refused(
                    f"The message has more than {MAX_NESTED} nested multipart or message parts "
                    "(an iMIP reply has a few)."
                )
            boundary = _BOUNDARY.search(found.group(1))
            if boundary is not None:
                boundaries.add(boundary.group(1) or boundary.group(2))
    parts = 0
    for found in _DELIMITER.finditer(raw):
        if found.group(1) in boundaries:
            parts += 1
            if parts > MAX_PARTS:
                raise _refused(
                    f"The message has more than {MAX_PARTS} parts (an iMIP reply has a few)."
                )


def _read_reply(message: EmailMessage) -> InboundReply:
    sender = [a for _, a in getaddresses(message.get_all("From", [])) if "@" in a]
    if len(sender) != 1:
        raise _refused("The message has no single From address.")
    part = _calendar_part(message)
    if part is None:
        raise _refused("The message has no text/calendar part (an iMIP reply has one).")
    try:
        cal = Calendar.from_ical(part)
    except Exception:
        raise _refused("Its text/calendar part is not iCalendar text.") from None
    if str(cal.get("METHOD", "")).upper() != "REPLY":
        raise _refused("Its iCalendar object is not a METHOD:REPLY.")
    events = list(cal.walk("VEVENT"))
    if len(events) != 1:
        raise _refused("A reply holds exactly one VEVENT.")
    vevent = events[0]
    uid = str(vevent.get("UID", "")).strip()
    found = vevent.get("ATTENDEE")
    if not uid or found is None or isinstance(found, list):
        raise _refused("A reply names its event (UID) and exactly one ATTENDEE.")
    address = _mailto(found)
    if address is None or address.lower() != sender[0].lower():
        raise _refused("The reply's ATTENDEE is not the address it was sent from.")
    organizer = vevent.get("ORGANIZER")
    organizer_address = None if organizer is None else _mailto(organizer)
    if organizer_address is None:
        raise _refused("The reply has no ORGANIZER.")
    response = _PARTSTATS.get(str(found.params.get("PARTSTAT", "")).upper())
    if response is None:
        raise _refused("The reply's PARTSTAT is not ACCEPTED, TENTATIVE or DECLINED.")
    try:
        sequence = int(vevent.get("SEQUENCE", 0))
    except (TypeError, ValueError):
        raise _refused("Its SEQUENCE is not a number.") from None
    return InboundReply(
        uid,
        vevent.get("RECURRENCE-ID"),
        address,
        organizer_address,
        response,
        sequence,
        _stamp(vevent.get("DTSTAMP")),
    )


def _stamp(prop: Any) -> datetime | None:
    """A ``DTSTAMP`` as a UTC date-time (RFC 5545 writes it in UTC; one without a zone is
    taken as UTC); ``None`` when there is none or it is no date-time."""
    value = getattr(prop, "dt", None)
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _calendar_part(message: EmailMessage) -> bytes | None:
    for part in message.walk():
        if part.get_content_type() in ("text/calendar", "application/ics"):
            payload = part.get_payload(decode=True)
            if isinstance(payload, bytes):
                return payload
    return None


def _mailto(prop: Any) -> str | None:
    text = str(prop).strip()
    if text[:7].lower() != "mailto:" or "@" not in text:
        return None
    return text[7:]


def _event_id(conn: Connection, uid: str, rid: Any) -> str:
    """The event a reply's ``UID`` (and ``RECURRENCE-ID``) names: an event or a series by
    its id, or an occurrence by its series and original start."""
    if rid is None:
        return uid
    value = getattr(rid, "dt", None)
    if isinstance(value, datetime):
        original = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        found = conn.execute(
            select(events_t.c.id).where(
                events_t.c.recurring_event_id == uid, events_t.c.original_starts_at == original
            )
        ).scalar()
    elif isinstance(value, date):
        found = conn.execute(
            select(events_t.c.id).where(
                events_t.c.recurring_event_id == uid,
                events_t.c.id == f"{uid}_{value.strftime('%Y%m%d')}",
            )
        ).scalar()
    else:
        found = None
    if found is None:
        raise _refused("No invitation of this service went out for that occurrence.")
    return str(found)
