"""The occurrences the planner plans for: single events, a series' occurrences (its changed
ones as they were changed, its cancelled ones not at all), each with the public object the
API shows for it, found by start within a stretch of time.

A calendar's stretch is read with two indexed queries (``ix_events_calendar_start`` for the
rows that are occurrences of their own, single events and changed occurrences; the series
that may occur in it) and each series expanded over the stretch alone with the bounded
expansion of ``recurrence`` (its local wall time kept across DST, as the list shows it); a
series' occurrence ids, times and objects are those the list gives (``events.series``,
``events.shapes``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from sqlalchemy import Connection, and_, or_, select

from calendar_service.calendar.events.queries import EVENT_COLUMNS
from calendar_service.calendar.events.series import CANCELLED, length_of, rule_of, times_of
from calendar_service.calendar.events.shapes import event_public, occurrence_public
from calendar_service.calendar.recurrence import (
    WRITE_BUDGET,
    Budget,
    Paused,
    end_of,
    expand,
    occurrence_id,
)
from calendar_service.platform.models import events_t, from_db
from calendar_service.platform.timeutil import zone

logger = logging.getLogger("calendar_service.delivery.triggers")


@dataclass(frozen=True, slots=True)
class Calendar:
    """What planning needs of a calendar."""

    id: str
    user_id: str
    name: str
    time_zone: str
    max_event_seconds: int

    @property
    def tz(self) -> tzinfo:
        return zone(self.time_zone)


@dataclass(frozen=True, slots=True)
class Occurrence:
    event_id: str  # the single event's id, or the occurrence's (``<seriesId>_<stamp>``)
    series_id: str | None  # an occurrence's series
    calendar: Calendar
    starts_at: datetime  # UTC
    ends_at: datetime
    event: dict[str, Any]  # as the API shows it


def _singles(calendar: Calendar, start: datetime, before: datetime) -> Any:
    """The rows that are occurrences of their own, starting in ``[start, before)``."""
    c = events_t.c
    return select(*EVENT_COLUMNS).where(
        c.calendar_id == calendar.id,
        c.starts_at >= start,
        c.starts_at < before,
        c.recurrence.is_(None),
        c.status != CANCELLED,
    )


def in_stretch(
    conn: Connection, calendar: Calendar, start: datetime, before: datetime
) -> list[Occurrence]:
    """Every occurrence in ``calendar`` starting in ``[start, before)``."""
    found = [_of_row(row, calendar) for row in conn.execute(_singles(calendar, start, before))]
    c = events_t.c
    series = list(
        conn.execute(
            select(*EVENT_COLUMNS).where(
                c.calendar_id == calendar.id,
                c.recurrence.is_not(None),
                c.starts_at < before,
                or_(c.recurrence_ends_at.is_(None), c.recurrence_ends_at > start),
            )
        )
    )
    if series:
        changed = _changed(conn, [s.id for s in series], start, before)
        for row in series:
            found += of_series(row, calendar, start, before, changed)
    return found


def _changed(
    conn: Connection, series_ids: Sequence[str], start: datetime, before: datetime
) -> set[str]:
    """The ids of the changed or cancelled occurrences (exception rows) of these series whose
    original start is in ``[start, before)``: the rule's own occurrence is not theirs."""
    c = events_t.c
    found: set[str] = set()
    for at in range(0, len(series_ids), 500):
        found.update(
            conn.execute(
                select(c.id).where(
                    c.recurring_event_id.in_(series_ids[at : at + 500]),
                    c.original_starts_at >= start,
                    c.original_starts_at < before,
                )
            ).scalars()
        )
    return found


def of_event(
    conn: Connection, row: Any, calendar: Calendar, start: datetime, before: datetime
) -> list[Occurrence]:
    """What one event row (as ``EVENT_COLUMNS``) contributes starting in ``[start, before)``:
    a single event itself, a series its occurrences (changed ones included)."""
    if row.recurrence is None:
        if row.status == CANCELLED or not start <= from_db(row.starts_at) < before:
            return []
        return [_of_row(row, calendar)]
    c = events_t.c
    changed_rows = conn.execute(
        select(*EVENT_COLUMNS).where(
            c.recurring_event_id == row.id,
            or_(
                and_(c.original_starts_at >= start, c.original_starts_at < before),
                and_(c.starts_at >= start, c.starts_at < before),
            ),
        )
    ).all()
    changed = {r.id for r in changed_rows if start <= from_db(r.original_starts_at) < before}
    found = of_series(row, calendar, start, before, changed)
    found += [
        _of_row(r, calendar)
        for r in changed_rows
        if r.status != CANCELLED and start <= from_db(r.starts_at) < before
    ]
    return found


def _of_row(row: Any, calendar: Calendar) -> Occurrence:
    return Occurrence(
        event_id=row.id,
        series_id=row.recurring_event_id,
        calendar=calendar,
        starts_at=from_db(row.starts_at),
        ends_at=from_db(row.ends_at),
        event=event_public(row, calendar_name=calendar.name, tz=calendar.tz),
    )


def of_series(
    series: Any, calendar: Calendar, start: datetime, before: datetime, changed: Iterable[str]
) -> list[Occurrence]:
    """The series' computed occurrences starting in ``[start, before)``, but those with an
    exception row (``changed``: changed or cancelled, read on their own)."""
    tz = calendar.tz
    all_day = bool(series.all_day)
    starts, ends = from_db(series.starts_at), from_db(series.ends_at)
    length = length_of(starts, ends, all_day=all_day, tz=tz)
    skipped = set(changed)
    found = []
    try:
        for original in expand(
            rule_of(series), times_of(series, tz), since=start, before=before,
            budget=Budget(WRITE_BUDGET),
        ):  # fmt: skip
            event_id = occurrence_id(series.id, original, all_day=all_day, tz=tz)
            if event_id in skipped:
                continue
            span = (original, end_of(original, tz, all_day, length))
            found.append(
                Occurrence(
                    event_id=event_id,
                    series_id=series.id,
                    calendar=calendar,
                    starts_at=span[0],
                    ends_at=span[1],
                    event=occurrence_public(
                        series, calendar_name=calendar.name, tz=tz, event_id=event_id, span=span
                    ),
                )
            )
    except Paused as paused:  # a rule too dense to expand over the stretch: planned up to it
        logger.warning(
            "series %s: time triggers planned only up to %s (its rule is too dense)",
            series.id,
            paused.at.isoformat(),
        )
    return found


def longest(calendar: Calendar) -> timedelta:
    """The longest an event of the calendar has ever lasted (an end is at most this much
    after its start): where to start looking for the events that end in a stretch."""
    return timedelta(seconds=calendar.max_event_seconds + 3600)  # an hour more: DST days
