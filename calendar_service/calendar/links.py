"""Scheduling links: a write key makes a link (``createSchedulingLink``) that a person opens
to pick a free time; the link belongs to the key.

A link offers ``durationMinutes`` slots within ``[timeMin, timeMax)`` in one calendar the key
reaches, at most ``uses`` times (1 to 100), until ``expiresAt`` (default: ``timeMax``). Its
token (192 bits, ``secrets.token_urlsafe``) is in its URL only: it is kept as its SHA-256, and
shown once, in the create's answer. The key lists and deletes its own links; the owner sees
and revokes every link (``owner_links``, ``revoke_link``: the settings pages). A link of a key
revoked or expired takes no more bookings from that moment (``booking.open_link`` reads the
key with the link). Bookings are ``calendar.booking``'s.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from calendar_service.access.keys import APPROVAL_NONE, Principal
from calendar_service.calendar.availability import MAX_DURATION, MAX_WINDOW, whole_number
from calendar_service.calendar.calendars import resolve_target
from calendar_service.calendar.event_input import check_title
from calendar_service.platform.emails import check_email
from calendar_service.platform.errors import BadRequest, FieldError, NotFound, ValidationFailed
from calendar_service.platform.ids import new_id
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models import calendars_t, keys_t
from calendar_service.platform.models.links import links_t
from calendar_service.platform.timeutil import (
    format_in,
    format_utc,
    midnight,
    parse_date_time,
    parse_day,
    zone,
)

TOKEN_BYTES = 24  # 192 bits
BOOK_PATH = "/book/"
MOST_USES = 100
MOST_PER_KEY = 100  # links in force a key may have at once
DESCRIPTION_MAX = 2000
GUEST_NAME_MAX = 100
_FIELDS = frozenset(
    {
        "title",
        "durationMinutes",
        "timeMin",
        "timeMax",
        "calendarId",
        "description",
        "guest",
        "uses",
        "expiresAt",
    }
)


def token_hash(token: str) -> str:
    """What is kept of a token: its SHA-256, hex (a token is 192 random bits: no salt or
    slow hash needed; the lookup is by this value, and the match is checked again in constant
    time)."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def check_guest_name(value: Any, field: str, errors: list[FieldError]) -> str | None:
    """A person's name as a guest gives it: 1 to 100 characters, no line breaks or control
    characters (it goes into mail headers and iCalendar), no ``<`` or ``>``."""
    if not isinstance(value, str) or not value.strip():
        errors.append(FieldError(field, "must be your name, 1 to 100 characters"))
        return None
    name = value.strip()
    if check_text(field, name) or any(ord(c) < 32 or ord(c) == 127 for c in name):
        errors.append(FieldError(field, "must be one line, without control characters"))
        return None
    if "<" in name or ">" in name:
        errors.append(FieldError(field, "must not contain < or >"))
        return None
    if len(name) > GUEST_NAME_MAX:
        errors.append(FieldError(field, f"must be at most {GUEST_NAME_MAX} characters"))
        return None
    return name


def _instant(value: Any, field: str, tz: Any, errors: list[FieldError]) -> datetime | None:
    if not isinstance(value, str) or check_text(field, value):
        errors.append(FieldError(field, "must be an RFC 3339 date-time"))
        return None
    text = value.strip()
    try:
        if len(text) == 10:  # a date: its midnight in the calendar's zone
            return midnight(parse_day(text, tz), tz).astimezone(UTC)
        return parse_date_time(text, tz)
    except ValueError as exc:
        errors.append(FieldError(field, str(exc)))
        return None


