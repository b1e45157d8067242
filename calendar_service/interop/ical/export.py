"""A calendar as RFC 5545 text: what a subscription feed serves.

``read_calendar`` reads what the feed holds (``feed_window``); ``render_calendar`` writes it,
with the ``icalendar`` package (a single event as text, ``text``: the same bytes), and is pure
(the front runs it off the event loop):

- one ``VTIMEZONE`` for the calendar's zone and for each zone a series repeats in (none for
  UTC); timed events in the calendar's zone (``DTSTART;TZID=…``), series in their own, all-day
  ones as dates (``VALUE=DATE``, ``DTEND`` exclusive);
- a single event is a ``VEVENT``; a series one ``VEVENT`` with its ``RRULE`` and its
  ``EXDATE``/``RDATE`` (in the series' zone), its cancelled occurrences added as ``EXDATE``s;
  each changed occurrence a ``VEVENT`` of its own with the series' ``UID`` and a
  ``RECURRENCE-ID`` (its original start);
- ``UID``: the UID an event was imported with, else its id (stable: ids never change);
  ``DTSTAMP`` and ``LAST-MODIFIED``: its last change, so the text changes only when the
  calendar does and the ``ETag`` (a hash of the text) says so; ``SEQUENCE``: the whole seconds
  from its creation to its last change, so it grows with each later change;
- an event with attendees: its ``ORGANIZER`` and one ``ATTENDEE`` each (``people.add_people``);
- the owner's default reminder (``reminders``), when set: a ``VALARM`` (``ACTION:DISPLAY``,
  ``TRIGGER:-PT<n>M`` before the start) in every VEVENT but the cancelled ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

import orjson
from icalendar import (
    Alarm,
    Calendar,
    Event,
    Timezone,
    vDuration,
    vRecur,
    vText,
)
from sqlalchemy import Connection, and_, bindparam, or_, select

from calendar_service.calendar.calendars import CalendarRow
from calendar_service.calendar.events.queries import EVENT_COLUMNS
from calendar_service.calendar.events.series import times_of, zone_of
from calendar_service.calendar.events.shapes import zone_name
from calendar_service.calendar.recurrence import stored_rule
from calendar_service.calendar.reminders import reminders_t
from calendar_service.interop.ical.edges import (
    edge_starts,
    fixed_form,
    fixed_vtimezone,
    in_gap,
    is_ambiguous,
    rid_form,
    zone_key,
)
from calendar_service.interop.ical.people import add_people
from calendar_service.interop.ical.text import row_vevent
from calendar_service.platform.db import Statement
from calendar_service.platform.models.calendars import calendars_t
from calendar_service.platform.models.columns import from_db, utc_text_of
from calendar_service.platform.models.events import events_t
from calendar_service.platform.models.ical import ical_uids_t
from calendar_service.platform.timeutil import localize, zone

FEED_HISTORY = timedelta(days=365)
"""How far back a feed reaches: events that ended within this (and every series whose last
occurrence did, or that has no end, whole with all its changed occurrences)."""
PRODID = "-//calendar-service//iCalendar feed//EN"
_END = b"END:VCALENDAR\r\n"
CANCELLED = "cancelled"


@dataclass(slots=True)
class FeedContent:
    """What a feed holds, as read from the database (no connection needed to render it)."""

    calendar: CalendarRow
    singles: list[Any] = field(default_factory=list)
    series: list[Any] = field(default_factory=list)
    exceptions: dict[str, list[Any]] = field(default_factory=dict)  # series id: its rows
    uids: dict[str, str] = field(default_factory=dict)  # event id: imported UID
    reminder: int | None = None  # the owner's default reminder, minutes before each start


def feed_floor(now: datetime) -> datetime:
    """Where the window starts: ``FEED_HISTORY`` before the start of today (UTC), so that the
    feed's text (and its ETag) changes only when the calendar does, or once a day."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - FEED_HISTORY


