"""A calendar as RFC 5545 text: what a subscription feed serves.

``read_calendar`` reads what the feed holds (``feed_window``); ``render_calendar`` writes it,
with the ``icalendar`` package, and is pure (the front runs it off the event loop):

- one ``VTIMEZONE`` for the calendar's zone (none for UTC); timed events in that zone
  (``DTSTART;TZID=…``), all-day ones as dates (``VALUE=DATE``, ``DTEND`` exclusive);
- a single event is a ``VEVENT``; a series one ``VEVENT`` with its ``RRULE`` and its
  ``EXDATE``/``RDATE`` (in the series' zone), its cancelled occurrences added as ``EXDATE``s;
  each changed occurrence a ``VEVENT`` of its own with the series' ``UID`` and a
  ``RECURRENCE-ID`` (its original start);
- ``UID``: the UID an event was imported with, else its id (stable: ids never change);
  ``DTSTAMP`` and ``LAST-MODIFIED``: its last change, so the text changes only when the
  calendar does and the ``ETag`` (a hash of the text) says so; ``SEQUENCE``: the whole seconds
  from its creation to its last change, so it grows with each later change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any

import orjson
from icalendar import Calendar, Event, Timezone, vRecur, vText
from sqlalchemy import Connection, and_, or_, select

from calendar_service.calendars import CalendarRow
from calendar_service.events.queries import EVENT_COLUMNS
from calendar_service.models import events_t, from_db, ical_uids_t, utc_text_of
from calendar_service.recurrence import stored_rule
from calendar_service.timeutil import localize, zone

FEED_HISTORY = timedelta(days=365)
"""How far back a feed reaches: events that ended within this (and every series whose last
occurrence did, or that has no end, whole with all its changed occurrences)."""
PRODID = "-//calendar-service//iCalendar feed//EN"
CANCELLED = "cancelled"


@dataclass(slots=True)
class FeedContent:
    """What a feed holds, as read from the database (no connection needed to render it)."""

    calendar: CalendarRow
    singles: list[Any] = field(default_factory=list)
    series: list[Any] = field(default_factory=list)
    exceptions: dict[str, list[Any]] = field(default_factory=dict)  # series id: its rows
    uids: dict[str, str] = field(default_factory=dict)  # event id: imported UID


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
    return (calendar, digest.hexdigest(), feed_floor(now))


def read_calendar(conn: Connection, *, calendar: CalendarRow, now: datetime) -> FeedContent:
    """The calendar's events within the feed's window (see ``FEED_HISTORY``)."""
    floor = feed_floor(now)
    c = events_t.c
    singles = and_(c.recurrence.is_(None), c.recurring_event_id.is_(None), c.ends_at > floor)
    series = and_(
        c.recurrence.is_not(None), or_(c.recurrence_ends_at.is_(None), c.recurrence_ends_at > floor)
    )
    content = FeedContent(calendar)
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
    cal.add("refresh-interval", timedelta(hours=1), parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", "PT1H")
    events: list[Event] = []
    for row in content.singles:
        events.append(_vevent(row, tz, uid=content.uids.get(row.id, row.id)))
    for series in content.series:
        uid = content.uids.get(series.id, series.id)
        changed = content.exceptions.get(series.id, [])
        cancelled = [e.original_starts_at for e in changed if e.status == CANCELLED]
        events.append(_series_vevent(series, tz, uid=uid, cancelled=cancelled))
        for exception in changed:
            if exception.status != CANCELLED:
                vevent = _vevent(exception, tz, uid=uid)
                _add_time(
                    vevent, "recurrence-id", from_db(exception.original_starts_at), tz,
                    all_day=bool(series.all_day),
                )  # fmt: skip
                events.append(vevent)
    if tz is not UTC:
        cal.add_component(_timezone(calendar.time_zone, content))
    for vevent in events:
        cal.add_component(vevent)
    body = cal.to_ical()
    etag = '"' + hashlib.sha256(body).hexdigest()[:40] + '"'
    return Rendered(body, etag, len(events))


def _timezone(name: str, content: FeedContent) -> Timezone:
    """The zone's VTIMEZONE, with its transitions from the earliest event on to ten years
    ahead of the latest start (enough for any client to place every local time it shows)."""
    starts = [from_db(r.starts_at) for r in (*content.singles, *content.series)]
    first = min(starts, default=datetime(2000, 1, 1, tzinfo=UTC))
    last = max(starts, default=first)
    first_year = max(first.year - 1, 1970)
    last_year = min(max(last.year, first.year) + 10, 2099)
    return Timezone.from_tzid(
        name, first_date=date(first_year, 1, 1), last_date=date(last_year, 1, 1)
    )


def _vevent(row: Any, tz: tzinfo, *, uid: str) -> Event:
    vevent = Event()
    created, updated = from_db(row.created_at), from_db(row.updated_at)
    vevent.add("uid", uid)
    vevent.add("dtstamp", updated)
    vevent.add("created", created)
    vevent.add("last-modified", updated)
    vevent.add("sequence", max(0, int((updated - created).total_seconds())))
    vevent.add("summary", row.title)
    all_day = bool(row.all_day)
    _add_time(vevent, "dtstart", from_db(row.starts_at), tz, all_day=all_day)
    _add_time(vevent, "dtend", from_db(row.ends_at), tz, all_day=all_day)
    if row.description:
        vevent.add("description", row.description)
    if row.location:
        vevent.add("location", row.location)
    # RFC 5545 3.8.2.7: TRANSPARENT is shown but takes no time (our ``transparency``).
    vevent.add("transp", "TRANSPARENT" if row.transparency == "transparent" else "OPAQUE")
    vevent.add("status", "CONFIRMED")
    return vevent


def _series_vevent(series: Any, tz: tzinfo, *, uid: str, cancelled: Sequence[Any]) -> Event:
    vevent = _vevent(series, tz, uid=uid)
    all_day = bool(series.all_day)
    lines = tuple(orjson.loads(series.recurrence))
    rule = stored_rule(lines, all_day)
    for line in lines:
        if line.startswith("RRULE:"):
            vevent.add("rrule", vRecur.from_ical(line.removeprefix("RRULE:")))
    excluded = sorted({_instant(v, tz, all_day) for v in rule.exdates} | {
        from_db(v) for v in cancelled
    })  # fmt: skip
    if excluded:
        _add_times(vevent, "exdate", excluded, tz, all_day=all_day)
    if rule.rdates:
        _add_times(
            vevent, "rdate", [_instant(v, tz, all_day) for v in rule.rdates], tz, all_day=all_day
        )
    return vevent


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
