"""A connected calendar's iCalendar text read into busy intervals (docs/connections.md).

The text (an ``ics`` source's whole file, or one object of a ``caldav`` source) is read as an
import reads it (``reading.read_file``: its size, event count and nesting bounded, its
VTIMEZONEs resolved with bounded work; ``desired.wanted_events``: each UID checked as the core
checks an event, a hostile rule refused), then each opaque event or series is expanded within
the horizon (``HORIZON_BEFORE`` before now to ``HORIZON_AFTER`` after it) with the core's
bounded expansion (``recurrence.expand``): cancelled occurrences left out, changed ones at
their new times. A series whose expansion runs out of budget is busy from where it stopped to
the horizon's end: time that may be taken is never shown as free. A UID that cannot be read is
left out and counted (``Busy.skipped``). Pure: no database, no I/O; callers run it off the
event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo

import orjson

from calendar_service.calendar.events.series import length_of
from calendar_service.calendar.recurrence import (
    READ_BUDGET,
    Budget,
    Paused,
    SeriesTimes,
    end_of,
    expand,
    stored_rule,
)
from calendar_service.interop.ical.desired import Desired, Report, wanted_events
from calendar_service.interop.ical.reading import Bounds, read_file
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utc_text, zone

MAX_BYTES = 10 * 1024 * 1024
"""The largest file a poll reads."""
MAX_EVENTS = 20_000
"""VEVENTs a source may hold."""
_BOUNDS = Bounds(MAX_BYTES, MAX_EVENTS)
MAX_INTERVALS = 200_000
"""Busy intervals one source may give within the horizon."""
HORIZON_BEFORE = timedelta(days=7)
HORIZON_AFTER = timedelta(days=400)
SERIES_BUDGET = 4 * READ_BUDGET
"""Work units one series may spend being expanded over the horizon."""


@dataclass(slots=True)
class Busy:
    """What a text gives: its busy intervals (UTC text, in no order, each once), the events
    (UIDs) read, those left out, and the longest interval (seconds); the intervals that only
    all-day events give (``all_day_only``); with ``details``, the events as the import reads
    them (``desired.Desired``), for a connection shown in full."""

    intervals: set[tuple[str, str]] = field(default_factory=set)
    events: int = 0
    skipped: int = 0
    longest: int = 0
    all_day: set[tuple[str, str]] = field(default_factory=set)
    timed: set[tuple[str, str]] = field(default_factory=set)
    details: list[Desired] = field(default_factory=list)

    def add(self, start: datetime, end: datetime, all_day: bool = False) -> None:
        if end <= start:
            return  # zero-length events take no time
        key = (utc_text(start), utc_text(end))
        self.intervals.add(key)
        (self.all_day if all_day else self.timed).add(key)
        self.longest = max(self.longest, int((end - start).total_seconds()) + 1)

    def all_day_only(self, interval: tuple[str, str]) -> bool:
        """Whether only all-day events give ``interval`` (busy, but not a meeting)."""
        return interval in self.all_day and interval not in self.timed


class TooManyIntervals(ValueError):
    pass


def busy_of_text(data: bytes, *, tz: tzinfo, now: datetime, details: bool = False) -> Busy:
    """The busy time ``data`` gives within the horizon around ``now``; floating times are
    read in ``tz`` (the owner's default calendar's zone); ``details``: the events too. Raises
    ``InvalidICalendar`` or ``PayloadTooLarge`` (a file that cannot be read at all) or
    ``TooManyIntervals``."""
    read = read_file(data, field_name="source", bounds=_BOUNDS)
    low, high = now - HORIZON_BEFORE, now + HORIZON_AFTER
    found = Busy()
    for plan in read.plans:
        if plan.error is not None or plan.cancelled:
            found.skipped += plan.error is not None
            continue
        try:
            wanted = wanted_events(plan, tz, Report())
        except ValidationFailed:
            found.skipped += 1
            continue
        found.events += 1
        for desired in wanted:
            _add_desired(found, desired, tz, low, high)
        if details:
            found.details.extend(wanted)
        if len(found.intervals) > MAX_INTERVALS:
            raise TooManyIntervals(
                f"the calendar gives more than {MAX_INTERVALS} busy times in the next "
                f"{HORIZON_AFTER.days} days"
            )
    return found


def _add_desired(found: Busy, desired: Desired, tz: tzinfo, low: datetime, high: datetime) -> None:
    if desired.stored_recurrence is None:
        if desired.transparency == "opaque" and desired.end > low and desired.start < high:
            found.add(desired.start, desired.end, desired.all_day)
        return
    local = tz if desired.time_zone is None else zone(desired.time_zone)
    rule = stored_rule(tuple(orjson.loads(desired.stored_recurrence)), desired.all_day)
    times = SeriesTimes(desired.start, local, None)
    length = length_of(desired.start, desired.end, all_day=desired.all_day, tz=local)
    changed = {o.original: o for o in desired.overrides}
    for o in desired.overrides:
        if o.transparency == "opaque" and o.end > low and o.start < high:
            found.add(o.start, o.end, o.all_day)
    if desired.transparency != "opaque":
        return
    longest = desired.end - desired.start + timedelta(days=2)
    try:
        for start in expand(
            rule, times, since=low - longest, before=high, budget=Budget(SERIES_BUDGET)
        ):
            if start in changed:
                continue
            end = end_of(start, local, desired.all_day, length)
            if end > low:
                found.add(start, end, desired.all_day)
    except Paused as paused:
        found.add(max(paused.at, low), high)
