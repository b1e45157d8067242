"""What outside readers disagree on near a DST change, and how the feed says it so they agree.

A series is written as RFC 5545 says (``DTSTART;TZID=…`` and its ``RRULE``), but readers
differ exactly where a zone changes its clocks (issue 24, measured with
``recurring-ical-events``, ``ical.js`` and ``node-ical``):

- a local start inside the autumn **fold** (01:30 on the night New York goes back) is the
  first of the two for RFC 5545 and for us, the second for ``ical.js``;
- a local start inside the spring **gap** (02:30 the night clocks go forward) is 03:30 for RFC
  5545's DTSTART rule, for us and for most readers; ``node-ical`` drops it (RFC 5545's rule
  for generated instances), and so counts one fewer for ``COUNT``;
- an occurrence whose span crosses a change (00:30 to 02:00 on the autumn night, 90 minutes)
  lasts its exact duration for RFC 5545, ``node-ical`` and us; ``recurring-ical-events`` and
  ``ical.js`` add the duration on the wall clock (so 150 minutes).

So the feed writes each such occurrence (``edge_starts``) once more, as an exception of its own
(``RECURRENCE-ID``) with its start and end at the fixed UTC offsets they have (``fixed_form``:
not in UTC, which ``recurring-ical-events`` moves to the feed's ``X-WR-TIMEZONE``), which every
reader takes as they are; the occurrence is named in the form each reader matches to the
instance it generated (``rid_form``): in a fold, with the fixed UTC offset it has
(``TZID=Etc/GMT+4``, whose local time is the same text as New York's); in or just after a gap,
in UTC; else in the series' zone. A cancelled occurrence in a fold is a ``STATUS:CANCELLED``
exception (no ``EXDATE`` form is matched alike: ``ical.js`` compares instants, ``node-ical``
reads the fold's other time). A ``COUNT`` rule with an occurrence in a gap is written as the
``UNTIL`` of its last instance. The importer reads such an exception back as the occurrence it
is (an exception that changes nothing is not stored), so a feed's round trip stays exact.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone, tzinfo

from icalendar import Timezone, TimezoneStandard

from calendar_service.calendar.recurrence import Budget, Paused, Rule, SeriesTimes, expand

_PROBE = timedelta(hours=6)
"""Transitions are found by sampling the offset this often (zones change at most a few times
a day; none twice within six hours)."""


def is_ambiguous(value: datetime, tz: tzinfo) -> bool:
    """``value``'s local time in ``tz`` occurs twice (it is in the autumn fold)."""
    local = value.astimezone(tz).replace(tzinfo=None)
    return (
        local.replace(tzinfo=tz, fold=0).utcoffset() != local.replace(tzinfo=tz, fold=1).utcoffset()
    )


def transitions(tz: tzinfo, first: datetime, last: datetime) -> list[tuple[datetime, timedelta]]:
    """The instants in ``[first, last)`` at which ``tz``'s UTC offset changes, each with how
    much it moves (positive: clocks go forward)."""
    return [
        (at, delta)
        for year in range(first.year, last.year + 1)
        for at, delta in _year_transitions(tz, year)
        if first <= at < last
    ]


@functools.lru_cache(maxsize=4096)
def _year_transitions(tz: tzinfo, year: int) -> tuple[tuple[datetime, timedelta], ...]:
    found: list[tuple[datetime, timedelta]] = []
    at, last = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    offset = at.astimezone(tz).utcoffset()
    while at < last:
        step = at + _PROBE
        after = step.astimezone(tz).utcoffset()
        if after != offset:
            low, high = at, step  # the change is in (low, high]: bisect to the second
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if middle.astimezone(tz).utcoffset() == offset:
                    low = middle
                else:
                    high = middle
            assert offset is not None and after is not None
            found.append((high.replace(microsecond=0), after - offset))
            offset = after
        at = step
    return tuple(found)


