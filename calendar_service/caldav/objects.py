"""Calendar object resources: one per event, a series together with its changed and
cancelled occurrences (RFC 4791 §4.1), as the feeds write them (``ical.export``).

- An object's name is its UID and ``.ics``: the UID the event was imported (or PUT) with
  (``ical_uids``), else the event's id. Calendar apps name the objects they make so too.
- Its ETag is a digest of what its text is made of (the UID, each row's id and last change,
  the calendar's zone, the owner's default reminder), read without writing the text: a
  PROPFIND of a calendar of 10,000 events renders nothing.
- Its text is rendered by ``ical.export.render_calendar`` (one VCALENDAR, with its
  VTIMEZONEs; without the feed's calendar-level properties and ``METHOD``, which RFC 4791
  §4.1 forbids in an object) and kept by ETag (``_RENDERED``): a text is rendered once per
  version.
- ``expanded``: an object's occurrences in a window as separate VEVENTs in UTC with their
  ``RECURRENCE-ID`` (a ``calendar-query`` with ``expand``), from the list's own occurrences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import quote

from icalendar import Calendar, Event
from sqlalchemy import Connection, or_, select

from calendar_service.calendars import CalendarRow
from calendar_service.events.memo import Lru
from calendar_service.events.queries import EVENT_COLUMNS, window_floor
from calendar_service.ical.export import FeedContent, reminder_of, render_calendar
from calendar_service.inputs import NUL
from calendar_service.models.columns import from_db
from calendar_service.models.events import events_t
from calendar_service.models.ical import ical_uids_t

SUFFIX = ".ics"
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

    @property
    def name(self) -> str:
        return name_of(self.uid)


def name_of(uid: str) -> str:
    """The object's name in its calendar's collection (percent-encoded for an href)."""
    return quote(uid, safe="@+:=-_.~") + SUFFIX


def uid_of_name(name: str) -> str | None:
    """The UID a (decoded) object name stands for, ``None`` if it is no object's name."""
    if not name.endswith(SUFFIX) or len(name) == len(SUFFIX) or NUL in name:
        return None
    return name[: -len(SUFFIX)]


def _etag(uid: str, rows: Sequence[Any], calendar: CalendarRow, reminder: int | None) -> str:
    digest = hashlib.sha256(f"{uid}\x1f{calendar.time_zone}\x1f{reminder}".encode())
    for row in rows:
        digest.update(f"\x1e{row.id}\x1f{from_db(row.updated_at).isoformat()}".encode())
    return '"' + digest.hexdigest()[:32] + '"'


def _objects(
    rows: Iterable[Any], uids: dict[str, str], calendar: CalendarRow, reminder: int | None
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
        uid = uids.get(event_id, event_id)
        updated = max(from_db(r.updated_at) for r in rows_of)
        etag = _etag(uid, rows_of, calendar, reminder)
        found[event_id] = DavObject(event_id, uid, rows_of, reminder, etag, updated)
    return found


def load(
    conn: Connection, *, calendar: CalendarRow, event_ids: Iterable[str]
) -> dict[str, DavObject]:
    """The objects of the events ``event_ids`` (series or single events) of ``calendar``,
    by event id; ids of no such event are left out."""
    wanted = list(dict.fromkeys(event_ids))
    rows: list[Any] = []
    uids: dict[str, str] = {}
    c = events_t.c
    for first in range(0, len(wanted), _CHUNK):
        chunk = wanted[first : first + _CHUNK]
        # Two index reads (the primary key, ix_events_recurring), not one OR; the calendar is
        # checked here: with it in the WHERE, SQLite read the calendar's range instead.
        for among in (c.id, c.recurring_event_id):
            rows.extend(
                row
                for row in conn.execute(select(*EVENT_COLUMNS).where(among.in_(chunk)))
                if row.calendar_id == calendar.id
            )
        uids.update(
            (r.event_id, r.uid)
            for r in conn.execute(
                select(ical_uids_t.c.event_id, ical_uids_t.c.uid).where(
                    ical_uids_t.c.calendar_id == calendar.id, ical_uids_t.c.event_id.in_(chunk)
                )
            )
        )
    if not wanted:
        return {}
    return _objects(rows, uids, calendar, reminder_of(conn, calendar=calendar))


def load_all(conn: Connection, *, calendar: CalendarRow) -> dict[str, DavObject]:
    """Every object of ``calendar``, by event id."""
    rows = conn.execute(select(*EVENT_COLUMNS).where(events_t.c.calendar_id == calendar.id))
    uids = dict(
        conn.execute(
            select(ical_uids_t.c.event_id, ical_uids_t.c.uid).where(
                ical_uids_t.c.calendar_id == calendar.id
            )
        ).all()
    )
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


def uids_of(conn: Connection, *, calendar: CalendarRow, event_ids: Iterable[str]) -> dict[str, str]:
    """The UIDs of events (deleted ones too, while their import record lasts), by id."""
    wanted = list(dict.fromkeys(event_ids))
    found: dict[str, str] = {}
    for first in range(0, len(wanted), _CHUNK):
        chunk = wanted[first : first + _CHUNK]
        found.update(
            (r.event_id, r.uid)
            for r in conn.execute(
                select(ical_uids_t.c.event_id, ical_uids_t.c.uid).where(
                    ical_uids_t.c.calendar_id == calendar.id, ical_uids_t.c.event_id.in_(chunk)
                )
            )
        )
    return found


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


def render(obj: DavObject, calendar: CalendarRow) -> bytes:
    """The object's text (iCalendar, CRLF line ends), rendered once per version."""
    body: bytes | None = _RENDERED.get(obj.etag)
    if body is not None:
        return body
    master = obj.rows[0]
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
    "event_id_of",
    "expanded",
    "load",
    "load_all",
    "matching",
    "name_of",
    "render",
    "uid_of_name",
    "uids_of",
]
