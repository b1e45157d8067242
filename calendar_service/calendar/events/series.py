"""Series and their occurrences by id: what an id names, an occurrence's public object, a
series' rule and times as stored, and the exception rows of a series.

Every id form is loaded through ``queries.load_in_scope``, so a key reaches a series, its
exceptions and its occurrences exactly when it reaches the series' calendar:

- a single event's or a series' id: its row;
- an occurrence id ``<seriesId>_<stamp>`` (``recurrence.occurrence_id``): the row of that id if
  the occurrence was changed or cancelled (an exception: it keeps the occurrence id), else the
  series, and the occurrence is computed (404 if the rule does not produce it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal

import orjson
from sqlalchemy import Connection, delete, select

from calendar_service.access.keys import Principal
from calendar_service.calendar.calendars import CalendarRow, check_writable
from calendar_service.calendar.events.queries import EVENT_COLUMNS, events_t, load_in_scope
from calendar_service.calendar.events.shapes import Row, occurrence_public
from calendar_service.calendar.recurrence import (
    Rule,
    SeriesTimes,
    end_of,
    occurrence_id,
    occurs_at,
    original_of,
    parse_recurrence,
    split_occurrence_id,
    stored_rule,
    summarize,
)
from calendar_service.platform.errors import FieldError, NotFound, ValidationFailed
from calendar_service.platform.timeutil import localize, zone

CANCELLED = "cancelled"
CONFIRMED = "confirmed"

Kind = Literal["event", "series", "occurrence"]


@dataclass(frozen=True, slots=True)
class Target:
    """What an event id names, within the key's reach."""

    kind: Kind
    calendar: CalendarRow
    tz: tzinfo
    row: Any  # the event, the series, or an occurrence's exception row (None: not changed)
    series: Any = None  # occurrences: the series row
    original: datetime | None = None  # occurrences: the original start (UTC)

    @property
    def occurrence_id(self) -> str:
        assert self.series is not None and self.original is not None
        return occurrence_id(
            self.series.id, self.original, all_day=bool(self.series.all_day), tz=self.tz
        )


def _not_found(event_id: str) -> NotFound:
    return NotFound(f"No event {event_id!r} in the calendars this key can reach.")


def load_target(
    conn: Connection, *, principal: Principal, event_id: str, for_change: bool = False
) -> Target:
    """The event, series or occurrence ``event_id`` names, if the key may reach it; 404
    otherwise, and for a cancelled occurrence or one the rule does not produce.

    ``for_change``: the caller is about to change what the id names, so the series (or the
    single event) is locked first (``lock_series``) and what is read is what stays true until
    the transaction ends; a connected calendar's event is refused (409 ``read_only_calendar``:
    ``calendars.check_writable``)."""
    if for_change:
        lock_series(conn, event_id)
    try:
        row, calendar = load_in_scope(conn, principal=principal, event_id=event_id)
    except NotFound:
        target = _computed_occurrence(conn, principal=principal, event_id=event_id)
        if for_change:
            check_writable(target.calendar)
        return target
    if for_change:
        check_writable(calendar)
    tz = zone(calendar.time_zone)
    if row.recurring_event_id is None:
        return Target("series" if row.recurrence is not None else "event", calendar, tz, row)
    if row.status == CANCELLED:
        raise _not_found(event_id)
    series, _ = load_in_scope(conn, principal=principal, event_id=row.recurring_event_id)
    return Target("occurrence", calendar, tz, row, series, row.original_starts_at)


def lock_series(conn: Connection, event_id: str) -> None:
    """Lock the row of the series that ``event_id`` belongs to (or of the event itself) until
    the transaction ends, so that the changes of one series are made one at a time: an
    exception made of one occurrence while another request changes the rule would otherwise
    be left behind by the rule's clean-up (``drop_unproduced``). Every change of a series, of
    one of its occurrences or of a single event takes this lock first, before any other row
    of the series (one order, no deadlock). PostgreSQL only: SQLite has one writer at a
    time."""
    if conn.dialect.name != "postgresql":
        return
    parts = split_occurrence_id(event_id)
    series_id = parts[0] if parts is not None else event_id
    conn.execute(select(events_t.c.id).where(events_t.c.id == series_id).with_for_update())


def _computed_occurrence(conn: Connection, *, principal: Principal, event_id: str) -> Target:
    parts = split_occurrence_id(event_id)
    if parts is None:
        raise _not_found(event_id)
    series_id, stamp = parts
    try:
        series, calendar = load_in_scope(conn, principal=principal, event_id=series_id)
    except NotFound:
        raise _not_found(event_id) from None
    if series.recurrence is None:
        raise _not_found(event_id)
    tz = zone(calendar.time_zone)
    original = original_of(stamp, all_day=bool(series.all_day), tz=tz)
    if original is not None:  # the stamp is to the second; a series' start may not be
        original += timedelta(microseconds=series.starts_at.microsecond)
    if original is None or not occurs_at(rule_of(series), times_of(series, tz), original):
        raise _not_found(event_id)
    return Target("occurrence", calendar, tz, None, series, original)


def rule_of(series: Any) -> Rule:
    """A series row's rule (cached by its stored text)."""
    return stored_rule(tuple(orjson.loads(series.recurrence)), bool(series.all_day))


