"""Calendar events: list, get, create, update, delete, scoped by the calling key.

Every query starts from what the principal may reach (``accessible_calendars``); every change
writes its webhook delivery row in the same transaction (``outbox.record_change``). Core
functions raise ``CalendarError`` subclasses *before* they write anything.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import orjson
from sqlalchemy import Connection, and_, bindparam, delete, insert, or_, select, update

from calendar_service import idempotency
from calendar_service.calendars import (
    accessible_calendars,
    calendars_t,
    check_in_scope,
    get_calendar_row,
    resolve_target,
)
from calendar_service.db import Statement
from calendar_service.errors import FieldError, NotFound, ValidationFailed
from calendar_service.ids import new_id
from calendar_service.inputs import M, parse_partial
from calendar_service.keys import Principal
from calendar_service.models import (
    TITLE_MAX,
    Event,
    EventCreate,
    EventUpdate,
    UTCDateTime,
    to_db,
    utc_text_of,
)
from calendar_service.outbox import record_change
from calendar_service.timeutil import (
    ONE_DAY,
    STORED_WHOLE_SECOND,
    check_instant,
    format_in,
    format_utc,
    from_utc_text,
    midnight,
    parse_date_time,
    parse_day,
    utc_text,
    zone,
)

events_t = Event.__table__  # type: ignore[attr-defined]

DEFAULT_LIMIT = 250
MAX_LIMIT = 2500

_EVENT_COLUMNS = (
    events_t.c.id,
    events_t.c.calendar_id,
    events_t.c.title,
    events_t.c.starts_at,
    events_t.c.ends_at,
    events_t.c.all_day,
    events_t.c.description,
    events_t.c.location,
    events_t.c.created_at,
    events_t.c.updated_at,
)


def event_public(row: Any, *, calendar_name: str, tz: tzinfo) -> dict[str, Any]:
    """The public event object (``EventPublic``), times in the calendar's zone."""
    fmt = format_utc if tz is UTC else functools.partial(format_in, tz=tz)
    return {
        "id": row.id,
        "calendarId": row.calendar_id,
        "calendar": calendar_name,
        "title": row.title,
        "startsAt": fmt(row.starts_at),
        "endsAt": fmt(row.ends_at),
        "allDay": bool(row.all_day),
        "description": row.description,
        "location": row.location,
        "createdAt": format_utc(row.created_at),
        "updatedAt": format_utc(row.updated_at),
    }


# ---------------------------------------------------------------------------------------------
# Listing


# A page token is ``base64url(mac || payload)``: the payload is the last row's start and id, the
# MAC an HMAC-SHA256 (cut to 16 bytes) with the server's page-token key over the query the page
# belongs to (the key, its owner and calendar, the window) and the payload. A token is opaque to
# callers; one the server did not make, or made for another query, is refused before anything
# in it is read.
_MAC_BYTES = 16
_TOKEN_MAX = 512


def _bad_token() -> ValidationFailed:
    return ValidationFailed(
        [
            FieldError(
                "pageToken",
                "is not a page token returned by this query; start again without pageToken",
            )
        ]
    )


def _token_mac(key: bytes, query: bytes, payload: bytes) -> bytes:
    digest = hmac.new(key, query + b"\n" + payload, hashlib.sha256).digest()
    return digest[:_MAC_BYTES]


def _token_query(principal: Principal, low: datetime | None, high: datetime | None) -> bytes:
    """What a token is bound to. The window's instants, not the text that named them."""
    parts = (
        principal.key_id,
        principal.user_id,
        principal.calendar_id or "",
        "" if low is None else utc_text(low),
        "" if high is None else utc_text(high),
    )
    return "\x1f".join(parts).encode()


