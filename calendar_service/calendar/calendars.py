"""Calendars, and the one place that decides which calendars a key may reach."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, and_, bindparam, insert, select, true

from calendar_service.access import owners
from calendar_service.access.keys import Principal
from calendar_service.platform.db import Statement
from calendar_service.platform.errors import (
    FieldError,
    InsufficientScope,
    NotFound,
    ReadOnlyCalendar,
    ValidationFailed,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models.calendars import (
    DEFAULT_CALENDAR_NAME,
    ROW_COLUMNS,
    calendars_t,
)
from calendar_service.platform.schema_patterns import COLOR_PATTERN
from calendar_service.platform.timeutil import is_valid_zone

NAME_MAX = 200
_COLOR = re.compile(COLOR_PATTERN)  # a calendar's colour, stored in lower case


def calendar_public(row: Any) -> dict[str, Any]:
    """The public calendar object (``CalendarPublic``), from any row with its attributes."""
    found = {
        "id": row.id,
        "name": row.name,
        "timeZone": row.time_zone,
        "isDefault": bool(row.is_default),
        "color": row.color,
        "readOnly": False,
    }
    connection_id = getattr(row, "connection_id", None)
    if connection_id is not None:
        found["readOnly"] = True
        found["source"] = {"connectionId": connection_id, "kind": row.connection_kind}
    return found


def check_writable(calendar: Any) -> None:
    """The one check every write takes (``resolve_target`` for what is created,
    ``events.series.load_target`` for what is changed or deleted, the calendar edits): a
    connected calendar's mirror (``connection_id``) is written by its poller only, 409
    ``read_only_calendar`` otherwise."""
    if getattr(calendar, "connection_id", None) is not None:
        raise ReadOnlyCalendar(calendar.name, calendar.connection_id)


def check_calendar_fields(
    conn: Connection,
    *,
    user_id: str,
    name: str | None,
    time_zone: str | None,
    calendar_id: str | None = None,
) -> tuple[str | None, list[FieldError]]:
    """A calendar's name (trimmed: 1 to ``NAME_MAX`` characters, no NUL, unique among the
    owner's calendars but ``calendar_id``'s own) and time zone (IANA), each checked when given
    (``None``: not sent). Returns the trimmed name and every problem found."""
    errors: list[FieldError] = []
    if name is not None:
        name = name.strip()
        errors = check_text("name", name)
        if not 1 <= len(name) <= NAME_MAX:
            errors.append(FieldError("name", f"must be 1 to {NAME_MAX} characters"))
        elif not errors:
            query = select(calendars_t.c.id).where(
                calendars_t.c.user_id == user_id, calendars_t.c.name == name
            )
            if calendar_id is not None:
                query = query.where(calendars_t.c.id != calendar_id)
            if conn.execute(query).first():
                errors.append(FieldError("name", f"a calendar named {name!r} already exists"))
    if time_zone is not None and not is_valid_zone(time_zone):
        errors.append(FieldError("timeZone", "must be an IANA time zone such as Europe/Berlin"))
    return name, errors


def check_color(value: str | None, errors: list[FieldError]) -> str | None:
    """A calendar's colour as sent (``None`` or empty: none), trimmed and in lower case; a
    problem is added to ``errors``."""
    value = (value or "").strip()
    if not value:
        return None
    if not _COLOR.match(value):
        errors.append(FieldError("color", "must be a colour as #rrggbb, e.g. #1a73e8"))
        return None
    return value.lower()


def create_calendar(
    conn: Connection,
    *,
    user_id: str,
    name: str,
    time_zone: str = "UTC",
    now: datetime,
    is_default: bool = False,
    color: str | None = None,
    dav_name: str | None = None,
) -> dict[str, Any]:
    """A new calendar; ``color``: ``#rrggbb``, or none; ``dav_name``: the path segment a
    calendar app made it under over CalDAV (``caldav.writing.make_calendar``), or none."""
    checked, errors = check_calendar_fields(
        conn, user_id=user_id, name=name or "", time_zone=time_zone
    )
    color = check_color(color, errors)
    if errors:
        raise ValidationFailed(errors)
    name = checked or ""
    values: dict[str, Any] = {
        "id": new_id("cal"),
        "user_id": user_id,
        "name": name,
        "time_zone": time_zone,
        "is_default": is_default,
        "max_event_seconds": 0,
        "created_at": now,
        "color": color,
        "dav_name": dav_name,
    }
    conn.execute(insert(calendars_t).values(**values))
    return calendar_public(CalendarRow(values["id"], name, time_zone, is_default, 0, color=color))


def create_owner(
    conn: Connection,
    *,
    email: str,
    password: str | None,
    now: datetime,
    time_zone: str = "UTC",
) -> dict[str, Any]:
    """Create an owner and their default calendar ``Личное``."""
    owner = owners.add_owner(conn, email=email, password=password, now=now)
    calendar = create_calendar(
        conn,
        user_id=owner["id"],
        name=DEFAULT_CALENDAR_NAME,
        time_zone=time_zone,
        now=now,
        is_default=True,
    )
    return {**owner, "defaultCalendarId": calendar["id"]}


def list_owner_calendars(conn: Connection, *, user_id: str) -> list[Any]:
    return list(
        conn.execute(
            select(*ROW_COLUMNS)
            .where(calendars_t.c.user_id == user_id)
            .order_by(calendars_t.c.is_default.desc(), calendars_t.c.name, calendars_t.c.id)
        )
    )


class CalendarRow(NamedTuple):
    id: str
    name: str
    time_zone: str
    is_default: bool
    max_event_seconds: int
    # None where it was not read: the list then asks the database for the series.
    series_version: int | None = None
    color: str | None = None  # "#rrggbb", or None: none chosen
    # A connected calendar's mirror (read-only): its connection and kind (``check_writable``).
    connection_id: str | None = None
    connection_kind: str | None = None


_OWNED = select(*ROW_COLUMNS).where(calendars_t.c.user_id == bindparam("user_id"))
_ORDER = (calendars_t.c.is_default.desc(), calendars_t.c.name)
# Run on every list request, straight from the driver (see db.Statement).
_ACCESSIBLE_ALL = Statement(_OWNED.order_by(*_ORDER))
_ACCESSIBLE_ONE = Statement(
    _OWNED.where(calendars_t.c.id == bindparam("calendar_id")).order_by(*_ORDER)
)


def accessible_calendars(conn: Connection, *, principal: Principal) -> list[CalendarRow]:
    """The calendars this key may reach: the owner's, narrowed to one for a one-calendar key."""
    if principal.calendar_id is None:
        rows = _ACCESSIBLE_ALL.all(conn, user_id=principal.user_id)
    elif principal.calendar is not None:  # read with the key
        return [CalendarRow(*principal.calendar)]
    else:
        rows = _ACCESSIBLE_ONE.all(
            conn, user_id=principal.user_id, calendar_id=principal.calendar_id
        )
    return [calendar_row(r) for r in rows]


