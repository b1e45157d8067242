"""Booking through a scheduling link (``calendar.links``): the free slots a guest sees, the
booking, and the booking's reschedule and cancel.

The slots are ``availability.find_free_time``'s, asked with the link's key: every calendar the
key reaches (and whatever that function counts as busy, and the rules binding the key), within
the link's window and from now on. A booking is a write of the key like any other (the
operations run through ``gateway.perform``), made by the guest (``actor`` ``guest``, transport
``link``): the slot is checked again in the booking's transaction, a use of the link is taken by
one conditional ``UPDATE`` (``uses_left > 0``: exact under concurrency, on any number of hosts),
and the event is created with ``ifFree`` (the calendar locked, its busy time read again), so two
guests on one slot make one event; the other is answered ``slot_taken`` with the fresh slots.
"""

from __future__ import annotations

import contextlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from types import SimpleNamespace
from typing import Any

import orjson
from sqlalchemy import Connection, and_, bindparam, insert, or_, select, update

from calendar_service.access.keys import (
    APPROVAL_NONE,
    KEY_COLUMNS,
    KeyRow,
    Principal,
    authorize,
    key_row_of,
)
from calendar_service.calendar.availability import find_free_time, find_free_time_later
from calendar_service.calendar.events.create import create_event_from_input
from calendar_service.calendar.events.existing import delete_event, get_event
from calendar_service.calendar.links import check_guest_name, new_token, token_hash
from calendar_service.journal.change_table import GUEST
from calendar_service.journal.invitations import MailPolicy
from calendar_service.journal.mail_queue import PENDING, mail_t
from calendar_service.journal.webhook_outbox import BOOKING_CREATED, enqueue
from calendar_service.platform.db import Statement
from calendar_service.platform.deferred import Later
from calendar_service.platform.emails import check_email
from calendar_service.platform.errors import (
    CalendarError,
    Conflict,
    FieldError,
    LinkGone,
    NotFound,
    SlotTaken,
    ValidationFailed,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models import TITLE_MAX, calendars_t, endpoints_t, keys_t
from calendar_service.platform.models.columns import from_db
from calendar_service.platform.models.links import bookings_t, links_t
from calendar_service.platform.timeutil import (
    format_in,
    format_utc,
    is_valid_zone,
    parse_date_time,
    parse_day,
    zone,
)

MANAGE_PATH = "/book/manage/"
SLOTS_MOST = 2000  # two weeks of 15-minute slots around the clock fit
TOKEN_MOST = 100
_BOOK_FIELDS = frozenset({"startsAt", "name", "email"})


@dataclass(frozen=True, slots=True)
class OpenLink:
    """A link in force, its key's principal, and its calendar's zone."""

    row: Any
    principal: Principal
    tz: tzinfo
    zone_name: str


# A link, its key (``keys.KEY_COLUMNS``, to authorize it) and its calendar's zone (``None``
# when the calendar is gone), in one read: the page pays one round trip before the slots.
_ZONE = calendars_t.alias("link_calendar")
_LINK = select(
    *KEY_COLUMNS,
    *(c.label(f"link_{c.name}") for c in links_t.c),
    _ZONE.c.time_zone.label("link_zone"),
).select_from(
    links_t.join(keys_t, keys_t.c.id == links_t.c.key_id)
    .outerjoin(
        calendars_t,
        and_(calendars_t.c.id == keys_t.c.calendar_id, calendars_t.c.user_id == keys_t.c.user_id),
    )
    .outerjoin(_ZONE, _ZONE.c.id == links_t.c.calendar_id)
)
_LINK_NAMES = tuple(c.name for c in links_t.c)
_LINK_TIMES = frozenset(("time_min", "time_max", "expires_at", "created_at", "revoked_at"))
# Read straight from the driver (``db.Statement``): the page's one statement before its slots.
_BY_TOKEN = Statement(_LINK.where(links_t.c.token_hash == bindparam("token_hash")))
_BY_ID = Statement(_LINK.where(links_t.c.id == bindparam("link_id")))


@dataclass(frozen=True, slots=True)
class _Found:
    """A link's row (``row``: its columns by name, and ``zone``) and its key's."""

    row: Any
    key: KeyRow


def _found(result: Any) -> _Found | None:
    """A link read by ``_BY_TOKEN`` or ``_BY_ID`` (driver values: date-times through
    ``from_db``)."""
    if result is None:
        return None
    first = len(KEY_COLUMNS)
    values = {
        name: from_db(value) if name in _LINK_TIMES and value is not None else value
        for name, value in zip(_LINK_NAMES, result[first:], strict=False)
    }
    row = SimpleNamespace(**values, zone=result[first + len(_LINK_NAMES)])
    return _Found(row, key_row_of(result))


def _row_of_token(conn: Connection, token: str) -> _Found | None:
    if not isinstance(token, str) or not token or len(token) > TOKEN_MOST:
        return None
    hashed = token_hash(token)
    found = _found(_BY_TOKEN.first(conn, token_hash=hashed))
    if found is None or not hmac.compare_digest(found.row.token_hash, hashed):
        return None
    return found


def _opened(found: _Found, now: datetime, *, using: bool) -> OpenLink:
    """The link ``found`` if it takes bookings (``using``: a use is left too), else 410
    ``link_gone``."""
    row = found.row
    if row.revoked_at is not None:
        raise LinkGone("This scheduling link was withdrawn. Ask whoever sent it for a new one.")
    if row.expires_at <= now:
        raise LinkGone("This scheduling link has expired. Ask whoever sent it for a new one.")
    if using and row.uses_left <= 0:
        raise LinkGone(
            "This scheduling link has been used as many times as it may be. Ask whoever sent "
            "it for a new one."
        )
    try:
        principal = authorize(found.key, now=now)
    except CalendarError:
        raise LinkGone(
            "This scheduling link no longer works: the access it was made with was withdrawn. "
            "Ask whoever sent it for a new one."
        ) from None
    if principal.approval != APPROVAL_NONE:  # a guest cannot wait for the owner's approval
        raise LinkGone(
            "This scheduling link is paused: its bookings would now wait for the owner's "
            "approval. Ask whoever sent it for a new one."
        )
    if row.zone is None:
        raise LinkGone("This scheduling link's calendar was deleted.")
    return OpenLink(row, principal, zone(row.zone), row.zone)


def open_link(conn: Connection, *, token: str, now: datetime, using: bool = True) -> OpenLink:
    """The link whose token is ``token``: 404 if there is none, 410 if it takes no more
    bookings (revoked, expired, used up with ``using``, its key revoked or expired)."""
    found = _row_of_token(conn, token)
    if found is None:
        raise NotFound("There is no scheduling link at this address: check the link you were sent.")
    return _opened(found, now, using=using)


def _bound(value: Any, field: str, tz: tzinfo, errors: list[FieldError]) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or check_text(field, value):
        errors.append(FieldError(field, "must be an RFC 3339 date-time or a date"))
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = parse_day(text, tz)
            return datetime.combine(day, datetime.min.time(), tz).astimezone(UTC)
        return parse_date_time(text, tz)
    except ValueError as exc:
        errors.append(FieldError(field, str(exc)))
        return None


def _window(link: OpenLink, now: datetime, low: datetime | None, high: datetime | None) -> Any:
    """The window slots are offered in: the link's, from now on, narrowed to ``[low, high)``."""
    start = max(link.row.time_min, now, low or link.row.time_min)
    end = min(link.row.time_max, high or link.row.time_max)
    return start, end


def _free_later(
    conn: Connection, link: OpenLink, window: Any, tz_name: str
) -> dict[str, Any] | Later:
    start, end = window
    if end - start < timedelta(minutes=link.row.duration_minutes):
        return {"timeZone": tz_name, "slots": []}
    body = {
        "timeMin": format_utc(start),
        "timeMax": format_utc(end),
        "durationMinutes": link.row.duration_minutes,
        "timeZone": tz_name,
    }
    return find_free_time_later(conn, principal=link.principal, body=body, most=SLOTS_MOST)


def _answer(link: OpenLink, found: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "title": link.row.title,
        "durationMinutes": link.row.duration_minutes,
        "timeZone": found["timeZone"],
        "slots": found["slots"],
    }
    if link.row.description:
        shown["description"] = link.row.description
    return shown


def _zone_refused(time_zone: Any) -> FieldError | None:
    """The refusal of a ``timeZone`` that is given and not an IANA zone, else ``None``."""
    if time_zone is None or (isinstance(time_zone, str) and is_valid_zone(time_zone)):
        return None
    return FieldError("timeZone", "must be an IANA time zone such as Europe/Berlin")


@dataclass(frozen=True, slots=True)
class SlotWindow:
    """What a guest asks of a link's slots, as given (``timeMin``, ``timeMax``, ``timeZone``;
    each may be left out): those in ``[time_min, time_max)``, shown in ``time_zone`` (default:
    the link's calendar's)."""

    time_min: Any = None
    time_max: Any = None
    time_zone: Any = None


ALL_SLOTS = SlotWindow()


def link_slots(
    conn: Connection, *, token: str, now: datetime, window: SlotWindow = ALL_SLOTS
) -> dict[str, Any] | Later:
    """``GET /api/v1/book/{token}/slots``: ``{title, durationMinutes, timeZone, slots}``, the
    slots ``window`` asks for, a ``Later`` when series must be expanded (off the event loop,
    after the transaction)."""
    refused = _zone_refused(window.time_zone)
    if refused is not None:  # before the link: a bad zone is a 400 whatever became of it
        raise ValidationFailed([refused])
    link = open_link(conn, token=token, now=now)
    return slots_of(conn, link, now=now, window=window)


def slots_of(
    conn: Connection, link: OpenLink, *, now: datetime, window: SlotWindow
) -> dict[str, Any] | Later:
    """``link_slots`` of a link already open (a booking's, to reschedule it)."""
    time_zone = window.time_zone
    refused = _zone_refused(time_zone)
    errors = [] if refused is None else [refused]
    tz_name = link.zone_name if time_zone is None or refused is not None else str(time_zone)
    tz = zone(tz_name) if not errors else link.tz
    low = _bound(window.time_min, "timeMin", tz, errors)
    high = _bound(window.time_max, "timeMax", tz, errors)
    if errors:
        raise ValidationFailed(errors)
    found = _free_later(conn, link, _window(link, now, low, high), tz_name)
    if isinstance(found, Later):
        return found.then(lambda done: _answer(link, done))
    return _answer(link, found)


def _fresh(conn: Connection, link: OpenLink, now: datetime) -> list[dict[str, Any]]:
    """The slots free now (in the link's calendar's zone), for a refusal: the first 100."""
    found = _free_later(conn, link, _window(link, now, None, None), link.zone_name)
    done = found.finish() if isinstance(found, Later) else found
    return list(done["slots"][:100])


def _offered(conn: Connection, link: OpenLink, start: datetime, now: datetime) -> bool:
    """Whether ``start`` is one of the link's slots now (on the grid, free, in its window)."""
    length = timedelta(minutes=link.row.duration_minutes)
    if start < max(link.row.time_min, now) or start + length > link.row.time_max:
        return False
    body = {
        "timeMin": format_utc(start),
        "timeMax": format_utc(start + length),
        "durationMinutes": link.row.duration_minutes,
        "timeZone": "UTC",
        "limit": 1,
    }
    slots = find_free_time(conn, principal=link.principal, body=body)["slots"]
    return bool(slots) and parse_date_time(slots[0]["startsAt"], UTC) == start


def check_booking(body: Any) -> None:
    """A booking's body checked before its link is read (every bad field named, whatever
    became of the link): ``{startsAt, name, email}``, ``startsAt`` read in UTC here (the
    booking reads it again in the calendar's zone)."""
    _guest(body, UTC)


@dataclass(frozen=True, slots=True)
class _Guest:
    """Who books, and the slot's start: a booking's body, checked (``_guest``)."""

    name: str
    email: str
    start: datetime


def _guest(body: Any, tz: tzinfo) -> _Guest:
    """The booking's body: ``{startsAt, name, email}``, every bad field named."""
    if not isinstance(body, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object")])
    errors = [
        FieldError(k[:100], "is not a field of a booking") for k in body.keys() - _BOOK_FIELDS
    ]
    name = check_guest_name(body.get("name"), "name", errors)
    email = check_email(body.get("email"), "email", errors)
    start = _bound(body.get("startsAt"), "startsAt", tz, errors)
    if body.get("startsAt") is None:
        errors.append(FieldError("startsAt", "must be one of the link's slots (its startsAt)"))
    if errors or name is None or email is None or start is None:
        raise ValidationFailed(errors)
    return _Guest(name, email, start)


def _send(principal: Principal, mail: MailPolicy | None) -> str | None:
    """Invite the guest when the service has mail and the key may invite."""
    return "all" if mail is not None and mail.configured and principal.may_invite else None


def _make_event(
    conn: Connection,
    link: OpenLink,
    guest: _Guest,
    *,
    now: datetime,
    via: Any,
    mail: MailPolicy | None,
) -> dict[str, Any]:
    """The booking's event, created with ``ifFree``; ``slot_taken`` if the time was taken."""
    row = link.row
    title = f"{row.title} with {guest.name}"
    body: dict[str, Any] = {
        "title": title if len(title) <= TITLE_MAX else row.title,
        "startsAt": format_utc(guest.start),
        "endsAt": format_utc(guest.start + timedelta(minutes=row.duration_minutes)),
        "calendarId": row.calendar_id,
        "ifFree": True,
        "attendees": [{"email": guest.email, "name": guest.name}],
    }
    if row.description:
        body["description"] = row.description
    try:
        event, _ = create_event_from_input(
            conn,
            principal=link.principal,
            body=body,
            now=now,
            via=via,
            send_updates=_send(link.principal, mail),
            mail=mail,
        )
    except Conflict:
        raise _taken(conn, link, now) from None
    return event


def _taken(conn: Connection, link: OpenLink, now: datetime) -> SlotTaken:
    return SlotTaken(
        "That time is no longer free: someone booked it or a meeting was made meanwhile. "
        "Pick another of the slots listed.",
        _fresh(conn, link, now),
    )


def _as_guest(via: Any, link_id: str) -> None:
    """The change is the guest's, through the link (``via`` is the gateway's)."""
    if via is not None:
        via.actor_type = GUEST
        via.actor_id = link_id


def book(
    conn: Connection,
    *,
    principal: Principal,
    token: str,
    body: Any,
    now: datetime,
    base_url: str,
    via: Any = None,
    mail: MailPolicy | None = None,
) -> dict[str, Any]:
    """``POST /api/v1/book/{token}``: one event in the link's calendar, the guest its
    attendee; ``{booking: {eventId, startsAt, endsAt, manageUrl}}``."""
    link = open_link(conn, token=token, now=now)
    if link.row.key_id != principal.key_id:  # the front opened this very link
        raise NotFound("There is no scheduling link at this address.")
    guest = _guest(body, link.tz)
    if not _offered(conn, link, guest.start, now):
        raise _taken(conn, link, now)
    taken = conn.execute(
        update(links_t)
        .where(
            links_t.c.id == link.row.id,
            links_t.c.uses_left > 0,
            links_t.c.revoked_at.is_(None),
            links_t.c.expires_at > now,
        )
        .values(uses_left=links_t.c.uses_left - 1)
    )
    if taken.rowcount != 1:
        raise LinkGone(
            "This scheduling link has just been used as many times as it may be. Ask whoever "
            "sent it for a new one."
        )
    _as_guest(via, link.row.id)
    event = _make_event(conn, link, guest, now=now, via=via, mail=mail)
    manage = new_token()
    booking_id = new_id("bk")
    conn.execute(
        insert(bookings_t).values(
            id=booking_id,
            link_id=link.row.id,
            event_id=event["id"],
            manage_hash=token_hash(manage),
            guest_email=guest.email,
            guest_name=guest.name,
            created_at=now,
            cancelled_at=None,
        )
    )
    booking = {
        "id": booking_id,
        "eventId": event["id"],
        "startsAt": format_in(guest.start, link.tz),
        "endsAt": format_in(guest.start + timedelta(minutes=link.row.duration_minutes), link.tz),
        "manageUrl": f"{base_url}{MANAGE_PATH}{manage}",
    }
    _mail_manage_link(conn, event_id=event["id"], email=guest.email, url=booking["manageUrl"])
    _notify(conn, link, booking, event, guest={"name": guest.name, "email": guest.email}, now=now)
    return {"booking": booking}


def _mail_manage_link(conn: Connection, *, event_id: str, email: str, url: str) -> None:
    """The guest's invitation, queued by the create, carries their manage link too."""
    m = mail_t.c
    for row in conn.execute(
        select(m.id, m.payload).where(
            m.event_id == event_id, m.recipient == email, m.status == PENDING
        )
    ).all():
        payload = orjson.loads(row.payload)
        payload["manage"] = url
        conn.execute(
            update(mail_t).where(m.id == row.id).values(payload=orjson.dumps(payload).decode())
        )


def _notify(
    conn: Connection,
    link: OpenLink,
    booking: dict[str, Any],
    event: dict[str, Any],
    *,
    guest: dict[str, str],
    now: datetime,
) -> None:
    """``calendar.booking.created`` to the owner's webhook and the key's subscriptions that
    take it (never the manage URL: it is the guest's)."""
    e = endpoints_t.c
    found = conn.execute(
        select(e.id, e.status, e.events).where(
            e.user_id == link.row.user_id,
            or_(e.key_id.is_(None), e.key_id == link.row.key_id),
            e.status != "deleted",
        )
    ).all()
    shown = {k: v for k, v in booking.items() if k != "manageUrl"}
    data = {
        "booking": {**shown, "linkId": link.row.id, "guest": guest},
        "event": event,
    }
    for endpoint in found:
        if endpoint.events is not None and f'"{BOOKING_CREATED}"' not in endpoint.events:
            continue
        enqueue(
            conn,
            user_id=link.row.user_id,
            endpoint_id=endpoint.id,
            event_type=BOOKING_CREATED,
            data=data,
            now=now,
            active=endpoint.status == "active",
        )


# ---------------------------------------------------------------------------------------------
# After: the guest's manage link


@dataclass(frozen=True, slots=True)
class Managed:
    booking: Any
    link: OpenLink


def _managed_row(conn: Connection, manage_token: str) -> Any:
    if not isinstance(manage_token, str) or not manage_token or len(manage_token) > TOKEN_MOST:
        return None
    hashed = token_hash(manage_token)
    row = conn.execute(select(bookings_t).where(bookings_t.c.manage_hash == hashed)).first()
    if row is None or not hmac.compare_digest(row.manage_hash, hashed):
        return None
    return row


def managed(conn: Connection, *, manage_token: str, now: datetime) -> Managed:
    """The booking a manage link names, while it may still be changed (410 once cancelled
    or when its link no longer works)."""
    row = _managed_row(conn, manage_token)
    if row is None:
        raise NotFound("There is no booking at this address: check the link you were sent.")
    if row.cancelled_at is not None:
        raise LinkGone("This booking was cancelled.")
    found = _found(_BY_ID.first(conn, link_id=row.link_id))
    assert found is not None
    return Managed(row, _opened(found, now, using=False))


def booking_public(conn: Connection, *, manage_token: str, now: datetime) -> dict[str, Any]:
    """The booking as its guest sees it: the link's title, the event's time, the guest."""
    found = managed(conn, manage_token=manage_token, now=now)
    link = found.link
    event = get_event(conn, principal=link.principal, event_id=found.booking.event_id)
    return {
        "title": link.row.title,
        "durationMinutes": link.row.duration_minutes,
        "timeZone": link.zone_name,
        "startsAt": event["startsAt"],
        "endsAt": event["endsAt"],
        "name": found.booking.guest_name,
        "email": found.booking.guest_email,
    }


def _drop_event(
    conn: Connection,
    principal: Principal,
    event_id: str,
    *,
    now: datetime,
    via: Any,
    mail: MailPolicy | None,
) -> None:
    """A booking's event deleted as the guest's change (cancelled or moved); the owner may
    have deleted it already: the booking goes on all the same."""
    with contextlib.suppress(NotFound):
        delete_event(
            conn,
            principal=principal,
            event_id=event_id,
            now=now,
            via=via,
            send_updates=_send(principal, mail),
            mail=mail,
        )


def cancel_booking(
    conn: Connection,
    *,
    principal: Principal,
    manage_token: str,
    now: datetime,
    via: Any = None,
    mail: MailPolicy | None = None,
) -> dict[str, Any]:
    """The guest cancels: the event is deleted (a change of the guest's), the link's use is
    given back. ``{cancelled: true}``."""
    found = managed(conn, manage_token=manage_token, now=now)
    link = found.link
    _as_guest(via, link.row.id)
    _drop_event(conn, principal, found.booking.event_id, now=now, via=via, mail=mail)
    conn.execute(
        update(bookings_t).where(bookings_t.c.id == found.booking.id).values(cancelled_at=now)
    )
    conn.execute(
        update(links_t)
        .where(links_t.c.id == link.row.id, links_t.c.uses_left < links_t.c.uses)
        .values(uses_left=links_t.c.uses_left + 1)
    )
    return {"cancelled": True}


def reschedule_booking(
    conn: Connection,
    *,
    principal: Principal,
    manage_token: str,
    body: Any,
    now: datetime,
    via: Any = None,
    mail: MailPolicy | None = None,
) -> dict[str, Any]:
    """The guest moves the booking to another of the link's slots: the old event is deleted
    and a new one made (two changes of the guest's, one transaction); the manage link stays."""
    found = managed(conn, manage_token=manage_token, now=now)
    link = found.link
    row = found.booking
    fields = {"startsAt": body.get("startsAt") if isinstance(body, dict) else None}
    guest = _guest({**fields, "name": row.guest_name, "email": row.guest_email}, link.tz)
    _as_guest(via, link.row.id)
    _drop_event(conn, principal, row.event_id, now=now, via=via, mail=mail)
    if not _offered(conn, link, guest.start, now):
        raise _taken(conn, link, now)
    event = _make_event(conn, link, guest, now=now, via=via, mail=mail)
    conn.execute(update(bookings_t).where(bookings_t.c.id == row.id).values(event_id=event["id"]))
    start = guest.start
    end = start + timedelta(minutes=link.row.duration_minutes)
    return {
        "booking": {
            "id": row.id,
            "eventId": event["id"],
            "startsAt": format_in(start, link.tz),
            "endsAt": format_in(end, link.tz),
        }
    }


def managed_slots(
    conn: Connection, *, manage_token: str, now: datetime, window: SlotWindow = ALL_SLOTS
) -> dict[str, Any] | Later:
    """The slots a booking may be moved to (its link's, whether or not a use is left)."""
    link = managed(conn, manage_token=manage_token, now=now).link
    return slots_of(conn, link, now=now, window=window)


def link_facts(conn: Connection, *, token: str, now: datetime) -> dict[str, Any]:
    """What a link's page shows above its slots: its title, description, length and window."""
    row = open_link(conn, token=token, now=now).row
    return {
        "title": row.title,
        "description": row.description,
        "durationMinutes": row.duration_minutes,
        "timeMin": row.time_min,
        "timeMax": row.time_max,
        "guestName": row.guest_name,
        "guestEmail": row.guest_email,
    }
