"""Calendar object resources: one per event, a series together with its changed and
cancelled occurrences (RFC 4791 §4.1), as the feeds write them (``ical.export``).

- An object's name is the one a calendar app PUT it under (RFC 4791 lets the client name
  it; ``ical_uids.object_name``, kept when it is not ``<UID>.ics``), else its UID and
  ``.ics``: the UID the event was imported (or PUT) with (``ical_uids``), else the event's id
  (an event made over REST or MCP). An object is found at its name only: one named by an
  app is not found at ``<UID>.ics``. A name is at most ``MAX_NAME`` bytes of UTF-8, not
  ``.`` or ``..``, without a ``/`` or a control character (``check_name``).
- Its ETag is a digest of what its text is made of (the UID, each row's id and last change,
  the calendar's zone, the owner's default reminder), read without writing the text: a
  PROPFIND of a calendar of 10,000 events renders nothing. A single event listed by the REST
  list (``listed``: its public object) has the same ETag as its row read here.
- Its text: a single event's written by ``ical.text`` (its VEVENT as text, the same bytes as
  the feed's), a series' (and the rare single event ``ical.text`` leaves) rendered by
  ``ical.export.render_calendar`` (one VCALENDAR, with its VTIMEZONEs; without the feed's
  calendar-level properties and ``METHOD``, which RFC 4791 §4.1 forbids in an object); kept
  by ETag (``_RENDERED``): a text is made once per version.
- ``expanded``: an object's occurrences in a window as separate VEVENTs in UTC with their
  ``RECURRENCE-ID`` (a ``calendar-query`` with ``expand``), from the list's own occurrences.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections import namedtuple
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

import orjson
from icalendar import Calendar, Event, Timezone
from sqlalchemy import BindParameter, Connection, bindparam, or_, select, text, update

from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.events.queries import EVENT_COLUMNS, window_floor
from calendar_service.interop.ical.export import FeedContent, reminder_of, render_calendar
from calendar_service.interop.ical.text import row_vevent
from calendar_service.platform.db import Statement
from calendar_service.platform.errors import DavBadName
from calendar_service.platform.inputs import NUL
from calendar_service.platform.lru import Lru
from calendar_service.platform.models.columns import UTCDateTime, from_db
from calendar_service.platform.models.events import events_t
from calendar_service.platform.models.ical import ical_uids_t
from calendar_service.platform.timeutil import format_utc, zone

SUFFIX = ".ics"
MAX_NAME = 255
"""The longest object name, in bytes of UTF-8 (as most file systems' names)."""
_SAFE = "@+:=-_.~"  # left as they are in an href: the rest percent-encoded
MAX_OBJECT = 1024 * 1024
"""The largest calendar object a PUT takes (``max-resource-size``)."""
MEDIA_TYPE = "text/calendar; charset=utf-8; component=vevent"
PRODID = "-//calendar-service//CalDAV//EN"
_HEADER = (
    b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:" + PRODID.encode() + b"\r\nCALSCALE:GREGORIAN\r\n"
)
_CHUNK = 256  # ids in one IN (...)
_RENDERED = Lru(8192, most_weight=64 * 1024 * 1024)  # ETag: the object's text


@dataclass(frozen=True, slots=True)
class DavObject:
    """One event (a series with its exception rows) as a calendar object resource."""

    event_id: str
    uid: str
    rows: tuple[Any, ...]  # the event's own row first, then its exceptions' (by id)
    reminder: int | None
    etag: str  # quoted, strong
    updated: datetime  # the latest change of any of its rows
    named: str | None = None  # the name an app PUT it under, if not ``<UID>.ics``

    @property
    def name(self) -> str:
        return name_of(self.uid, self.named)


def name_of(uid: str, named: str | None = None) -> str:
    """The object's name in its calendar's collection (percent-encoded for an href): the
    name ``named`` an app gave it, else ``<UID>.ics``."""
    return encoded(uid + SUFFIX if named is None else named)


def encoded(name: str) -> str:
    """An object's (decoded) name as an href writes it: percent-encoded."""
    return quote(name, safe=_SAFE)


def check_name(name: str, what: str = "An object's name") -> None:
    """``DavBadName`` unless ``name`` (decoded) can name an object (or, with ``what``, a
    calendar made over CalDAV)."""
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME:
        raise DavBadName(
            f"{what} is at most {MAX_NAME} bytes (UTF-8); this one has {size}: "
            "choose a shorter name."
        )
    if name in (".", ".."):
        raise DavBadName("'.' and '..' cannot be used as a name: choose another one.")
    for ch in name:
        if unicodedata.category(ch) == "Cc":
            raise DavBadName(
                f"{what} cannot hold a control character (U+{ord(ch):04X}): choose another name."
            )


def uid_of_name(name: str) -> str | None:
    """The UID a (decoded) object name stands for, ``None`` if it is no object's name."""
    if not name.endswith(SUFFIX) or len(name) == len(SUFFIX) or NUL in name:
        return None
    return name[: -len(SUFFIX)]


def _etag(uid: str, rows: Sequence[Any], calendar: CalendarRow, reminder: int | None) -> str:
    # Each last change as the public object shows it (``updatedAt``), so that a listed event's
    # ETag (``listed_etag``) is made without parsing a date.
    changes = "".join(f"\x1e{r.id}\x1f{format_utc(from_db(r.updated_at))}" for r in rows)
    return _digest(f"{uid}\x1f{calendar.time_zone}\x1f{reminder}{changes}")


def _digest(made_of: str) -> str:
    return '"' + hashlib.sha256(made_of.encode()).hexdigest()[:32] + '"'


def listed_etag(
    uid: str, event: dict[str, Any], calendar: CalendarRow, reminder: int | None
) -> str:
    """The ETag of a single event listed by the REST list (its public object), the same as
    ``load`` gives it."""
    return _digest(
        f"{uid}\x1f{calendar.time_zone}\x1f{reminder}\x1e{event['id']}\x1f{event['updatedAt']}"
    )


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


class ListedRow:
    """A single event listed by the REST list (its public object), with the attributes of
    its row that its text is made of."""

    __slots__ = (
        "all_day",
        "attendees",
        "calendar_id",
        "created_at",
        "description",
        "ends_at",
        "id",
        "location",
        "starts_at",
        "title",
        "transparency",
        "updated_at",
    )
    recurrence = None
    recurring_event_id = None
    status = "confirmed"
    time_zone = None

    def __init__(self, event: dict[str, Any]) -> None:
        self.id = event["id"]
        self.calendar_id = event["calendarId"]
        self.title = event["title"]
        self.starts_at = _instant(event["startsAt"])
        self.ends_at = _instant(event["endsAt"])
        self.all_day = event["allDay"]
        self.description = event["description"]
        self.location = event["location"]
        self.created_at = _instant(event["createdAt"])
        self.updated_at = _instant(event["updatedAt"])
        self.transparency = event["transparency"]
        self.attendees = None
        if "attendees" in event:  # as stored (``calendar.attendees``)
            people = {k: event.get(k) for k in ("organizer", "attendees", "sequence")}
            self.attendees = orjson.dumps(people).decode()


def listed(
    event: dict[str, Any],
    uid: str,
    calendar: CalendarRow,
    reminder: int | None,
    etag: str,
    named: str | None = None,
) -> DavObject:
    """The object of a single event listed by the REST list (its public object)."""
    row = ListedRow(event)
    return DavObject(row.id, uid, (row,), reminder, etag, row.updated_at, named)


Names = dict[str, tuple[str, str | None]]
"""The UID of events and the names apps gave their objects (``None``: ``<UID>.ics``), by
event id."""


def _objects(
    rows: Iterable[Any], uids: Names, calendar: CalendarRow, reminder: int | None
) -> dict[str, DavObject]:
    masters: dict[str, Any] = {}
    exceptions: dict[str, list[Any]] = {}
    for row in rows:
        if row.recurring_event_id is None:
            masters[row.id] = row
        else:
            exceptions.setdefault(row.recurring_event_id, []).append(row)
    found = {}
    for event_id, master in masters.items():
        rows_of = (master, *sorted(exceptions.get(event_id, ()), key=lambda r: r.id))
        uid, named = uids.get(event_id, (event_id, None))
        updated = max(from_db(r.updated_at) for r in rows_of)
        etag = _etag(uid, rows_of, calendar, reminder)
        found[event_id] = DavObject(event_id, uid, rows_of, reminder, etag, updated, named)
    return found


EventRow = namedtuple("EventRow", [c.name for c in EVENT_COLUMNS])  # type: ignore[misc]
_TIMES = frozenset(i for i, c in enumerate(EVENT_COLUMNS) if isinstance(c.type, UTCDateTime))


def _event_row(found: Sequence[Any]) -> Any:
    """A driver row of ``EVENT_COLUMNS`` with attributes, its date-times aware datetimes."""
    return EventRow(
        *(from_db(v) if i in _TIMES and v is not None else v for i, v in enumerate(found))
    )


class _ByRecurring(Statement):
    """On SQLite, through ``ix_events_recurring``: nearly every row's ``recurring_event_id``
    is NULL, so ANALYZE's statistics made the index look useless and the planner scanned the
    whole table instead (7 ms at 100,000 events). Since migration 0023 the index holds only
    the exceptions (``IN`` implies its condition); the planner is still told."""

    def edited(self, sql: str, dialect: Any) -> str:
        if dialect.name != "sqlite":
            return sql
        assert sql.count("FROM events \n") == 1, sql
        return sql.replace("FROM events \n", "FROM events INDEXED BY ix_events_recurring \n")


@functools.lru_cache(maxsize=32)
def _rows_by(column: str, size: int) -> Statement:
    """The events whose ``column`` is one of ``size`` ids (``id_0``...), compiled once a size."""
    ids: list[BindParameter[Any]] = [bindparam(f"id_{i}") for i in range(size)]
    query = select(*EVENT_COLUMNS).where(events_t.c[column].in_(ids))
    return _ByRecurring(query) if column == "recurring_event_id" else Statement(query)


def load(
    conn: Connection, *, calendar: CalendarRow, event_ids: Iterable[str]
) -> dict[str, DavObject]:
    """The objects of the events ``event_ids`` (series or single events) of ``calendar``,
    by event id; ids of no such event are left out."""
    wanted = list(dict.fromkeys(event_ids))
    if not wanted:
        return {}
    rows: list[Any] = []
    for first in range(0, len(wanted), _CHUNK):
        chunk = wanted[first : first + _CHUNK]
        # A few statement shapes: the ids padded to a power of two (as ``series_rows``).
        size = 1 << max(len(chunk) - 1, 0).bit_length()
        params = {f"id_{i}": chunk[i] if i < len(chunk) else None for i in range(size)}
        # Two index reads (the primary key, ix_events_recurring), not one OR; the calendar is
        # checked here: with it in the WHERE, SQLite read the calendar's range instead.
        for column in ("id", "recurring_event_id"):
            rows.extend(
                _event_row(found)
                for found in _rows_by(column, size).all(conn, **params)
                if found[1] == calendar.id
            )
    uids = uids_of(conn, calendar=calendar, event_ids=wanted)
    return _objects(rows, uids, calendar, reminder_of(conn, calendar=calendar))


def load_all(conn: Connection, *, calendar: CalendarRow) -> dict[str, DavObject]:
    """Every object of ``calendar``, by event id."""
    rows = conn.execute(select(*EVENT_COLUMNS).where(events_t.c.calendar_id == calendar.id))
    u = ical_uids_t.c
    uids = {
        event_id: (uid, named)
        for event_id, uid, named in conn.execute(
            select(u.event_id, u.uid, u.object_name).where(u.calendar_id == calendar.id)
        )
    }
    return _objects(rows, uids, calendar, reminder_of(conn, calendar=calendar))


def event_id_of(conn: Connection, *, calendar: CalendarRow, uid: str) -> str | None:
    """The event (single or series) the UID ``uid`` names in ``calendar``: the one it was
    imported or PUT as (``ical_uids``, if that event is still there), else the event whose id
    it is; ``None`` when there is none."""
    if NUL in uid:  # no UID is stored with one (``inputs``), and PostgreSQL cannot be asked
        return None
    c = events_t.c
    mapped = conn.execute(
        select(ical_uids_t.c.event_id)
        .select_from(ical_uids_t.join(events_t, events_t.c.id == ical_uids_t.c.event_id))
        .where(
            ical_uids_t.c.calendar_id == calendar.id,
            ical_uids_t.c.uid_hash == hashlib.sha256(uid.encode()).hexdigest(),
            ical_uids_t.c.uid == uid,
            c.calendar_id == calendar.id,
            c.recurring_event_id.is_(None),
        )
    ).scalar()
    if mapped is not None:
        return str(mapped)
    own = conn.execute(
        select(c.id).where(
            c.id == uid,
            c.calendar_id == calendar.id,
            c.recurring_event_id.is_(None),
        )
    ).scalar()
    if own is None:
        return None
    # An event of ours imported under another UID is named by that UID, not its id.
    renamed = conn.execute(
        select(ical_uids_t.c.uid).where(
            ical_uids_t.c.calendar_id == calendar.id, ical_uids_t.c.event_id == own
        )
    ).scalar()
    return None if renamed is not None and renamed != uid else str(own)


# The UIDs of some events of a calendar, the ids given as one JSON array: one statement
# whatever their number (an ``IN`` list is compiled again for each length).
_UIDS_OF = {
    "sqlite": Statement(
        text(
            "SELECT event_id, uid, object_name FROM ical_uids WHERE calendar_id = :calendar_id "
            "AND event_id IN (SELECT value FROM json_each(:ids))"
        )
    ),
    "postgresql": Statement(
        text(
            "SELECT event_id, uid, object_name FROM ical_uids WHERE calendar_id = :calendar_id "
            "AND event_id IN (SELECT jsonb_array_elements_text(CAST(:ids AS jsonb)))"
        )
    ),
}


def uids_of(conn: Connection, *, calendar: CalendarRow, event_ids: Iterable[str]) -> Names:
    """The UIDs of events and their objects' names (deleted ones too, while their import
    record lasts), by id; one statement."""
    wanted = list(dict.fromkeys(event_ids))
    if not wanted:
        return {}
    ids = orjson.dumps(wanted).decode()
    rows = _UIDS_OF[conn.dialect.name].all(conn, calendar_id=calendar.id, ids=ids)
    return {event_id: (uid, named) for event_id, uid, named in rows}


def event_id_named(conn: Connection, *, calendar: CalendarRow, name: str) -> str | None:
    """The event (single or series) whose object is named ``name`` (decoded) in
    ``calendar``: the one an app PUT under that name, else the one whose UID it is
    (``<UID>.ics``) unless an app named that one otherwise; ``None`` when there is none."""
    if NUL in name:
        return None
    u, c = ical_uids_t.c, events_t.c
    live = ical_uids_t.join(events_t, c.id == u.event_id)
    named = conn.execute(
        select(u.event_id)
        .select_from(live)
        .where(
            u.calendar_id == calendar.id,
            u.object_name == name,
            c.calendar_id == calendar.id,
            c.recurring_event_id.is_(None),
        )
        .order_by(u.id.desc())
        .limit(1)
    ).scalar()
    if named is not None:
        return str(named)
    uid = uid_of_name(name)
    event_id = None if uid is None else event_id_of(conn, calendar=calendar, uid=uid)
    if event_id is None:
        return None
    renamed = conn.execute(
        select(u.id).where(
            u.calendar_id == calendar.id, u.event_id == event_id, u.object_name.is_not(None)
        )
    ).first()
    return None if renamed is not None else event_id


def free_name(conn: Connection, *, calendar_id: str, name: str) -> None:
    """Forget ``name`` where an earlier object (deleted since, or moved) kept it: it names the
    object being made now."""
    u = ical_uids_t.c
    conn.execute(
        update(ical_uids_t)
        .where(u.calendar_id == calendar_id, u.object_name == name)
        .values(object_name=None)
    )


def keep_name(conn: Connection, *, calendar_id: str, uid: str, name: str) -> None:
    """Record that the object of the UID ``uid`` (just imported: its ``ical_uids`` row is
    there) is named ``name``, unless that is ``<UID>.ics``."""
    if name == uid + SUFFIX:
        return
    free_name(conn, calendar_id=calendar_id, name=name)
    u = ical_uids_t.c
    conn.execute(
        update(ical_uids_t)
        .where(u.calendar_id == calendar_id, u.uid_hash == hashlib.sha256(uid.encode()).hexdigest())
        .values(object_name=name)
    )


def matching(
    conn: Connection, *, calendar: CalendarRow, low: datetime | None, high: datetime | None
) -> list[str]:
    """The events (singles and series) of ``calendar`` that may have time in
    ``[low, high)``: a single event (or a changed occurrence, for its series) that overlaps
    it, a series that starts before ``high`` and has not ended by ``low``. Exact for single
    events; a superset for series, which the list narrows occurrence by occurrence when
    both bounds are given (``reports``). Two range reads of the indexes the list reads."""
    c = events_t.c
    rows = [c.calendar_id == calendar.id, c.recurrence.is_(None)]
    series = [c.calendar_id == calendar.id, c.recurrence.is_not(None)]
    if low is not None:
        # As the list: nothing that overlaps the window starts before its floor.
        rows += [
            c.starts_at >= window_floor(low, calendar.max_event_seconds),
            or_(c.ends_at > low, c.starts_at >= low),
        ]
        series.append(or_(c.recurrence_ends_at.is_(None), c.recurrence_ends_at > low))
    if high is not None:
        rows.append(c.starts_at < high)
        series.append(c.starts_at < high)
    found: dict[str, None] = {}
    for row in conn.execute(select(c.id, c.recurring_event_id, c.status).where(*rows)):
        if row.recurring_event_id is None:
            found[row.id] = None
        elif row.status != "cancelled":
            found[row.recurring_event_id] = None
    for row in conn.execute(select(c.id).where(*series)):
        found[row.id] = None
    return list(found)


@functools.lru_cache(maxsize=256)
def _vtimezone(name: str, year: int) -> str:
    """The VTIMEZONE ``export`` writes for a single event starting in ``year`` (UTC) in a
    calendar in the zone ``name`` (its ``_years``: the year before to ten years after)."""
    first, last = max(year - 1, 1970), min(year + 10, 2099)
    made = Timezone.from_tzid(name, first_date=date(first, 1, 1), last_date=date(last, 1, 1))
    return str(made.to_ical().decode())


def _single_text(obj: DavObject, calendar: CalendarRow) -> bytes | None:
    """A single event's text written by ``ical.text``; ``None`` where it writes none."""
    row = obj.rows[0]
    vevent = row_vevent(row, zone(calendar.time_zone), uid=obj.uid, reminder=obj.reminder)
    if vevent is None:
        return None
    year = from_db(row.starts_at).year
    zones = "" if calendar.time_zone == "UTC" else _vtimezone(calendar.time_zone, year)
    return _HEADER + (zones + vevent).encode() + b"END:VCALENDAR\r\n"


def render(obj: DavObject, calendar: CalendarRow) -> bytes:
    """The object's text (iCalendar, CRLF line ends), made once per version."""
    body: bytes | None = _RENDERED.get(obj.etag)
    if body is not None:
        return body
    master = obj.rows[0]
    if master.recurrence is None and len(obj.rows) == 1:
        body = _single_text(obj, calendar)
        if body is not None:
            _RENDERED.put(obj.etag, body, weight=len(body))
            return body
    content = FeedContent(calendar, uids={master.id: obj.uid}, reminder=obj.reminder)
    if master.recurrence is not None:
        content.series = [master]
        content.exceptions = {master.id: list(obj.rows[1:])}
    else:
        content.singles = [master]
    rendered = render_calendar(content).body
    # The feed's calendar-level properties (its name, METHOD, refresh hints) are no object's.
    first = rendered.find(b"\r\nBEGIN:", len(b"BEGIN:VCALENDAR"))
    body = _HEADER + rendered[first + 2 :]
    _RENDERED.put(obj.etag, body, weight=len(body))
    return body


def expanded(obj: DavObject, occurrences: Sequence[dict[str, Any]]) -> bytes:
    """The object's ``occurrences`` (the list's, in a window) as separate VEVENTs, times in
    UTC (dates for all-day ones), each occurrence of a series with its ``RECURRENCE-ID``
    (RFC 4791 §9.6.5)."""
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    for occurrence in occurrences:
        all_day = bool(occurrence.get("allDay"))
        vevent = Event()
        vevent.add("uid", obj.uid)
        vevent.add("dtstamp", obj.updated)
        vevent.add("dtstart", _moment(occurrence["startsAt"], all_day))
        vevent.add("dtend", _moment(occurrence["endsAt"], all_day))
        if occurrence.get("recurringEventId"):
            original = occurrence.get("originalStartsAt") or occurrence["startsAt"]
            vevent.add("recurrence-id", _moment(original, all_day))
        vevent.add("summary", occurrence.get("title") or "")
        if occurrence.get("description"):
            vevent.add("description", occurrence["description"])
        if occurrence.get("location"):
            vevent.add("location", occurrence["location"])
        transparent = occurrence.get("transparency") == "transparent"
        vevent.add("transp", "TRANSPARENT" if transparent else "OPAQUE")
        cal.add_component(vevent)
    body: bytes = cal.to_ical()
    return body


def _moment(text: str, all_day: bool) -> date | datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.date() if all_day else value.astimezone(UTC)


__all__ = [
    "MEDIA_TYPE",
    "DavObject",
    "ListedRow",
    "Names",
    "check_name",
    "encoded",
    "event_id_named",
    "event_id_of",
    "expanded",
    "free_name",
    "keep_name",
    "listed",
    "listed_etag",
    "load",
    "load_all",
    "matching",
    "name_of",
    "render",
    "uid_of_name",
    "uids_of",
]