MAX_CHOSEN = 50
"""Calendars one list may name (``calendarIds``), as a free/busy query may."""


def chosen_calendars(
    calendars: Sequence[CalendarRow],
    *,
    principal: Principal,
    wanted: str | Sequence[str],
    field: str = "calendarIds",
) -> list[CalendarRow]:
    """The calendars of ``calendars`` (those the key reaches: ``accessible_calendars``) that
    ``wanted`` names, in their order there; for ``calendarIds`` of the list.

    ``wanted`` is a value or several (a repeated query parameter), each an id or a name as
    create takes them (a name without its surrounding white space) or several of them
    separated by commas; a value that names a calendar whole is taken whole, so a name with a
    comma in it is named by sending it as a value of its own. A one-calendar key naming
    anything but its calendar gets a 401 ``insufficient_scope`` that names only its own (as
    ``resolve_target``: it cannot tell which other calendars exist); for any other key, a
    calendar it does not have is a 400 naming it, as is an empty value."""
    values = [wanted] if isinstance(wanted, str) else list(wanted)
    if not values or not all(isinstance(v, str) for v in values):
        raise ValidationFailed([FieldError(field, "must name one calendar or more")])
    by_id = {c.id: c for c in calendars}
    by_name = {c.name: c for c in calendars}

    def find(text: str) -> CalendarRow | None:
        return by_id.get(text.strip()) or by_name.get(text.strip())

    found: dict[str, CalendarRow] = {}
    unknown: list[str] = []
    empty = False
    for value in values:
        whole = find(value)
        for piece in [value] if whole is not None else value.split(","):
            calendar = whole or find(piece)
            if calendar is not None:
                found[calendar.id] = calendar
            elif not piece.strip():
                empty = True
            else:
                unknown.append(piece.strip())
    if unknown and principal.calendar_id is not None:
        own = calendars[0] if calendars else None
        raise _limited_to(own, "Send that calendar, or no calendarIds.")
    errors = []
    if empty:
        errors.append(
            FieldError(
                field,
                "must name a calendar (an id or a name) in each value and between "
                "commas; omit it for every calendar",
            )
        )
    if unknown:
        names = ", ".join(repr(name) for name in dict.fromkeys(unknown))
        errors.append(FieldError(field, f"no calendar {names} among this key's calendars"))
    if len(found) > MAX_CHOSEN:
        errors.append(FieldError(field, f"must name at most {MAX_CHOSEN} calendars"))
    if errors:
        raise ValidationFailed(errors)
    return [c for c in calendars if c.id in found]