def _encode_token(key: bytes, query: bytes, starts_at: str, event_id: str) -> str:
    """``starts_at`` is the stored UTC text of the page's last event (``utc_text``)."""
    payload = orjson.dumps([starts_at, event_id])
    raw = _token_mac(key, query, payload) + payload
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(key: bytes, query: bytes, token: str) -> tuple[datetime, str]:
    if len(token) > _TOKEN_MAX:
        raise _bad_token()
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, binascii.Error):
        raise _bad_token() from None
    mac, payload = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
    if not hmac.compare_digest(mac, _token_mac(key, query, payload)):
        raise _bad_token()
    # Made by this server for this query; still read as carefully as any input.
    try:
        starts_text, event_id = orjson.loads(payload)
        starts_at = check_instant(from_utc_text(starts_text))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise _bad_token() from None
    if not isinstance(event_id, str) or "\x00" in event_id:  # no id has a NUL
        raise _bad_token()
    return starts_at, event_id


def _window_floor(low: datetime, longest_seconds: int) -> datetime:
    """The least ``starts_at`` an event overlapping ``[low, ...)`` can have: ``low`` less the
    calendar's longest event, never below the first instant a ``datetime`` holds (a longest
    length stored by an older version can be any size, and it never shrinks)."""
    if longest_seconds >= (low - _FIRST_INSTANT).total_seconds():
        return _FIRST_INSTANT
    return low - timedelta(seconds=longest_seconds)


_FIRST_INSTANT = datetime.min.replace(tzinfo=UTC)


def _parse_bound(text: str, tz: tzinfo) -> datetime:
    """A list bound: a date-time, or a bare date meaning that day's midnight."""
    text = text.strip()
    if len(text) == 10:
        return midnight(parse_day(text, tz), tz)
    return parse_date_time(text, tz)


def parse_list_params(
    *,
    time_min: str | None,
    time_max: str | None,
    limit: Any,
    tz: tzinfo,
) -> tuple[datetime | None, datetime | None, int]:
    errors: list[FieldError] = []
    bounds: list[datetime | None] = []
    for name, text in (("timeMin", time_min), ("timeMax", time_max)):
        if text is None or text == "":
            bounds.append(None)
            continue
        try:
            bounds.append(_parse_bound(text, tz))
        except ValueError as exc:
            bounds.append(None)
            errors.append(FieldError(name, str(exc)))
    low, high = bounds
    if low is not None and high is not None and high < low:
        errors.append(FieldError("timeMax", "must not be before timeMin"))
    size = DEFAULT_LIMIT
    if limit is not None and limit != "":
        try:
            size = int(limit)
        except (TypeError, ValueError):
            size = 0
        if not 1 <= size <= MAX_LIMIT or (isinstance(limit, str) and not limit.isdigit()):
            errors.append(FieldError("limit", f"must be a whole number from 1 to {MAX_LIMIT}"))
    if errors:
        raise ValidationFailed(errors)
    return low, high, size


def list_events(
    conn: Connection,
    *,
    principal: Principal,
    time_min: str | None = None,
    time_max: str | None = None,
    limit: Any = None,
    page_token: str | None = None,
    token_key: bytes,
) -> dict[str, Any]:
    """``EventList``: the key's calendars and the events overlapping ``[timeMin, timeMax)``.

    An event overlaps when ``endsAt > timeMin`` (or it starts at/after timeMin, so zero-length
    events at timeMin count) and ``startsAt < timeMax``. Either bound may be omitted (``None``
    or empty). Date-times without an offset are read in the time zone of the key's calendar
    (or the default one). ``token_key`` signs and checks page tokens (the fronts get it from
    ``service_secrets.page_token_key``).
    """
    calendars = accessible_calendars(conn, principal=principal)
    default = next((c for c in calendars if c.is_default), calendars[0] if calendars else None)
    low, high, size = parse_list_params(
        time_min=time_min,
        time_max=time_max,
        limit=limit,
        tz=zone(default.time_zone) if default is not None else UTC,
    )
    result: dict[str, Any] = {
        "calendars": [
            {"id": c.id, "name": c.name, "timeZone": c.time_zone, "isDefault": bool(c.is_default)}
            for c in calendars
        ],
        "events": [],
    }
    if not calendars:
        return result
    dialect = conn.dialect.name
    params: dict[str, Any] = {"limit": size + 1}
    if len(calendars) == 1:
        params["calendar_id"] = calendars[0].id
    else:
        params["user_id"] = principal.user_id
    if low is not None:
        longest = max(c.max_event_seconds for c in calendars)
        params["low"] = to_db(low, dialect)
        params["low_floor"] = to_db(_window_floor(low, longest), dialect)
    if high is not None:
        params["high"] = to_db(high, dialect)
    query = _token_query(principal, low, high)
    if page_token:
        after_start, params["after_id"] = _decode_token(token_key, query, page_token)
        params["after_start"] = to_db(after_start, dialect)
    statement = _list_statement(
        len(calendars) == 1, low is not None, high is not None, bool(page_token)
    )
    rows = statement.all(conn, **params)
    result["events"] = _events_public(rows[:size], calendars)
    if len(rows) > size:
        last = rows[size - 1]  # starts_at is the stored UTC text on every backend
        result["nextPageToken"] = _encode_token(token_key, query, last[3], last[0])
    return result


