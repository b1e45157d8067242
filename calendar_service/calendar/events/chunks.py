"""A stored series expanded a *chunk* at a time, and the chunks kept: what the list's page
(``events.occurrences``) and busy time (``events.busy``) read series' occurrences from.

A series' *plan* (``Plan``) is what expanding it takes, read from its row once and kept by
the series' id and version (``PLANS``). Each series is expanded a chunk at a time: a stretch
of time from its start (28 days of a daily rule, 16 weeks of a weekly one, 2 years of a
monthly one, 12 years of a yearly one, times its INTERVAL; shorter for a dense rule, to hold
at most ``_CHUNK_MOST`` occurrences by ``_per_day``'s estimate). A chunk's occurrences, with
their shown times, are a pure function of the series as stored, its calendar's zone and the
chunk, so they are kept in a bounded LRU (``_CHUNKS``, bounded in occurrences too) shared by
the process's requests: a list of a calendar with a thousand weekly series reads them from
memory, not from dateutil.

Bounded work: the series of one request share a budget equally (at least ``SHARE_FLOOR``
each); chunks read from memory cost nothing. When a series' share runs out, it *pauses* at
the instant up to which it is complete (``Series.paused``). A reader that may not expand
(``may_expand=False``: from memory only) gets ``MustExpand`` where a chunk is not kept.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any, TypeVar

import orjson

from calendar_service.calendar.events.series import length_of
from calendar_service.calendar.events.shapes import Row, event_fields
from calendar_service.calendar.recurrence import (
    Budget,
    Paused,
    Rule,
    SeriesTimes,
    end_of,
    expand,
    occurrence_stamp,
    stored_rule,
)
from calendar_service.platform.deferred import Later
from calendar_service.platform.lru import Lru
from calendar_service.platform.timeutil import (
    EARLIEST,
    LATEST,
    format_in,
    from_utc_text,
    utc_text,
    zone,
)

SHARE_FLOOR = 200
"""Work units each series of a page may spend however many there are (about 100 days of a
daily rule, or 5 years of a yearly one)."""

_CHUNK_DAYS = (366 * 12, 731, 112, 28)  # by dateutil's FREQ: YEARLY, MONTHLY, WEEKLY, DAILY
_CHUNKS_KEPT = 16_384
_CHUNK_MOST = 256
"""Occurrences a chunk is made to hold at most (by an estimate from above of the rule's
occurrences a day, ``_per_day``): a dense rule gets shorter chunks, so that a page of ten
computes about ten, not 28 days of 96 a day."""
_CHUNKS_KEPT_MOST = 250_000
"""Occurrences the kept chunks hold at most in all (about 450 bytes each)."""
_PERIODS_A_YEAR = (1, 12, 53, 366)  # by dateutil's FREQ
_PERIOD_DAYS = (366, 31, 7, 1)  # by dateutil's FREQ: the most days a period holds
YEARLY, MONTHLY, WEEKLY, DAILY = range(4)  # dateutil's FREQ values

# queries.SERIES_COLUMNS, by name
_SERIES_NAMES = (
    "id",
    "calendar_id",
    "title",
    "starts_at",
    "ends_at",
    "all_day",
    "description",
    "location",
    "created_at",
    "updated_at",
    "recurrence",
    "recurrence_last_start",
    "recurrence_ends_at",
    "transparency",
    "time_zone",
    "attendees",
)

# A chunk's occurrence: start and end (stored UTC text), the occurrence id's stamp, and the
# start and end as shown (RFC 3339 in the calendar's zone).
Entry = tuple[str, str, str, str, str]
# A chunk: its occurrences' starts (to search), and the occurrences.
Chunk = tuple[tuple[str, ...], tuple[Entry, ...]]


# Only whole chunks are kept (never one cut short by a budget), keyed by everything they are
# computed from: a key always gives the same value, whichever request computed it, and a rerun
# of an operation finds what it made.
_CHUNKS = Lru(_CHUNKS_KEPT, most_weight=_CHUNKS_KEPT_MOST)


@functools.lru_cache(maxsize=4096)
def _rule_of_text(text: str, all_day: bool) -> Rule:
    return stored_rule(tuple(orjson.loads(text)), all_day)


def series_row(values: Sequence[Any]) -> Row:
    """A row of ``queries.series_statement`` with its date-times read (they come as text)."""
    row = dict(zip(_SERIES_NAMES, values, strict=True))
    for name in ("starts_at", "ends_at", "recurrence_last_start"):
        if row[name] is not None:
            row[name] = from_utc_text(row[name])
    return Row(row)


def _per_day(rule: Rule) -> float:
    """At most how many instances a day ``rule`` gives, on average over a year: an estimate
    from above (each by-part limits the days a year can hold; the times of a day multiply
    them; BYSETPOS limits a period to its positions), to size chunks by."""
    by = dict(rule.by)
    freq = rule.freq
    periods = _PERIODS_A_YEAR[freq] / rule.interval
    times = 1
    for name in ("byhour", "byminute", "bysecond"):
        times *= len(by.get(name) or (1,))
    if any(by.get(k) for k in ("byweekday", "bymonthday", "byyearday", "byweekno")):
        limits = [periods * _PERIOD_DAYS[freq]]
        weekdays = by.get("byweekday")
        if weekdays:
            plain = sum(1 for w in weekdays if getattr(w, "n", None) in (None, 0))
            limits.append(53.0 * plain + 12.0 * (len(weekdays) - plain))
            if freq == WEEKLY:
                limits.append(periods * len(weekdays))
        for name, each in (("bymonthday", 12), ("byyearday", 1), ("byweekno", 7)):
            if by.get(name):
                limits.append(float(each * len(by[name])))
        days = min(limits)
    elif freq == DAILY:
        days = periods
    else:  # the day of its start, in each period (and each month BYMONTH names)
        days = periods * (len(by.get("bymonth") or (1,)) if freq == YEARLY else 1)
    if by.get("bymonth"):
        days = min(days, 31.0 * len(by["bymonth"]))
    per_year = days * times
    if by.get("bysetpos"):
        per_year = min(per_year, periods * len(by["bysetpos"]))
    return max(per_year, 1.0) / 365.0


def sized(days: float, per_day: float, most: int) -> float:
    """``days``, shortened (to whole days, at least one) to hold at most ``most``
    occurrences at ``per_day``."""
    if days * per_day <= most:
        return days
    return max(1.0, float(int(most / per_day)))


@dataclass(frozen=True, slots=True)
class Plan:
    """What expanding a stored series takes, read from its row once (``_plan``)."""

    rule: Rule
    times: SeriesTimes  # its ``tz``: the zone the series repeats in (``series.zone_of``)
    tz: tzinfo  # its calendar's: the zone its occurrences are shown in
    length: timedelta | int
    ends: datetime | None
    anchor: datetime
    step: timedelta
    key: tuple[Hashable, ...]
    id: str
    # Its occurrences' event object, but for their ids and times (copied for each).
    template: dict[str, Any]
    longest: timedelta  # how long before a window an occurrence overlapping it may start
    per_day: float  # ``_per_day``

    def shown(self, entry: Entry, event_id: str) -> dict[str, Any]:
        """The public object of one of its occurrences (``event_id``: its id): a copy of
        ``template`` with its own id and times (half the cost of building it)."""
        event = self.template.copy()
        start = entry[3]
        event["id"] = event_id
        event["startsAt"] = start
        event["endsAt"] = entry[4]
        event["originalStartsAt"] = start
        return event


def _plan(values: Sequence[Any], tz: tzinfo, name: str) -> Plan:
    all_day = bool(values[5])
    rule = _rule_of_text(values[10], all_day)
    start, end = from_utc_text(values[3]), from_utc_text(values[4])
    last = None if values[11] is None else from_utc_text(values[11])
    length = length_of(start, end, all_day=all_day, tz=tz)
    per_day = _per_day(rule)
    days = sized(_CHUNK_DAYS[rule.freq] * rule.interval, per_day, _CHUNK_MOST)
    step = min(timedelta(days=days), LATEST - EARLIEST)
    anchor = min(start, *rule.rdates) if rule.rdates and not all_day else start
    own = tz if values[14] is None or all_day else zone(values[14])
    return Plan(
        rule=rule,
        times=SeriesTimes(start, own, last),
        tz=tz,
        length=length,
        ends=None if values[12] is None else from_utc_text(values[12]),
        anchor=anchor,
        step=step,
        key=(values[10], all_day, values[3], values[11], tz, own, str(length)),
        id=values[0],
        template={
            **event_fields(series_row(values), calendar_name=name, tz=tz),
            "recurringEventId": values[0],
            "originalStartsAt": None,
        },
        longest=timedelta(days=length + 1) if isinstance(length, int) else length,
        per_day=per_day,
    )


_T = TypeVar("_T")


class MustExpand(Exception):
    """A page made from memory alone needs a chunk that is not kept (``page_with_series``)."""


def now_or_later(make: Callable[..., _T], *, later: bool) -> _T | Later:
    """``make(may_expand=...)``: at once, expanding what it must, unless ``later``; else from
    kept chunks on the spot (the hot path), or a ``Later`` that expands the series when a
    chunk is not kept (``MustExpand``), to be run off the event loop."""
    if not later:
        return make(may_expand=True)
    try:
        return make(may_expand=False)
    except MustExpand:
        return Later(functools.partial(make, may_expand=True))


class Series:
    """One series of the page: its chunks from where the page starts."""

    def __init__(
        self,
        plan: Plan,
        *,
        since: datetime,
        low: datetime | None,
        high_text: str | None,
        budget: Budget,
        may_expand: bool = True,
    ) -> None:
        self.plan = plan
        self.may_expand = may_expand
        self.id = plan.id
        self.tz = plan.tz
        self.all_day = plan.rule.all_day
        self.rule, self.times, self.length = plan.rule, plan.times, plan.length
        self.ends, self.anchor, self.step, self.key = plan.ends, plan.anchor, plan.step, plan.key
        # Occurrences that overlap the window start at most their length before it.
        if low is not None:
            since = max(since, low - plan.longest)
        self.since = since
        self.floor, self.ceiling = utc_text(since), high_text
        self.first = self.next = max(0, (since - self.anchor) // self.step)
        self.partial: list[Entry] = []
        self.budget = budget
        self.paused: datetime | None = None
        self.done = False

    def entries(self, end: datetime) -> Iterator[Entry]:
        """Its occurrences from its start on and before the window's end, in order, chunk by
        chunk (from the chunk holding the page's start, up to ``end``), as they are asked
        for; stops early when its budget runs out (``paused``: nothing is known past it)."""
        while not self.done and self.paused is None:
            chunk_start = self.anchor + self.next * self.step
            if chunk_start >= end:
                break
            if chunk_start > LATEST or (self.ends is not None and chunk_start >= self.ends):
                self.done = True
                break
            starts, entries = self._chunk(chunk_start)
            first = bisect_left(starts, self.floor)
            last = len(starts) if self.ceiling is None else bisect_left(starts, self.ceiling)
            self.next += 1
            yield from entries[first:last]

    def _chunk(self, chunk_start: datetime) -> Chunk:
        whole = self.whole_chunk(chunk_start, self.next)
        if whole is not None:
            return whole
        entries = self.partial
        if self.paused is not None and self.paused <= self.since:
            # Paused before the page's start: go on from there (never cached), so that the
            # next page starts further on.
            self.paused = None
            entries = self._expand(self.since, chunk_start + self.step)
        return tuple(e[0] for e in entries), tuple(entries)

    def whole_chunk(self, chunk_start: datetime, index: int) -> Chunk | None:
        """Chunk ``index`` (from ``chunk_start``), from memory or expanded whole and kept;
        ``None`` if the budget ran out (``paused``; what was found is ``partial``)."""
        key = (*self.key, index)
        cached = _CHUNKS.get(key)
        if cached is not None:
            return cached
        entries = self._expand(chunk_start, chunk_start + self.step)
        if self.paused is not None:
            self.partial = entries
            return None
        whole = (tuple(e[0] for e in entries), tuple(entries))
        _CHUNKS.put(key, whole, weight=max(len(entries), 1))
        return whole

    def between(self, start: datetime, end: datetime, texts: tuple[str, str]) -> list[Entry] | None:
        """Its occurrences starting in ``[start, end)`` (``texts``: the two as stored text),
        or ``None`` if the budget ran out."""
        found: list[Entry] = []
        index = max(0, (start - self.anchor) // self.step)
        while True:
            chunk_start = self.anchor + index * self.step
            if chunk_start >= end or chunk_start > LATEST:
                return found
            if self.ends is not None and chunk_start >= self.ends:
                return found
            chunk = self.whole_chunk(chunk_start, index)
            if chunk is None:
                return None
            starts, entries = chunk
            found.extend(entries[bisect_left(starts, texts[0]) : bisect_left(starts, texts[1])])
            index += 1

    def restart(self) -> None:
        """From the page's start again, with what is left of its budget."""
        self.next = self.first
        self.paused = None
        self.done = False

    def _expand(self, since: datetime, before: datetime) -> list[Entry]:
        if not self.may_expand:
            raise MustExpand
        entries: list[Entry] = []
        tz, all_day, length = self.tz, self.all_day, self.length
        try:
            for start in expand(
                self.rule, self.times, since=since, before=before, budget=self.budget
            ):
                end = end_of(start, tz, all_day, length)
                entries.append(
                    (
                        utc_text(start),
                        utc_text(end),
                        occurrence_stamp(start, all_day=all_day, tz=tz),
                        format_in(start, tz),
                        format_in(end, tz),
                    )
                )
        except Paused as pause:
            self.paused = pause.at
        return entries

    def shown(self, entry: Entry, event_id: str) -> dict[str, Any]:
        return self.plan.shown(entry, event_id)


def skipped_starts(series_keys: Sequence[Any]) -> dict[str, set[str]]:
    """The original starts of each series' exceptions (changed or cancelled occurrences)."""
    return {k[0]: set(k[5].split(",")) for k in series_keys if k[5] is not None}


class _Plans:
    """Each series' ``Plan`` by its id and version (``updated_at``, which every change of
    the series' row sets) and its calendar's name and zone, kept lately: a series' row is read
    only when a version of it is new to the process."""

    def __init__(self, size: int) -> None:
        self._cache = Lru(size)

    def of(
        self,
        series_keys: Sequence[Any],
        by_calendar: dict[str, tuple[str, tzinfo]],
        load: Callable[[Sequence[str]], list[Any]],
    ) -> tuple[Plan, ...]:
        keys = [(k[0], k[3], *by_calendar[k[1]]) for k in series_keys]
        plans = [self._cache.get(key) for key in keys]
        missing = [key[0] for key, plan in zip(keys, plans, strict=True) if plan is None]
        if missing:
            rows = {values[0]: values for values in load(missing)}
            for i, key in enumerate(keys):
                row = rows.get(key[0])
                if plans[i] is None and row is not None:  # None: deleted meanwhile
                    name, tz = by_calendar[series_keys[i][1]]
                    plan = _plan(row, tz, name)
                    if row[9] == series_keys[i][3]:  # updated_at: the version the list saw
                        self._cache.put(key, plan)
                    plans[i] = plan
        return tuple(p for p in plans if p is not None)


PLANS = _Plans(8192)