def _limited_to(own: CalendarRow | None, advice: str) -> InsufficientScope:
    """The refusal of a one-calendar key naming another calendar: it names only its own."""
    named = f" {own.name!r} (calendarId {own.id!r})" if own is not None else ""
    return InsufficientScope(
        f"This API key is limited to the calendar{named} and cannot reach another one. {advice}"
    )


def resolve_target(
    conn: Connection,
    *,
    principal: Principal,
    calendar_id: str | None,
    calendar_name: str | None,
) -> Any:
    """The calendar a new event goes to (docs/api.md, "Which calendar").

    - both sent: they must name the same calendar (400 otherwise);
    - neither: a one-calendar key writes to its calendar, an all-calendars key to the default;
    - a calendar the owner does not have: 400 naming it (never created silently);
    - a calendar of the owner outside a one-calendar key's scope: 401 insufficient_scope.

    On PostgreSQL the calendar named (or the key's own) is read ``FOR KEY SHARE``: it cannot
    be deleted before this transaction ends, and one whose deletion was under way when it
    was read is answered as one that does not exist (400), never with a foreign key's error
    at the insert. (The default calendar is never deleted; SQLite has one writer, and a
    request reads its key in its own transaction.)

    A one-calendar key is answered from its own calendar alone: any other id or name is
    outside its reach, whether the owner has such a calendar or not, so its errors can neither
    name the owner's other calendars nor tell which of them exist.

    A connected calendar's read-only mirror is refused: 409 ``read_only_calendar``.
    """
    if principal.calendar_id is not None:
        target = _keys_target(conn, principal, calendar_id, calendar_name)
    else:
        target = _owners_target(conn, principal, calendar_id, calendar_name)
    check_writable(target)
    return target


def _keys_target(
    conn: Connection, principal: Principal, calendar_id: str | None, calendar_name: str | None
) -> Any:
    """``resolve_target`` for a one-calendar key: its own calendar, locked."""
    own = _own_calendar(conn, principal=principal, calendar_id=calendar_id, name=calendar_name)
    if conn.dialect.name == "postgresql":
        found = conn.execute(
            select(calendars_t.c.id)
            .where(calendars_t.c.id == own.id)
            .with_for_update(read=True, key_share=True)
        ).first()
        if found is None:  # deleted since the key was read (it is revoked with it)
            field = "calendarId" if calendar_id is not None else "calendar"
            raise ValidationFailed([FieldError(field, f"no calendar with id {own.id!r}")])
    return own