def _events_public(rows: Sequence[Any], calendars: Sequence[Any]) -> list[dict[str, Any]]:
    """``event_public`` for the list's driver rows (``_EVENT_COLUMNS`` order), without an
    object or a call per row: the list's hot loop. Stored times are RFC 3339 UTC text already
    (``timeutil.utc_text``): in UTC they only lose a zero fraction. Keep the two in step
    (tests/core/test_event_shapes.py compares them)."""
    zones: dict[str, tuple[str, tzinfo | None]] = {}
    for c in calendars:
        tz = zone(c.time_zone)
        zones[c.id] = (c.name, None if tz is UTC else tz)
    whole, z = STORED_WHOLE_SECOND, "Z"
    events = []
    for event_id, calendar_id, title, starts, ends, all_day, desc, place, created, updated in rows:
        name, tz = zones[calendar_id]
        if tz is None:
            starts, ends = starts.replace(whole, z), ends.replace(whole, z)
        else:
            starts, ends = format_in(starts, tz), format_in(ends, tz)
        events.append(
            {
                "id": event_id,
                "calendarId": calendar_id,
                "calendar": name,
                "title": title,
                "startsAt": starts,
                "endsAt": ends,
                "allDay": all_day == 1,
                "description": desc,
                "location": place,
                "createdAt": created.replace(whole, z),
                "updatedAt": updated.replace(whole, z),
            }
        )
    return events


# The list reads its date-times as stored UTC text on every backend (see utc_text_of).
_LIST_COLUMNS = tuple(
    utc_text_of(c) if isinstance(c.type, UTCDateTime) else c for c in _EVENT_COLUMNS
)


@functools.cache
def _list_statement(one_calendar: bool, low: bool, high: bool, after: bool) -> Statement:
    """The window query, one compiled statement per shape of request."""
    query = select(*_LIST_COLUMNS)
    if one_calendar:
        query = query.where(events_t.c.calendar_id == bindparam("calendar_id"))
    else:  # an all-calendars key reaches every calendar of its owner
        owned = select(calendars_t.c.id).where(calendars_t.c.user_id == bindparam("user_id"))
        query = query.where(events_t.c.calendar_id.in_(owned.scalar_subquery()))
    if low:
        # Bounded below by the longest event so the index on (calendar_id, starts_at) does the
        # work on both sides instead of scanning every older event.
        query = query.where(
            events_t.c.starts_at >= bindparam("low_floor"),
            or_(events_t.c.ends_at > bindparam("low"), events_t.c.starts_at >= bindparam("low")),
        )
    if high:
        query = query.where(events_t.c.starts_at < bindparam("high"))
    if after:
        after_start = bindparam("after_start")
        query = query.where(
            events_t.c.starts_at >= after_start,
            or_(
                events_t.c.starts_at > after_start,
                and_(events_t.c.starts_at == after_start, events_t.c.id > bindparam("after_id")),
            ),
        )
    return Statement(query.order_by(events_t.c.starts_at, events_t.c.id).limit(bindparam("limit")))


# ---------------------------------------------------------------------------------------------
# Validation shared by create and update