def edge_starts(
    rule: Rule,
    times: SeriesTimes,
    length: timedelta,
    *,
    until: datetime,
) -> Iterator[datetime]:
    """The starts (UTC, in order) of a timed series' occurrences before ``until`` that
    readers disagree on (see the module's docstring): starting in a fold or within a gap's
    length after a gap, or spanning a change of offset."""
    tz = times.tz
    first = times.start.replace(microsecond=0)
    seen: set[datetime] = set()
    # A rule without times of its own starts every occurrence at DTSTART's local time of day:
    # a change far from it on the clock cannot touch one (most series: no expansion at all).
    by = dict(rule.by)
    fixed_time = not rule.rdates and not {"byhour", "byminute", "bysecond"} & by.keys()
    start_minute = _minute_of_day(times.start.astimezone(tz))
    for change, delta in transitions(tz, first - timedelta(days=1), until):
        reach = abs(delta) + timedelta(hours=1)
        if fixed_time and length < timedelta(hours=20):
            wall = _minute_of_day((change - timedelta(seconds=1)).astimezone(tz))
            low = wall - (length + reach) // timedelta(minutes=1)
            high = wall + reach // timedelta(minutes=1)
            if not any(low <= start_minute + day <= high for day in (-1440, 0, 1440)):
                continue
        try:
            near = list(
                expand(
                    rule,
                    times,
                    since=max(times.start, change - length - reach),
                    before=change + reach,
                    budget=Budget(),
                )
            )
        except Paused:
            continue  # too costly to look at: left as the rule says
        for start in near:
            end = start + length
            spans = start < change <= end  # an offset at its end other than at its start
            in_gap = delta > timedelta(0) and change <= start < change + delta
            if start not in seen and (spans or in_gap or is_ambiguous(start, tz)):
                seen.add(start)
                yield start


def _minute_of_day(local: datetime) -> int:
    return local.hour * 60 + local.minute


def in_gap(value: datetime, tz: tzinfo) -> bool:
    """``value`` is within a gap's length after clocks went forward in ``tz`` (an instance
    a rule may have moved out of the gap)."""
    before = value.astimezone(tz).utcoffset()
    earlier = (value - timedelta(hours=3)).astimezone(tz).utcoffset()
    assert before is not None and earlier is not None
    return before > earlier and (value - (before - earlier)).astimezone(tz).utcoffset() == earlier


def fixed_zone(offset: timedelta) -> tuple[str, tzinfo]:
    """A zone with ``offset`` all year: its TZID (``Etc/GMT+4`` for -04:00: POSIX signs) and
    a ``tzinfo`` to write local times in."""
    minutes = int(offset.total_seconds()) // 60
    hours, rest = divmod(abs(minutes), 60)
    if rest == 0 and hours <= 12:
        name = "Etc/GMT" if hours == 0 else f"Etc/GMT{'-' if minutes > 0 else '+'}{hours}"
    else:
        name = f"UTC{'+' if minutes >= 0 else '-'}{hours:02d}{rest:02d}"
    return name, timezone(offset)


def fixed_vtimezone(name: str, offset: timedelta) -> Timezone:
    """The VTIMEZONE of ``fixed_zone``'s ``name``: one observance, never changing."""
    vtimezone = Timezone()
    vtimezone.add("tzid", name)
    observance = TimezoneStandard()
    observance.add("dtstart", datetime(1970, 1, 1))
    observance.add("tzoffsetfrom", offset)
    observance.add("tzoffsetto", offset)
    observance.add("tzname", name.removeprefix("Etc/"))
    vtimezone.add_component(observance)
    return vtimezone


RidForm = tuple[datetime, str | None]
"""How a feed writes an occurrence's original start: a naive local time and its TZID, or a
UTC instant (``None``)."""


def rid_form(value: datetime, tz: tzinfo) -> RidForm:
    """How ``value`` (an original start, UTC) is written as a ``RECURRENCE-ID`` or
    ``EXDATE`` of a series repeating in ``tz`` so that every reader matches it to its own
    instance: in a fold, with the fixed offset it has; in or just after a gap, in UTC;
    else the local time in ``tz``."""
    if is_ambiguous(value, tz):
        return fixed_form(value, tz)
    if tz is UTC or in_gap(value, tz):
        return value.astimezone(UTC), None
    return local_in(value, tz), zone_key(tz)


def local_in(value: datetime, tz: tzinfo) -> datetime:
    """``value``'s local time in ``tz``, naive."""
    return value.astimezone(tz).replace(tzinfo=None)


def fixed_form(value: datetime, tz: tzinfo) -> tuple[datetime, str]:
    """``value`` as a local time with the fixed offset it has in ``tz`` and that zone's TZID
    (``fixed_zone``): the same instant for every reader, never ambiguous, and not a UTC time
    (which ``recurring-ical-events`` moves to the feed's ``X-WR-TIMEZONE``, losing the fold)."""
    offset = value.astimezone(tz).utcoffset()
    assert offset is not None
    name, fixed = fixed_zone(offset)
    return value.astimezone(fixed).replace(tzinfo=None), name


def zone_key(tz: tzinfo) -> str:
    return str(getattr(tz, "key", "UTC"))