def create_link(
    conn: Connection,
    *,
    principal: Principal,
    body: Any,
    now: datetime,
    base_url: str,
    via: Any = None,
) -> dict[str, Any]:
    """``createSchedulingLink``: a new link of the key (400s naming every bad field); its
    answer is the only one that carries its ``url``."""
    if not isinstance(body, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object")])
    errors = [
        FieldError(k[:100], "is not a field of a scheduling link") for k in body.keys() - _FIELDS
    ]
    calendar = None
    calendar_id = body.get("calendarId")
    if calendar_id is not None and not isinstance(calendar_id, str):
        errors.append(FieldError("calendarId", "must be a calendar id"))
    else:
        try:
            calendar = resolve_target(
                conn, principal=principal, calendar_id=calendar_id, calendar_name=None
            )
        except ValidationFailed as exc:
            errors.extend(exc.errors)
    tz = zone(calendar.time_zone) if calendar is not None else zone("UTC")
    title = check_title(body.get("title"), errors)
    duration = whole_number(body.get("durationMinutes"), "durationMinutes", 1, MAX_DURATION, errors)
    low = _instant(body.get("timeMin"), "timeMin", tz, errors)
    high = _instant(body.get("timeMax"), "timeMax", tz, errors)
    if low is not None and high is not None:
        if high <= low:
            errors.append(FieldError("timeMax", "must be after timeMin"))
        elif high - low > MAX_WINDOW:
            errors.append(
                FieldError("timeMax", f"must be at most {MAX_WINDOW.days} days after timeMin")
            )
        elif high <= now:
            errors.append(FieldError("timeMax", "is in the past: the link would offer nothing"))
        elif duration is not None and high - low < timedelta(minutes=duration):
            errors.append(FieldError("timeMax", "leaves no room for one durationMinutes slot"))
    description = body.get("description")
    if description is not None and (
        not isinstance(description, str) or len(description) > DESCRIPTION_MAX
    ):
        errors.append(
            FieldError("description", f"must be text of at most {DESCRIPTION_MAX} characters")
        )
    elif description is not None:
        errors.extend(check_text("description", description))
    guest_email = guest_name = None
    guest = body.get("guest")
    if guest is not None:
        if not isinstance(guest, dict) or guest.keys() - {"email", "name"}:
            errors.append(FieldError("guest", "must be an object {email?, name?}"))
        else:
            if guest.get("email") is not None:
                guest_email = check_email(guest["email"], "guest.email", errors)
            if guest.get("name") is not None:
                guest_name = check_guest_name(guest["name"], "guest.name", errors)
    uses = (
        1 if body.get("uses") is None else whole_number(body["uses"], "uses", 1, MOST_USES, errors)
    )
    expires = high
    if body.get("expiresAt") is not None:
        expires = _instant(body["expiresAt"], "expiresAt", tz, errors)
        if expires is not None and expires <= now:
            errors.append(FieldError("expiresAt", "must be in the future"))
    if errors or calendar is None or title is None or duration is None or uses is None:
        raise ValidationFailed(errors)
    assert low is not None and high is not None and expires is not None
    if principal.approval != APPROVAL_NONE:
        raise BadRequest(
            "This API key's writes wait for the owner's approval, and a guest cannot wait for "
            "one: ask the owner for a key whose writes are made at once to make scheduling links."
        )
    in_force = conn.execute(
        select(func.count())
        .select_from(links_t)
        .where(
            links_t.c.key_id == principal.key_id,
            links_t.c.revoked_at.is_(None),
            links_t.c.uses_left > 0,
            links_t.c.expires_at > now,
        )
    ).scalar_one()
    if in_force >= MOST_PER_KEY:
        raise BadRequest(
            f"This API key has {MOST_PER_KEY} scheduling links in force, the most a key may have: "
            "delete one it no longer needs (DELETE /api/v1/calendar/schedulingLinks/{id})."
        )
    token = new_token()
    row = {
        "id": new_id("link"),
        "user_id": principal.user_id,
        "key_id": principal.key_id,
        "calendar_id": calendar.id,
        "token_hash": token_hash(token),
        "title": title,
        "description": description,
        "duration_minutes": duration,
        "time_min": low,
        "time_max": high,
        "guest_email": guest_email,
        "guest_name": guest_name,
        "uses": uses,
        "uses_left": uses,
        "expires_at": expires,
        "created_at": now,
        "revoked_at": None,
    }
    conn.execute(insert(links_t).values(**row))
    shown = link_public(_Row(row), tz=tz, now=now)
    return {**shown, "url": f"{base_url}{BOOK_PATH}{token}"}


class _Row:
    """A dict of columns read as a row (``link_public`` takes either)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)


def link_status(row: Any, now: datetime) -> str:
    if row.revoked_at is not None:
        return "revoked"
    if row.uses_left <= 0:
        return "used"
    if row.expires_at <= now:
        return "expired"
    return "active"


def link_public(row: Any, *, tz: Any, now: datetime) -> dict[str, Any]:
    """A link as its key sees it (never its token: the URL is shown once, at creation)."""
    shown: dict[str, Any] = {
        "id": row.id,
        "title": row.title,
        "durationMinutes": row.duration_minutes,
        "timeMin": format_in(row.time_min, tz),
        "timeMax": format_in(row.time_max, tz),
        "calendarId": row.calendar_id,
        "uses": row.uses,
        "usesLeft": max(row.uses_left, 0),
        "expiresAt": format_utc(row.expires_at),
        "status": link_status(row, now),
        "createdAt": format_utc(row.created_at),
    }
    if row.description is not None:
        shown["description"] = row.description
    if row.guest_email is not None or row.guest_name is not None:
        guest = {"email": row.guest_email, "name": row.guest_name}
        shown["guest"] = {k: v for k, v in guest.items() if v is not None}
    return shown


def _zones(conn: Connection, user_id: str) -> dict[str, Any]:
    found = conn.execute(
        select(calendars_t.c.id, calendars_t.c.time_zone).where(calendars_t.c.user_id == user_id)
    ).all()
    return {r.id: zone(r.time_zone) for r in found}


def list_links(
    conn: Connection, *, principal: Principal, now: datetime, via: Any = None
) -> dict[str, list[dict[str, Any]]]:
    """``listSchedulingLinks``: the key's own links, newest first (deleted ones left out)."""
    rows = conn.execute(
        select(links_t)
        .where(links_t.c.key_id == principal.key_id, links_t.c.revoked_at.is_(None))
        .order_by(links_t.c.created_at.desc(), links_t.c.id.desc())
    ).all()
    zones = _zones(conn, principal.user_id)
    return {
        "schedulingLinks": [
            link_public(r, tz=zones.get(r.calendar_id, zone("UTC")), now=now) for r in rows
        ]
    }


def delete_link(
    conn: Connection, *, principal: Principal, link_id: str, now: datetime, via: Any = None
) -> None:
    """``deleteSchedulingLink``: the key's own link stops at once (its bookings stay)."""
    done = conn.execute(
        update(links_t)
        .where(
            links_t.c.id == link_id,
            links_t.c.key_id == principal.key_id,
            links_t.c.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    if done.rowcount != 1:
        raise NotFound(f"This API key has no scheduling link {link_id[:60]!r}.")


def owner_links(conn: Connection, *, user_id: str, now: datetime) -> list[dict[str, Any]]:
    """Every link of the owner's keys, newest first, with the key's name (the settings page)."""
    rows = conn.execute(
        select(links_t, keys_t.c.name.label("key_name"))
        .join(keys_t, keys_t.c.id == links_t.c.key_id)
        .where(links_t.c.user_id == user_id)
        .order_by(links_t.c.created_at.desc(), links_t.c.id.desc())
    ).all()
    zones = _zones(conn, user_id)
    return [
        {
            **link_public(r, tz=zones.get(r.calendar_id, zone("UTC")), now=now),
            "keyId": r.key_id,
            "keyName": r.key_name,
        }
        for r in rows
    ]


def revoke_link(conn: Connection, *, user_id: str, link_id: str, now: datetime) -> None:
    """The owner revokes one of their links (404 for another owner's)."""
    done = conn.execute(
        update(links_t)
        .where(links_t.c.id == link_id, links_t.c.user_id == user_id)
        .where(links_t.c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    if done.rowcount != 1:
        exists = conn.execute(
            select(links_t.c.id).where(links_t.c.id == link_id, links_t.c.user_id == user_id)
        ).first()
        if exists is None:
            raise NotFound("There is no such scheduling link.")