def zone_of(row: Any, calendar_tz: tzinfo) -> tzinfo:
    """The zone whose wall clock a series repeats at (and its naive times are read in): its
    own (``time_zone``, Google's ``start.timeZone``) for a timed series that has one, else its
    calendar's (``calendar_tz``). All-day series are days of their calendar's zone."""
    name = getattr(row, "time_zone", None)
    if name is None or bool(row.all_day):
        return calendar_tz
    return zone(name)


def times_of(series: Any, tz: tzinfo) -> SeriesTimes:
    """What expanding ``series`` needs besides its rule; ``tz``: its calendar's zone."""
    return SeriesTimes(series.starts_at, zone_of(series, tz), series.recurrence_last_start)


def length_of(start: datetime, end: datetime, *, all_day: bool, tz: tzinfo) -> timedelta | int:
    """An occurrence's length: a duration, or for all-day series a number of days."""
    if all_day:
        return (end.astimezone(tz).date() - start.astimezone(tz).date()).days
    return end - start


def occurrence_span(target: Target) -> tuple[datetime, datetime]:
    """A computed occurrence's start and end (UTC)."""
    series = target.series
    assert target.original is not None
    all_day = bool(series.all_day)
    length = length_of(series.starts_at, series.ends_at, all_day=all_day, tz=target.tz)
    return target.original, end_of(target.original, target.tz, all_day, length)


def occurrence_row(target: Target) -> Row:
    """The exception row an occurrence becomes when it is changed or cancelled: the series'
    fields at the occurrence's times, keeping the occurrence id (as the occurrence reads
    until then: the caller sets ``updated_at`` and ``status``)."""
    series = target.series
    start, end = occurrence_span(target)
    values = {c.name: getattr(series, c.name) for c in EVENT_COLUMNS}
    values.update(
        id=target.occurrence_id,
        starts_at=start,
        ends_at=end,
        recurrence=None,
        recurrence_last_start=None,
        recurrence_ends_at=None,
        recurring_event_id=series.id,
        original_starts_at=target.original,
        status=CONFIRMED,
    )
    return Row(values)


def target_public(target: Target) -> dict[str, Any]:
    """The public object of an occurrence that has no exception row."""
    return occurrence_public(
        target.series,
        calendar_name=target.calendar.name,
        tz=target.tz,
        event_id=target.occurrence_id,
        span=occurrence_span(target),
    )


def exceptions_of(conn: Connection, series_id: str) -> list[Any]:
    return list(
        conn.execute(
            select(events_t.c.id, events_t.c.original_starts_at).where(
                events_t.c.recurring_event_id == series_id
            )
        )
    )


def delete_exceptions(conn: Connection, series_id: str, *, since: datetime | None = None) -> None:
    """Delete the series' exception rows (those from ``since`` on, if given)."""
    query = delete(events_t).where(events_t.c.recurring_event_id == series_id)
    if since is not None:
        query = query.where(events_t.c.original_starts_at >= since)
    conn.execute(query)


def drop_unproduced(conn: Connection, series: Any, tz: tzinfo) -> None:
    """Delete the exceptions whose original start the series' (new) rule and times no longer
    produce (Google Calendar's behaviour when a series' rule or times change)."""
    rule, times = rule_of(series), times_of(series, tz)
    gone = [
        e.id
        for e in exceptions_of(conn, series.id)
        if not occurs_at(rule, times, e.original_starts_at)
    ]
    if gone:
        conn.execute(delete(events_t).where(events_t.c.id.in_(gone)))


def shifted(value: datetime, *, by: timedelta, tz: tzinfo) -> datetime:
    """``value`` moved by ``by`` in local wall-clock time (a series moved with one of its
    occurrences keeps its local time across DST)."""
    local = value.astimezone(tz).replace(tzinfo=None) + by
    return localize(local, tz).astimezone(UTC)


def local_delta(old: datetime, new: datetime, tz: tzinfo) -> timedelta:
    """How far ``new`` is from ``old`` in local wall-clock time."""
    return new.astimezone(tz).replace(tzinfo=None) - old.astimezone(tz).replace(tzinfo=None)


NOT_A_SERIES: dict[str, Any] = {
    "recurrence": None,
    "recurrence_last_start": None,
    "recurrence_ends_at": None,
    "time_zone": None,
}


def recurrence_columns(
    value: Any,
    *,
    start: datetime,
    end: datetime,
    all_day: bool,
    tz: tzinfo,
    errors: list[FieldError],
) -> dict[str, Any]:
    """The columns of a series with rule ``value`` (as sent) from ``start`` to ``end`` (its
    first occurrence), repeating in ``tz`` (``zone_of``: its own zone, or its calendar's),
    checked; ``NOT_A_SERIES`` for ``None``. Problems are added to ``errors`` (and ``{}``
    returned)."""
    if value is None:
        return dict(NOT_A_SERIES)
    try:
        rule = parse_recurrence(value, tz=tz, all_day=all_day)
        length = length_of(start, end, all_day=all_day, tz=tz)
        summary = summarize(rule, SeriesTimes(start, tz, None), length=length)
    except ValidationFailed as exc:
        errors.extend(exc.errors)
        return {}
    return {
        "recurrence": orjson.dumps(list(rule.lines)).decode(),
        "recurrence_last_start": summary.last_start,
        "recurrence_ends_at": summary.ends_at,
    }