def version_of(conn: Connection, *, calendar: CalendarRow, now: datetime) -> tuple[Any, ...]:
    """What the feed's text depends on, read cheaply: the calendar as it is, a digest of its
    events' ids and last changes (every write of an event sets ``updated_at``; a deletion
    takes its id out), and the window's start."""
    digest = hashlib.sha256()
    for event_id, updated in conn.execute(
        select(events_t.c.id, utc_text_of(events_t.c.updated_at))
        .where(events_t.c.calendar_id == calendar.id)
        .order_by(events_t.c.id)
    ):
        digest.update(f"{event_id} {updated}\n".encode())
    return (calendar, digest.hexdigest(), feed_floor(now), reminder_of(conn, calendar=calendar))


# Run by every CalDAV report: compiled once (``db.Statement``).
_REMINDER_OF = Statement(
    select(reminders_t.c.minutes_before)
    .select_from(reminders_t.join(calendars_t, calendars_t.c.user_id == reminders_t.c.user_id))
    .where(calendars_t.c.id == bindparam("calendar_id"))
)


def reminder_of(conn: Connection, *, calendar: CalendarRow) -> int | None:
    """The default reminder of the calendar's owner (minutes before each start), if set."""
    found = _REMINDER_OF.first(conn, calendar_id=calendar.id)
    return None if found is None or found[0] is None else int(found[0])


def read_calendar(conn: Connection, *, calendar: CalendarRow, now: datetime) -> FeedContent:
    """The calendar's events within the feed's window (see ``FEED_HISTORY``)."""
    floor = feed_floor(now)
    c = events_t.c
    singles = and_(c.recurrence.is_(None), c.recurring_event_id.is_(None), c.ends_at > floor)
    series = and_(
        c.recurrence.is_not(None), or_(c.recurrence_ends_at.is_(None), c.recurrence_ends_at > floor)
    )
    content = FeedContent(calendar, reminder=reminder_of(conn, calendar=calendar))
    rows = conn.execute(
        select(*EVENT_COLUMNS)
        .where(c.calendar_id == calendar.id, or_(singles, series))
        .order_by(c.starts_at, c.id)
    )
    for row in rows:
        (content.series if row.recurrence is not None else content.singles).append(row)
    wanted = {row.id for row in content.series}
    if wanted:
        for row in conn.execute(
            select(*EVENT_COLUMNS)
            .where(c.calendar_id == calendar.id, c.recurring_event_id.is_not(None))
            .order_by(c.original_starts_at, c.id)
        ):
            if row.recurring_event_id in wanted:
                content.exceptions.setdefault(row.recurring_event_id, []).append(row)
    content.uids = {
        r.event_id: r.uid
        for r in conn.execute(
            select(ical_uids_t.c.event_id, ical_uids_t.c.uid).where(
                ical_uids_t.c.calendar_id == calendar.id
            )
        )
    }
    return content


@dataclass(frozen=True, slots=True)
class Rendered:
    body: bytes
    etag: str  # quoted, strong
    events: int  # VEVENTs