def _check_title(value: Any, errors: list[FieldError]) -> str | None:
    if not isinstance(value, str):
        errors.append(FieldError("title", "must be a string"))
        return None
    title = value.strip()
    if not title:
        errors.append(FieldError("title", "must not be empty"))
    elif len(title) > TITLE_MAX:
        errors.append(
            FieldError("title", f"must be at most {TITLE_MAX} characters (got {len(title)})")
        )
    return title


def _resolve_times(
    *,
    starts: str | None,
    ends: str | None,
    all_day: bool,
    tz: tzinfo,
    errors: list[FieldError],
) -> tuple[datetime | None, datetime | None]:
    """Parse startsAt/endsAt for a timed or an all-day event; returns UTC bounds."""
    if all_day:
        days = []
        for name, text in (("startsAt", starts), ("endsAt", ends)):
            try:
                days.append(parse_day(text, tz) if text is not None else None)
            except ValueError as exc:
                errors.append(FieldError(name, str(exc)))
                days.append(None)
        first, last = days
        if first is None or last is None:
            return None, None
        if last < first:
            errors.append(FieldError("endsAt", "must not be before startsAt"))
            return None, None
        # endsAt is exclusive; equal to startsAt means a one-day event.
        if last == first:
            last = first + ONE_DAY
        start_end = []
        for name, day in (("startsAt", first), ("endsAt", last)):
            try:
                start_end.append(midnight(day, tz))
            except ValueError as exc:
                errors.append(FieldError(name, str(exc)))
                start_end.append(None)
        return start_end[0], start_end[1]
    bounds = []
    for name, text in (("startsAt", starts), ("endsAt", ends)):
        try:
            bounds.append(parse_date_time(text, tz) if text is not None else None)
        except ValueError as exc:
            message = str(exc)
            if isinstance(text, str) and len(text.strip()) == 10:
                message = (
                    "must be a date-time such as 2026-03-02T09:30:00+01:00; for a "
                    "whole-day event send a date with allDay: true"
                )
            errors.append(FieldError(name, message))
            bounds.append(None)
    start, end = bounds
    if start is not None and end is not None and end < start:
        errors.append(FieldError("endsAt", "must not be before startsAt"))
    return start, end


def _bump_longest(conn: Connection, calendar: Any, start: datetime, end: datetime) -> None:
    seconds = int((end - start).total_seconds()) + 1
    if seconds > calendar.max_event_seconds:
        conn.execute(
            update(calendars_t)
            .where(calendars_t.c.id == calendar.id, calendars_t.c.max_event_seconds < seconds)
            .values(max_event_seconds=seconds)
        )


# ---------------------------------------------------------------------------------------------
# Create, get, update, delete

# Run straight from the driver (see db.Statement): every column, date-times through to_db.
_INSERT = Statement(insert(events_t).values({c.name: bindparam(c.name) for c in events_t.c}))


def create_event(
    conn: Connection,
    *,
    principal: Principal,
    data: EventCreate,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
) -> dict[str, Any]:
    """Create an event in the calendar chosen by the SPEC.md rules; queue ``created``.

    ``prior_errors`` are type errors already found in the input (see ``inputs.parse_partial``):
    they are reported together with every value error found here."""
    principal.require_write()
    errors: list[FieldError] = list(prior_errors)
    calendar = None
    try:
        calendar = resolve_target(
            conn, principal=principal, calendar_id=data.calendar_id, calendar_name=data.calendar
        )
    except ValidationFailed as exc:
        errors.extend(exc.errors)
    tz = zone(calendar.time_zone) if calendar is not None else UTC
    bad = {e["field"] for e in prior_errors}
    title = _check_title(data.title, errors) if "title" not in bad else None
    start, end = _resolve_times(
        starts=data.starts_at,
        ends=data.ends_at,
        all_day=bool(data.all_day),
        tz=tz,
        errors=errors,
    )
    if errors or calendar is None or start is None or end is None or title is None:
        raise ValidationFailed(errors)
    dialect = conn.dialect.name
    stored_now = to_db(now, dialect)
    stored = {  # every column, date-times as the driver takes them (models.to_db)
        "id": new_id("ev"),
        "calendar_id": calendar.id,
        "title": title,
        "starts_at": to_db(start, dialect),
        "ends_at": to_db(end, dialect),
        "all_day": data.all_day,
        "description": data.description,
        "location": data.location,
        "created_at": stored_now,
        "updated_at": stored_now,
    }
    _INSERT.run(conn, **stored)
    _bump_longest(conn, calendar, start, end)
    # Formatted from what was stored, as a list formats it (on SQLite: text, no parsing).
    event = event_public(_Row(stored), calendar_name=calendar.name, tz=tz)
    record_change(
        conn, user_id=principal.user_id, event_type="calendar.event.created", event=event, now=now
    )
    return event