def _owners_target(
    conn: Connection, principal: Principal, calendar_id: str | None, calendar_name: str | None
) -> Any:
    """``resolve_target`` for a key that reaches all the owner's calendars: the one named
    (by id, name or both), locked, or the default (read with the key, if it was)."""
    owner = principal.user_id
    by_id = by_name = None
    errors: list[FieldError] = []
    if calendar_id is not None:
        by_id = _row(_OWNERS_BY_ID.first(conn, owner=owner, value=calendar_id))
        if by_id is None:
            errors.append(FieldError("calendarId", f"no calendar with id {calendar_id!r}"))
    if calendar_name is not None:
        by_name = _row(_OWNERS_BY_NAME.first(conn, owner=owner, value=calendar_name.strip()))
        if by_name is None:
            errors.append(FieldError("calendar", f"no calendar named {calendar_name!r}"))
    if errors:
        raise ValidationFailed(errors)
    if by_id is not None and by_name is not None and by_id.id != by_name.id:
        # Both are the owner's and this key reaches all of them: naming them leaks nothing.
        raise ValidationFailed(
            [
                FieldError(
                    "calendar",
                    f"calendarId {by_id.id!r} is calendar {by_id.name!r}, not {by_name.name!r}; "
                    "send one of them, or both naming the same calendar",
                )
            ],
        )
    target = by_id or by_name
    if target is None and principal.calendar is not None:  # read with the key
        return CalendarRow(*principal.calendar)
    if target is None:
        target = _row(_DEFAULT.first(conn, owner=owner))
        if target is None:
            raise ValidationFailed(
                [FieldError("calendar", f"no default calendar {DEFAULT_CALENDAR_NAME!r}")]
            )
    return target


# ``_owners_target``'s reads: an all-calendars key's every create runs one of them. Compiled
# once (``db.Statement``): through Core, the default calendar's read cost a create about as
# much as the rest of its work in Python (650k of 2,110k instructions; docs/performance.md,
# "Create"). The calendar named is read ``FOR KEY SHARE`` on PostgreSQL (``resolve_target``);
# the default, never deleted, is not.
_OWNERS = select(*ROW_COLUMNS).where(calendars_t.c.user_id == bindparam("owner"))
_OWNERS_BY_ID = Statement(
    _OWNERS.where(calendars_t.c.id == bindparam("value")).with_for_update(read=True, key_share=True)
)
_OWNERS_BY_NAME = Statement(
    _OWNERS.where(calendars_t.c.name == bindparam("value")).with_for_update(
        read=True, key_share=True
    )
)
# ``= true``, not ``IS TRUE``: PostgreSQL searches an index on ``=`` only.
_DEFAULT = Statement(_OWNERS.where(calendars_t.c.is_default == true()))


def calendar_row(found: Sequence[Any], *, versions: bool = True) -> CalendarRow:
    """A ``ROW_COLUMNS`` row as the driver gives it, as a ``CalendarRow``; without its
    ``series_version`` unless ``versions`` (the list then asks the database for the series)."""
    version = found[5] if versions else None
    return CalendarRow(found[0], found[1], found[2], bool(found[3]), found[4], version, *found[6:9])


def _row(found: Any) -> CalendarRow | None:
    return None if found is None else calendar_row(found)


def _own_calendar(
    conn: Connection, *, principal: Principal, calendar_id: str | None, name: str | None
) -> CalendarRow:
    """A one-calendar key's target: its calendar, if what was sent names it (or nothing was)."""
    assert principal.calendar_id is not None
    if principal.calendar is not None:  # read with the key
        own = CalendarRow(*principal.calendar)
    else:
        own = get_calendar_row(conn, calendar_id=principal.calendar_id)
    if (calendar_id is not None and calendar_id != own.id) or (
        name is not None and name.strip() != own.name
    ):
        raise _limited_to(own, "Send that calendar, or neither calendarId nor calendar.")
    return own


def within_reach(principal: Principal) -> ColumnElement[bool]:
    """``accessible_calendars`` as a condition on ``calendars_t``, for queries that join it."""
    owned = calendars_t.c.user_id == principal.user_id
    if principal.calendar_id is None:
        return owned
    return and_(owned, calendars_t.c.id == principal.calendar_id)


_BY_ID = Statement(select(*ROW_COLUMNS).where(calendars_t.c.id == bindparam("calendar_id")))


def get_calendar_row(conn: Connection, *, calendar_id: str) -> CalendarRow:
    row = _BY_ID.first(conn, calendar_id=calendar_id)
    if row is None:
        raise NotFound(f"No calendar {calendar_id!r}.")
    return calendar_row(row, versions=False)