def render_calendar(content: FeedContent) -> Rendered:
    """The feed's text (RFC 5545, CRLF line ends), its ``ETag`` and how many VEVENTs."""
    calendar = content.calendar
    tz = zone(calendar.time_zone)
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    # As TEXT (escaped) explicitly: icalendar writes these two raw otherwise, and a name with
    # a line break in it would end the feed in a 500.
    cal.add("x-wr-calname", vText(calendar.name))
    cal.add("name", vText(calendar.name))
    cal.add("x-wr-timezone", calendar.time_zone)
    if calendar.color:  # Apple's and others' (RFC 7986's COLOR takes CSS3 names, not #rrggbb)
        cal.add("x-apple-calendar-color", calendar.color)
    cal.add("refresh-interval", timedelta(hours=1), parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", "PT1H")
    events: list[Event | str] = []
    zones = {calendar.time_zone}
    fixed: dict[str, timedelta] = {}  # fixed-offset zones the DST edges are written in
    horizon = datetime(_years(content)[1], 1, 1, tzinfo=UTC)
    for row in content.singles:
        uid = content.uids.get(row.id, row.id)
        # Written as text (``text``: the same bytes, without icalendar's objects), but in a
        # fold of the zone, which ``_vevent`` writes at a fixed offset.
        written = row_vevent(row, tz, uid=uid, reminder=content.reminder)
        events.append(written if written is not None else _vevent(row, tz, uid=uid, fixed=fixed))
    for series in content.series:
        uid = content.uids.get(series.id, series.id)
        own = zone_of(series, tz)  # written in the zone it repeats in
        zones.add(zone_name(own))
        changed = content.exceptions.get(series.id, [])
        cancelled = [e.original_starts_at for e in changed if e.status == CANCELLED]
        edges = _edges(series, tz, horizon, {from_db(e.original_starts_at) for e in changed})
        fold_cancelled: list[datetime] = []
        events.append(
            _series_vevent(
                series, own, uid=uid, cancelled=cancelled, edges=edges,
                fold_cancelled=fold_cancelled,
            )
        )  # fmt: skip
        for start in fold_cancelled:  # as Google Calendar writes cancellations
            vevent = _edge_vevent(series, tz, own, start, uid=uid, fixed=fixed)
            vevent["STATUS"] = "CANCELLED"
            events.append(vevent)
        for exception in changed:
            if exception.status != CANCELLED:
                vevent = _vevent(exception, tz, uid=uid, fixed=fixed)
                _add_original(vevent, from_db(exception.original_starts_at), own, series, fixed)
                events.append(vevent)
        for start in edges:  # each as it is, at fixed offsets: see ``edges``
            events.append(_edge_vevent(series, tz, own, start, uid=uid, fixed=fixed))
    for name in sorted(zones - {"UTC"}):
        cal.add_component(_timezone(name, content))
    for name, offset in sorted(fixed.items()):
        cal.add_component(fixed_vtimezone(name, offset))
    # The calendar's own lines and its VTIMEZONEs, then each VEVENT (text, or icalendar's).
    head = cal.to_ical()
    assert head.endswith(_END)
    parts = [head[: -len(_END)]]
    for one in events:
        if isinstance(one, str):
            parts.append(one.encode())
            continue
        if content.reminder is not None and one.get("STATUS") != "CANCELLED":
            one.add_component(_alarm(content.reminder, str(one.get("SUMMARY", ""))))
        parts.append(one.to_ical())
    parts.append(_END)
    body = b"".join(parts)
    etag = '"' + hashlib.sha256(body).hexdigest()[:40] + '"'
    return Rendered(body, etag, len(events))


def _alarm(minutes: int, title: str) -> Alarm:
    """The owner's default reminder: shown ``minutes`` before the start (RFC 5545 3.6.6)."""
    alarm = Alarm()
    alarm.add("action", "DISPLAY")
    alarm.add("description", vText(title or "Reminder"))
    alarm.add("trigger", timedelta(minutes=-minutes))
    return alarm


def _years(content: FeedContent) -> tuple[int, int]:
    """The years the feed's VTIMEZONEs cover: from the year before the earliest event to ten
    years after the latest start (enough for any client to place every local time it
    shows); its DST edges are written up to the same end."""
    starts = [from_db(r.starts_at) for r in (*content.singles, *content.series)]
    first = min(starts, default=datetime(2000, 1, 1, tzinfo=UTC))
    last = max(starts, default=first)
    return max(first.year - 1, 1970), min(max(last.year, first.year) + 10, 2099)


def _timezone(name: str, content: FeedContent) -> Timezone:
    """The zone's VTIMEZONE, with its transitions over ``_years``."""
    first_year, last_year = _years(content)
    return Timezone.from_tzid(
        name, first_date=date(first_year, 1, 1), last_date=date(last_year, 1, 1)
    )


def _length(series: Any) -> timedelta:
    length: timedelta = from_db(series.ends_at) - from_db(series.starts_at)
    return length


def _edges(series: Any, tz: tzinfo, horizon: datetime, excepted: set[datetime]) -> list[datetime]:
    """The starts of a timed series' occurrences before ``horizon`` that outside readers
    would read otherwise (``edges.edge_starts``), but for those changed or cancelled."""
    if series.all_day:
        return []
    rule = stored_rule(tuple(orjson.loads(series.recurrence)), False)
    starts = edge_starts(rule, times_of(series, tz), _length(series), until=horizon)
    return [s for s in starts if s not in excepted]


class _ExactDuration(vDuration):
    """``DURATION`` in hours, minutes and seconds: exact time (RFC 5545 3.3.6 reads days and
    weeks as nominal, so ``P1D`` across a DST change would be 23 or 25 hours)."""

    def to_ical(self) -> bytes:
        seconds = int(self.td.total_seconds())
        hours, rest = divmod(seconds, 3600)
        return f"PT{hours}H{rest // 60}M{rest % 60}S".encode()


def _add_original(
    vevent: Event, original: datetime, tz: tzinfo, series: Any, fixed: dict[str, timedelta]
) -> None:
    """An exception's ``RECURRENCE-ID``: its original start (``edges.rid_form``)."""
    if series.all_day:
        _add_time(vevent, "recurrence-id", original, tz, all_day=True)
        return
    value, tzid = rid_form(original, tz)
    _note_fixed(tzid, original, tz, fixed)
    vevent.add("recurrence-id", value, parameters={"TZID": tzid} if tzid else {})


def _vevent(
    row: Any,
    tz: tzinfo,
    *,
    uid: str,
    anchor: bool = False,
    fixed: dict[str, timedelta] | None = None,
) -> Event:
    """An event's VEVENT, its times in ``tz``; one in a fold of ``tz`` (a local time that
    occurs twice) at the fixed offset it has (``edges.fixed_form``; its zone noted in
    ``fixed``), which no reader can take for the other, unless it is a series' ``anchor``
    (its rule repeats from the local time)."""
    vevent = Event()
    created, updated = from_db(row.created_at), from_db(row.updated_at)
    vevent.add("uid", uid)
    vevent.add("dtstamp", updated)
    vevent.add("created", created)
    vevent.add("last-modified", updated)
    vevent.add("sequence", max(0, int((updated - created).total_seconds())))
    vevent.add("summary", row.title)
    all_day = bool(row.all_day)
    for name, value in (("dtstart", from_db(row.starts_at)), ("dtend", from_db(row.ends_at))):
        if not all_day and not anchor and fixed is not None and is_ambiguous(value, tz):
            _add_fixed(vevent, name, value, tz, fixed)
        else:
            _add_time(vevent, name, value, tz, all_day=all_day)
    if row.description:
        vevent.add("description", row.description)
    if row.location:
        vevent.add("location", row.location)
    # RFC 5545 3.8.2.7: TRANSPARENT is shown but takes no time (our ``transparency``).
    vevent.add("transp", "TRANSPARENT" if row.transparency == "transparent" else "OPAQUE")
    vevent.add("status", "CONFIRMED")
    add_people(vevent, getattr(row, "attendees", None))
    return vevent


def _series_vevent(
    series: Any,
    tz: tzinfo,
    *,
    uid: str,
    cancelled: Sequence[Any],
    edges: Sequence[datetime],
    fold_cancelled: list[datetime],
) -> Event:
    """A series' VEVENT in ``tz`` (the zone it repeats in). A timed one has an exact
    ``DURATION`` rather than a ``DTEND`` (readers that add a ``DTEND``'s difference on the
    wall clock get the length right for the first occurrence too). Its excluded starts in
    a fold of ``tz`` are left to ``fold_cancelled`` (filled here)."""
    vevent = _vevent(series, tz, uid=uid, anchor=True)
    all_day = bool(series.all_day)
    fold_cancelled.clear()
    if not all_day:
        del vevent["DTEND"]
        vevent["DURATION"] = _ExactDuration(_length(series))
    lines = tuple(orjson.loads(series.recurrence))
    rule = stored_rule(lines, all_day)
    # A reader that drops an instance in a gap counts one fewer: the last instance says it.
    until = None
    if rule.count is not None and any(in_gap(e, tz) for e in edges):
        until = from_db(series.recurrence_last_start).astimezone(UTC)
    for line in lines:
        if line.startswith("RRULE:"):
            recur = vRecur.from_ical(line.removeprefix("RRULE:"))
            if until is not None:
                del recur["COUNT"]
                recur["UNTIL"] = until
            vevent.add("rrule", recur)
    excluded = sorted({_instant(v, tz, all_day) for v in rule.exdates} | {
        from_db(v) for v in cancelled
    })  # fmt: skip
    if excluded and all_day:
        _add_times(vevent, "exdate", excluded, tz, all_day=all_day)
    elif excluded:  # grouped by the form each is written in (``edges.rid_form``)
        forms: dict[str | None, list[datetime]] = {}
        for value in excluded:
            if is_ambiguous(value, tz):
                # No EXDATE form is read alike: written as a cancelled exception instead.
                fold_cancelled.append(value)
                continue
            local, tzid = rid_form(value, tz)
            forms.setdefault(tzid, []).append(local)
        for tzid, values in forms.items():
            vevent.add("exdate", values, parameters={"TZID": tzid} if tzid else {})
    if rule.rdates:
        _add_times(
            vevent, "rdate", [_instant(v, tz, all_day) for v in rule.rdates], tz, all_day=all_day
        )
    return vevent


def _edge_vevent(
    series: Any,
    tz: tzinfo,
    own: tzinfo,
    start: datetime,
    *,
    uid: str,
    fixed: dict[str, timedelta],
) -> Event:
    """The occurrence of ``series`` (repeating in ``own``) that starts at ``start`` as an
    exception of its own, its times at the fixed offsets they have (see ``edges``)."""
    vevent = _vevent(series, tz, uid=uid)
    _add_original(vevent, start, own, series, fixed)
    for name, value in (("DTSTART", start), ("DTEND", start + _length(series))):
        del vevent[name]
        _add_fixed(vevent, name, value, own, fixed)
    return vevent


def _add_fixed(
    vevent: Event, name: str, value: datetime, tz: tzinfo, fixed: dict[str, timedelta]
) -> None:
    local, tzid = fixed_form(value, tz)
    _note_fixed(tzid, value, tz, fixed)
    vevent.add(name, local, parameters={"TZID": tzid})


def _note_fixed(tzid: str | None, value: datetime, tz: tzinfo, fixed: dict[str, timedelta]) -> None:
    """Keep the fixed-offset zone ``tzid`` names, if it is one, for its VTIMEZONE."""
    if tzid is not None and tzid != zone_key(tz):
        offset = value.astimezone(tz).utcoffset()
        assert offset is not None
        fixed[tzid] = offset


def _instant(value: datetime, tz: tzinfo, all_day: bool) -> datetime:
    """A rule's EXDATE/RDATE value as an instant: all-day rules hold naive local midnights."""
    if value.tzinfo is None:
        return localize(value, tz).astimezone(UTC)
    return value


def _local(value: datetime, tz: tzinfo, all_day: bool) -> date | datetime:
    local = value.astimezone(tz)
    return local.date() if all_day else local


def _add_time(vevent: Event, name: str, value: datetime, tz: tzinfo, *, all_day: bool) -> None:
    vevent.add(name, _local(value, tz, all_day))


def _add_times(
    vevent: Event, name: str, values: Iterable[datetime], tz: tzinfo, *, all_day: bool
) -> None:
    vevent.add(name, [_local(v, tz, all_day) for v in values])