def create_event_from_input(
    conn: Connection,
    *,
    principal: Principal,
    body: Any,
    now: datetime,
    idempotency_key: str | None = None,
    prior_errors: Sequence[FieldError] = (),
) -> tuple[dict[str, Any], bool]:
    """The fronts' way in: decoded, untrusted JSON for a new event. The permission is checked
    first; then every bad field, of type or of value, is reported at once. Returns
    ``(event, replayed)`` as ``create_event_once``."""
    data, errors = _untrusted(principal, EventCreate, body, prior_errors)
    return create_event_once(
        conn,
        principal=principal,
        data=data,
        now=now,
        idempotency_key=idempotency_key,
        prior_errors=errors,
    )


def _untrusted(
    principal: Principal, model: type[M], body: Any, prior_errors: Sequence[FieldError]
) -> tuple[M, list[FieldError]]:
    """The fronts' way in, for create and update alike: the permission first, then the
    input's type errors added to the front's own (``inputs.parse_partial``)."""
    principal.require_write()
    data, type_errors = parse_partial(model, body)
    return data, [*prior_errors, *type_errors]


def create_event_once(
    conn: Connection,
    *,
    principal: Principal,
    data: EventCreate,
    now: datetime,
    idempotency_key: str | None,
    prior_errors: Sequence[FieldError] = (),
) -> tuple[dict[str, Any], bool]:
    """``create_event`` honouring an ``Idempotency-Key``; returns (event, replayed)."""
    if idempotency_key is None or prior_errors:
        event = create_event(
            conn, principal=principal, data=data, now=now, prior_errors=prior_errors
        )
        return event, False
    principal.require_write()
    key = idempotency.check_key(idempotency_key)
    print_ = idempotency.fingerprint(data.model_dump(mode="json"))
    replay = idempotency.lookup(conn, key_id=principal.key_id, idem_key=key, print_=print_, now=now)
    if replay is not None:
        return replay.body, True
    event = create_event(conn, principal=principal, data=data, now=now)
    idempotency.store(
        conn, key_id=principal.key_id, idem_key=key, print_=print_, status=201, body=event, now=now
    )
    return event, False


class _Row:
    """Attribute access over a dict, so a just-inserted row formats like a fetched one."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None


def _load_in_scope(conn: Connection, *, principal: Principal, event_id: str) -> tuple[Any, Any]:
    """The event and its calendar, if the key may reach it; otherwise 404 (never revealing
    whether an event exists outside the key's reach)."""
    row = conn.execute(
        select(*_EVENT_COLUMNS, calendars_t.c.user_id)
        .join(calendars_t, calendars_t.c.id == events_t.c.calendar_id)
        .where(events_t.c.id == event_id, calendars_t.c.user_id == principal.user_id)
    ).first()
    if row is None or (
        principal.calendar_id is not None and row.calendar_id != principal.calendar_id
    ):
        raise NotFound(f"No event {event_id!r} in the calendars this key can reach.")
    check_in_scope(principal, row.calendar_id)
    return row, get_calendar_row(conn, calendar_id=row.calendar_id)


def get_event(conn: Connection, *, principal: Principal, event_id: str) -> dict[str, Any]:
    row, calendar = _load_in_scope(conn, principal=principal, event_id=event_id)
    return event_public(row, calendar_name=calendar.name, tz=zone(calendar.time_zone))


def update_event(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    data: EventUpdate,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
) -> dict[str, Any]:
    """Change the fields sent (PATCH semantics; ``null`` clears description or location)."""
    principal.require_write()
    row, calendar = _load_in_scope(conn, principal=principal, event_id=event_id)
    tz = zone(calendar.time_zone)
    sent = data.model_fields_set
    errors: list[FieldError] = list(prior_errors)
    bad = {e["field"] for e in prior_errors}
    for name in ("title", "starts_at", "ends_at", "all_day"):
        if name in sent and getattr(data, name) is None and _camel(name) not in bad:
            errors.append(FieldError(_camel(name), "must not be null"))
    values: dict[str, Any] = {}
    if "title" in sent and data.title is not None:
        values["title"] = _check_title(data.title, errors)
    all_day = data.all_day if data.all_day is not None else bool(row.all_day)
    if {"starts_at", "ends_at", "all_day"} & sent:
        current = _current_times(row, tz, all_day)
        start, end = _resolve_times(
            starts=data.starts_at if data.starts_at is not None else current[0],
            ends=data.ends_at if data.ends_at is not None else current[1],
            all_day=all_day,
            tz=tz,
            errors=errors,
        )
        values.update(starts_at=start, ends_at=end, all_day=all_day)
    for name in ("description", "location"):
        if name in sent:
            values[name] = getattr(data, name)
    if errors:
        raise ValidationFailed(errors)
    if not values:
        return event_public(row, calendar_name=calendar.name, tz=tz)
    values["updated_at"] = now
    conn.execute(update(events_t).where(events_t.c.id == row.id).values(**values))
    if "starts_at" in values:
        _bump_longest(conn, calendar, values["starts_at"], values["ends_at"])
    merged = {name: getattr(row, name) for name in row._fields}
    merged.update(values)
    event = event_public(_Row(merged), calendar_name=calendar.name, tz=tz)
    record_change(
        conn, user_id=principal.user_id, event_type="calendar.event.updated", event=event, now=now
    )
    return event


def update_event_from_input(
    conn: Connection,
    *,
    principal: Principal,
    event_id: str,
    body: Any,
    now: datetime,
    prior_errors: Sequence[FieldError] = (),
) -> dict[str, Any]:
    """The fronts' way in for a change: decoded, untrusted JSON. The permission is checked
    first; then every bad field, of type or of value, is reported at once."""
    data, errors = _untrusted(principal, EventUpdate, body, prior_errors)
    return update_event(
        conn, principal=principal, event_id=event_id, data=data, now=now, prior_errors=errors
    )


def _current_times(row: Any, tz: tzinfo, all_day: bool) -> tuple[str, str]:
    """The stored bounds as input strings, for re-validating a partial update."""
    if all_day and bool(row.all_day):
        return (
            row.starts_at.astimezone(tz).date().isoformat(),
            row.ends_at.astimezone(tz).date().isoformat(),
        )
    return format_in(row.starts_at, tz), format_in(row.ends_at, tz)


def delete_event(
    conn: Connection, *, principal: Principal, event_id: str, now: datetime
) -> dict[str, Any]:
    """Delete an event; the ``deleted`` webhook carries it as it was."""
    principal.require_write()
    row, calendar = _load_in_scope(conn, principal=principal, event_id=event_id)
    event = event_public(row, calendar_name=calendar.name, tz=zone(calendar.time_zone))
    conn.execute(delete(events_t).where(events_t.c.id == row.id))
    record_change(
        conn, user_id=principal.user_id, event_type="calendar.event.deleted", event=event, now=now
    )
    return event


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def owner_principal(user_id: str, *, calendar_id: str | None = None) -> Principal:
    """A principal for the owner acting in person (settings page, CLI): full access."""
    return Principal(
        key_id="owner",
        user_id=user_id,
        permission="write",
        calendar_id=calendar_id,
        expires_at=datetime.max.replace(tzinfo=UTC),
    )


__all__: Sequence[str] = (
    "create_event",
    "create_event_from_input",
    "create_event_once",
    "delete_event",
    "get_event",
    "list_events",
    "owner_principal",
    "update_event",
    "update_event_from_input",
)
