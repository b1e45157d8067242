"""The list's occurrences: the series that may occur in the window, expanded only inside it
(from the page token's position on), merged with the window query's rows in
``(startsAt, id)`` order, so that ``limit`` and page tokens work across both as across single
events alone.

Occurrences sort by their start (stored UTC text, as the rows' starts) and their id
(``<seriesId>_<UTC stamp>``).

Each series is expanded a *chunk* at a time: a stretch of time from its start (28 days of a
daily rule, 16 weeks of a weekly one, 2 years of a monthly one, 12 years of a yearly one,
times its INTERVAL; shorter for a dense rule, to hold at most ``_CHUNK_MOST`` occurrences by
``_per_day``'s estimate). A chunk's occurrences, with their shown times, are a pure function of
the series as stored, its calendar's zone and the chunk, so they are kept in a bounded LRU
(``_CHUNKS``, bounded in occurrences too) shared by the process's requests: a list of a
calendar with a thousand weekly series reads them from memory, not from dateutil. The page is
read from merged chunks (every series of the page over a stretch, in order) from where the page
starts, or the earliest series does; failing that (a budget ran out, or the series are sparse),
series by series, merged in order (a heap), each read a chunk at a time only as far as the page
needs it.

Bounded work: the series of one request share ``recurrence.READ_BUDGET`` equally (at least
``SHARE_FLOOR`` each); chunks read from memory cost nothing. When a series' share runs out,
it *pauses* at the instant up to which it is complete, and the page ends there, shorter than
``limit``, with a page token that resumes at that instant (Google Calendar's API returns
short pages too). A page token is ``(start, id)``; a pause's has the id ``""``, which sorts
before every id, so the next page starts at the pause's instant, and every page moves on.
A page that needs chunks not kept is a ``later.Later`` for the fronts (made on a thread, after
the transaction); one read from memory is made at once.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import operator
import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from operator import itemgetter
from typing import Any

import orjson

from calendar_service.events.memo import Lru
from calendar_service.events.series import length_of
from calendar_service.events.shapes import (
    Prepared,
    Row,
    event_fields,
    event_public,
    events_public,
)
from calendar_service.later import Later
from calendar_service.recurrence import (
    READ_BUDGET,
    Budget,
    Paused,
    Rule,
    SeriesTimes,
    end_of,
    expand,
    occurrence_stamp,
    stored_rule,
)
from calendar_service.timeutil import EARLIEST, LATEST, format_in, from_utc_text, utc_text, zone

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
_MERGED_EACH = 512
"""Occurrences a merged chunk is made to hold at most (by the same estimate)."""
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
# A merged item: (start as stored UTC text, id, kind, what to show). Items sort as tuples, in
# ``(start, id)`` order (twice as fast as with a key): no two items of a page have the same
# start and id (ids are unique, and an occurrence with a row of its own is skipped), so the
# comparison never reaches what to show.
Item = tuple[str, str, int, Any]
_ROW, _OCCURRENCE, _SERIES = range(3)
_ROW_KEY = itemgetter(3, 0)  # a window row's (start, id)
_ROW_START = itemgetter(3)
_ITEM_START = itemgetter(0)
_SHOWN = itemgetter(3)  # an occurrence item's object (``shapes.Prepared``)
_AFTER_ALL = "~"  # sorts after every stored UTC text
_ID_VERSION = itemgetter(0, 3)
Page = tuple[list[dict[str, Any]], tuple[str, str] | None]
"""A page's events and where the next one starts (``(start text, id)``, or ``None``)."""


# Only whole chunks are kept (never one cut short by a budget), keyed by everything they are
# computed from: a key always gives the same value, whichever request computed it, and a rerun
# of an operation finds what it made.
_CHUNKS = Lru(_CHUNKS_KEPT, most_weight=_CHUNKS_KEPT_MOST)
_MERGED = timedelta(days=28)
_MERGED_MOST = 24
"""Merged chunks one page reads at the most before it goes series by series."""
_MERGED_KEPT_MOST = 100_000
"""Occurrences the merged chunks keep at most in all (each with its object and JSON: about
1 KB)."""
_MERGED_CHUNKS: Lru = Lru(4096, most_weight=_MERGED_KEPT_MOST)


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


def _sized(days: float, per_day: float, most: int) -> float:
    """``days``, shortened (to whole days, at least one) to hold at most ``most``
    occurrences at ``per_day``."""
    if days * per_day <= most:
        return days
    return max(1.0, float(int(most / per_day)))


@dataclass(frozen=True, slots=True)
class _Plan:
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


def _plan(values: Sequence[Any], tz: tzinfo, name: str) -> _Plan:
    all_day = bool(values[5])
    rule = _rule_of_text(values[10], all_day)
    start, end = from_utc_text(values[3]), from_utc_text(values[4])
    last = None if values[11] is None else from_utc_text(values[11])
    length = length_of(start, end, all_day=all_day, tz=tz)
    per_day = _per_day(rule)
    days = _sized(_CHUNK_DAYS[rule.freq] * rule.interval, per_day, _CHUNK_MOST)
    step = min(timedelta(days=days), LATEST - EARLIEST)
    anchor = min(start, *rule.rdates) if rule.rdates and not all_day else start
    own = tz if values[14] is None or all_day else zone(values[14])
    return _Plan(
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


class _MustExpand(Exception):
    """A page made from memory alone needs a chunk that is not kept (``page_with_series``)."""


class _Series:
    """One series of the page: its chunks from where the page starts."""

    def __init__(
        self,
        plan: _Plan,
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
        self._partial: list[Entry] = []
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
        whole = self._whole_chunk(chunk_start, self.next)
        if whole is not None:
            return whole
        entries = self._partial
        if self.paused is not None and self.paused <= self.since:
            # Paused before the page's start: go on from there (never cached), so that the
            # next page starts further on.
            self.paused = None
            entries = self._expand(self.since, chunk_start + self.step)
        return tuple(e[0] for e in entries), tuple(entries)

    def _whole_chunk(self, chunk_start: datetime, index: int) -> Chunk | None:
        """Chunk ``index`` (from ``chunk_start``), from memory or expanded whole and kept;
        ``None`` if the budget ran out (``paused``; what was found is ``_partial``)."""
        key = (*self.key, index)
        cached = _CHUNKS.get(key)
        if cached is not None:
            return cached
        entries = self._expand(chunk_start, chunk_start + self.step)
        if self.paused is not None:
            self._partial = entries
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
            chunk = self._whole_chunk(chunk_start, index)
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
            raise _MustExpand
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


def page_with_series(
    rows: Sequence[Any],
    series_keys: Sequence[Any],
    calendars: Sequence[Any],
    *,
    load: Callable[[Sequence[str]], list[Any]],
    low: datetime | None,
    high: datetime | None,
    texts: tuple[str | None, str | None],
    after: tuple[str, str] | None,
    size: int,
    single_events: bool,
    later: bool = False,
) -> Page | Later:
    """The page (events) and where the next one starts (``(start text, id)``, or ``None``)
    from the window query's ``rows`` (at most ``size + 1``) and the candidate series
    (``queries.SERIES_KEYS``, with their exceptions' original starts); ``load`` reads series'
    rows by id (``queries.series_rows``), for versions of them new to the process.
    ``texts``: ``low`` and ``high`` as stored text. ``single_events=False``: the series
    themselves.

    ``later``: a page that needs series expanded (chunks not kept) is returned as a ``Later``
    that makes it without the database, to be run off the event loop; a page read from
    memory is made at once."""
    by_calendar = {c.id: (c.name, zone(c.time_zone)) for c in calendars}
    if not single_events:
        items: list[Item] = [(r[3], r[0], _ROW, r) for r in rows]
        wanted = [k[0] for k in series_keys if after is None or (k[2], k[0]) > after]
        for values in load(wanted):
            items.append((values[3], values[0], _SERIES, series_row(values)))
        items.sort()  # (start, id) order: see Item
        return _page(items, None, size, calendars, by_calendar)
    found_set, skipped = _SETS.plans(series_keys, by_calendar, load)
    page = functools.partial(
        _occurrence_page,
        rows,
        found_set,
        skipped,
        calendars,
        by_calendar,
        low=low,
        high=high,
        texts=texts,
        after=after,
        size=size,
    )
    if not later:
        return page(may_expand=True)
    try:  # from memory, on the spot: the hot path
        return page(may_expand=False)
    except _MustExpand:
        return Later(functools.partial(page, may_expand=True))


def _occurrence_page(
    rows: Sequence[Any],
    found_set: _Set,
    skipped: dict[str, set[str]],
    calendars: Sequence[Any],
    by_calendar: dict[str, tuple[str, tzinfo]],
    *,
    low: datetime | None,
    high: datetime | None,
    texts: tuple[str | None, str | None],
    after: tuple[str, str] | None,
    size: int,
    may_expand: bool,
) -> Page:
    """``page_with_series``' page of occurrences, once the series' plans are known (no
    database); ``may_expand=False``: from kept chunks only (``_MustExpand`` otherwise)."""
    # Where the page starts: its token's start (an occurrence overlapping ``low`` may start
    # before it: each series looks back by its own length, ``_Series``).
    since = max(EARLIEST, from_utc_text(after[0]) if after else EARLIEST)
    low_text, high_text = texts
    end = high or LATEST + timedelta(days=1)
    plans = found_set.plans
    row_starts = list(map(_ROW_START, rows))  # in the rows' (start, id) order
    if not plans:  # every candidate series was deleted meanwhile
        return _merged_page(rows, row_starts, [], size, calendars)
    # Each series gets an equal share, so that a few sparse series cannot starve the others.
    share = max(READ_BUDGET // len(plans), SHARE_FLOOR)
    made: list[_Series] = []

    def series_of_page() -> list[_Series]:
        if not made:
            made.extend(
                _Series(
                    p,
                    since=since,
                    low=low,
                    high_text=high_text,
                    budget=Budget(share),
                    may_expand=may_expand,
                )
                for p in plans
            )
        return made

    floor = since if low is None else max(since, low - found_set.longest)
    merged = _from_merged_chunks(
        found_set,
        series_of_page,
        row_starts=row_starts,
        skipped=skipped,
        floor=floor,
        texts=(low_text, high_text or utc_text(end)),
        after=after,
        end=end,
        size=size,
    )
    if merged is not None:
        return _merged_page(rows, row_starts, merged, size, calendars)
    # The budget ran out, or the window is sparse: series by series, merged in order, each
    # read as far as the page needs it.
    series = series_of_page()
    for s in series:
        s.restart()
    row_keys = [(r[3], r[0]) for r in rows]
    items: list[Item] = [(r[3], r[0], _ROW, r) for r in rows]
    taken = 0
    pause: datetime | None = None
    pause_text = _AFTER_ALL
    heads: list[tuple[str, str, int, Entry, Iterator[Item]]] = []

    def push(number: int, found: Iterator[Item]) -> None:
        nonlocal pause, pause_text
        item = next(found, None)
        if item is not None:
            heapq.heappush(heads, (item[0], item[1], number, item[3], found))
            return
        paused = series[number].paused
        if paused is not None and (pause is None or paused < pause):
            pause, pause_text = paused, utc_text(paused)

    for number, s in enumerate(series):
        push(number, _occurrence_items(s, end, low_text, skipped.get(s.id, ()), after))
    while heads:
        start_text, event_id, number, shown, found = heads[0]
        if start_text >= pause_text:  # nothing is known past a pause
            break
        # Rows and occurrences before it fill the page (and the one after it): it is not on it.
        if taken + bisect_left(row_keys, (start_text, event_id)) > size:
            break
        heapq.heappop(heads)
        items.append((start_text, event_id, _OCCURRENCE, shown))
        taken += 1
        push(number, found)
    if pause is not None:  # nothing is known past it
        items = [item for item in items if item[0] < pause_text]
    items.sort()  # (start, id) order: see Item
    return _page(items, pause, size, calendars, by_calendar)


def _occurrence_items(
    s: _Series,
    end: datetime,
    low_text: str | None,
    skip: Collection[str],
    after: tuple[str, str] | None,
) -> Iterator[Item]:
    """The page's items of one series, in ``(start, id)`` order: its occurrences that overlap
    the window, but for its changed and cancelled ones, after the page token's position."""
    for entry in s.entries(end):
        start_text = entry[0]
        if low_text is not None and not (entry[1] > low_text or start_text >= low_text):
            continue
        if start_text in skip:  # changed (a row of its own) or cancelled
            continue
        event_id = f"{s.id}_{entry[2]}"
        if after is not None and (start_text, event_id) <= after:
            continue
        yield (start_text, event_id, _OCCURRENCE, (s, entry))


def _from_merged_chunks(
    found_set: _Set,
    series_of_page: Callable[[], list[_Series]],
    *,
    row_starts: list[str],
    skipped: dict[str, set[str]],
    floor: datetime,
    texts: tuple[str | None, str],
    after: tuple[str, str] | None,
    end: datetime,
    size: int,
) -> list[Item] | None:
    """The page's occurrences read from merged chunks (``_merged_chunk``): the occurrences of
    all the page's series in a stretch of ``_MERGED``, in order, kept in memory for the same
    set of series. ``None`` when a series' budget ran out or the occurrences are too sparse
    for ``_MERGED_MOST`` merged chunks to fill the page: the caller goes series by series.

    A chunk's occurrences in the window are found by searching its starts (from ``floor``,
    the earliest start that may overlap the window, to the window's end: ``texts`` holds
    the window's start, or ``None``, and end as stored text) and taken as a slice; those that
    start before the window are taken only if they end in it. Reading stops at ``size + 1``:
    merged with the rows, a later occurrence could not be on the page."""
    found: list[Item] = []
    # Nothing of the set occurs before its first series starts: the search starts there.
    step = found_set.merged
    index = (max(floor, found_set.first) - EARLIEST) // step
    low_text, ceiling = texts
    floor_text = utc_text(floor)
    for _ in range(_MERGED_MOST):
        if EARLIEST + index * step >= end:
            return found
        merged = _merged_chunk(series_of_page, found_set.token, index, step)
        if merged is None:
            return None
        starts, ends, entries, reached_text = merged
        first = bisect_left(starts, floor_text)
        last = bisect_left(starts, ceiling, first)
        if low_text is not None and first < last and starts[first] < low_text:
            inside = bisect_left(starts, low_text, first, last)
            taken = [entries[i] for i in range(first, inside) if ends[i] > low_text]
            taken.extend(entries[inside:last])
        else:
            taken = list(entries[first:last])
        if skipped or after is not None:
            taken = [item for item in taken if _kept(item, skipped, after)]
        found.extend(taken)
        if len(found) > size or last < len(starts):  # the page is full, or the window ends
            return found
        index += 1
        known = len(found) + bisect_left(row_starts, reached_text)  # rows before it
        if known > size or (found_set.ends is not None and reached_text >= found_set.ends):
            return found
    return None


def _kept(item: Item, skipped: dict[str, set[str]], after: tuple[str, str] | None) -> bool:
    """Not a changed or cancelled occurrence (a row of its own, or none), and after the
    page token's position."""
    if item[0] in skipped.get(item[3]["recurringEventId"], ()):
        return False
    return after is None or (item[0], item[1]) > after


# A merged chunk: its occurrences' starts and ends (to search), the occurrences as the page
# takes them, and where the chunk ends (stored text).
MergedChunk = tuple[tuple[str, ...], tuple[str, ...], tuple[Item, ...], str]


def _merged_chunk(
    series_of_page: Callable[[], list[_Series]], token: int, index: int, step: timedelta
) -> MergedChunk | None:
    """Every occurrence of the page's series starting in merged chunk ``index``, in
    ``(start, id)`` order; ``None`` if a budget ran out (and nothing is kept)."""
    key = (token, index)
    cached = _MERGED_CHUNKS.get(key)
    if cached is not None:
        return cached
    start = EARLIEST + index * step
    texts = (utc_text(start), utc_text(start + step))
    merged: list[tuple[Item, str]] = []
    for s in series_of_page():
        entries = s.between(start, start + step, texts)
        if entries is None:
            return None
        for e in entries:
            event_id = f"{s.id}_{e[2]}"
            shown = Prepared(s.plan.shown(e, event_id))
            merged.append(((e[0], event_id, _OCCURRENCE, shown), e[1]))
    merged.sort(key=lambda m: (m[0][0], m[0][1]))
    whole = (
        tuple(m[0][0] for m in merged),
        tuple(m[1] for m in merged),
        tuple(m[0] for m in merged),
        texts[1],
    )
    _MERGED_CHUNKS.put(key, whole, weight=len(merged))
    return whole


@dataclass(frozen=True, slots=True)
class _Set:
    """A set of series seen lately: its number (merged chunks are kept by it), the series'
    plans, the longest of them, and when the last of them ends (stored text; ``None`` if one
    never does)."""

    token: int
    plans: tuple[_Plan, ...]
    longest: timedelta
    ends: str | None
    first: datetime  # no occurrence of the set starts before it (its earliest series' start)
    merged: timedelta  # the length of its merged chunks (``_MERGED``, shorter when dense)


def _skipped(series_keys: Sequence[Any]) -> dict[str, set[str]]:
    """The original starts of each series' exceptions (changed or cancelled occurrences)."""
    return {k[0]: set(k[5].split(",")) for k in series_keys if k[5] is not None}


class _SetTokens:
    """A small number, and the plans, for each set of series (their rows as stored, their
    calendars' names and zones) seen lately: merged chunks are keyed by the number, so the
    rows are hashed once a page, not once a chunk. A calendar's series as kept
    (``queries.window_series`` gives the same tuple each time) are not even hashed: they are
    known by identity, and their exceptions (``_skipped``) with them."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._sets: OrderedDict[Hashable, _Set] = OrderedDict()
        # id(the kept tuple) -> (the tuple, calendars, its set, its exceptions)
        self._kept: OrderedDict[int, tuple[Any, Hashable, _Set, dict[str, set[str]]]]
        self._kept = OrderedDict()
        self._next = itertools.count()
        self._lock = threading.Lock()

    def plans(
        self,
        series_keys: Sequence[Any],
        by_calendar: dict[str, tuple[str, tzinfo]],
        load: Callable[[Sequence[str]], list[Any]],
    ) -> tuple[_Set, dict[str, set[str]]]:
        """The set of ``series_keys`` (their calendars: ``by_calendar``), and the original
        starts of their exceptions by series id (``_skipped``); both shared, read-only."""
        calendars = tuple(by_calendar.items())
        kept = type(series_keys) is tuple
        if kept:
            with self._lock:
                seen = self._kept.get(id(series_keys))
            # The entry holds the tuple: while it is kept, no other object has its id.
            if seen is not None and seen[0] is series_keys and seen[1] == calendars:
                return seen[2], seen[3]
        found = self._set(series_keys, by_calendar, calendars, load)
        skipped = _skipped(series_keys)
        if kept:
            with self._lock:
                self._kept[id(series_keys)] = (series_keys, calendars, found, skipped)
                if len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        return found, skipped

    def _set(
        self,
        series_keys: Sequence[Any],
        by_calendar: dict[str, tuple[str, tzinfo]],
        calendars: Hashable,
        load: Callable[[Sequence[str]], list[Any]],
    ) -> _Set:
        # Each series' id and version, and the calendars' names and zones (a series' calendar
        # changes only with its version).
        key = (tuple(map(_ID_VERSION, series_keys)), calendars)
        with self._lock:
            found = self._sets.get(key)
            if found is not None:
                self._sets.move_to_end(key)
                return found
        plans = _PLANS.of(series_keys, by_calendar, load)
        ends = [p.ends for p in plans if p.ends is not None]
        last = utc_text(min(max(ends), LATEST)) if plans and len(ends) == len(plans) else None
        longest = max((p.longest for p in plans), default=timedelta(0))
        with self._lock:
            found = self._sets[key] = _Set(
                next(self._next),
                plans,
                longest,
                last,
                min((p.anchor for p in plans), default=EARLIEST),
                timedelta(days=_sized(_MERGED.days, sum(p.per_day for p in plans), _MERGED_EACH)),
            )
            if len(self._sets) > self._size:
                self._sets.popitem(last=False)
        return found


class _Plans:
    """Each series' ``_Plan`` by its id and version (``updated_at``, which every change of
    the series' row sets) and its calendar's name and zone, kept lately: a series' row is read
    only when a version of it is new to the process."""

    def __init__(self, size: int) -> None:
        self._cache = Lru(size)

    def of(
        self,
        series_keys: Sequence[Any],
        by_calendar: dict[str, tuple[str, tzinfo]],
        load: Callable[[Sequence[str]], list[Any]],
    ) -> tuple[_Plan, ...]:
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


_PLANS = _Plans(8192)


_SETS = _SetTokens(4096)


def _merged_page(
    rows: Sequence[Any],
    row_starts: list[str],
    occurrences: list[Item],
    size: int,
    calendars: Sequence[Any],
) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """``_page`` for rows and occurrences each in ``(start, id)`` order already: each
    occurrence's place among the rows is found by binary search of the rows' starts (and,
    where a row starts at the same instant, of their ``(start, id)``), and the occurrences'
    kept objects (``shapes.Prepared``) are put in among the rows' (no item per row, no sort)."""
    # For each occurrence, how many rows come before it.
    starts = list(map(_ITEM_START, occurrences))
    places = list(map(bisect_left, itertools.repeat(row_starts, len(starts)), starts))
    # Where an occurrence starts with rows, those with a lower id come before it.
    starts_then_end = [*row_starts, _AFTER_ALL]
    tied = list(map(operator.eq, map(starts_then_end.__getitem__, places), starts))
    if True in tied:
        for i in itertools.compress(range(len(places)), tied):
            place, event_id = places[i], occurrences[i][1]
            while starts_then_end[place] == starts[i] and rows[place][0] < event_id:
                place += 1
            places[i] = place
    if len(rows) + len(occurrences) > size + 1:  # keep those among the first size + 1
        kept = 0
        while kept < len(places) and places[kept] + kept <= size:
            kept += 1
        del places[kept:]
    rows_taken = min(len(rows), size + 1 - len(places))
    events = events_public(rows[:rows_taken], calendars)
    # Occurrence k goes in after its rows and the k occurrences before it, in order.
    at = map(operator.add, places, itertools.count())
    list(map(events.insert, at, map(_SHOWN, occurrences[: len(places)])))
    if len(events) <= size:
        return events, None
    # The page's last event, at ``size - 1``: an occurrence, or a row after ``before`` of them.
    before = 0
    for taken, place in enumerate(places):
        if place + taken == size - 1:
            return events[:size], (occurrences[taken][0], occurrences[taken][1])
        if place + taken > size - 1:
            break
        before += 1
    row = rows[size - 1 - before]
    return events[:size], (row[3], row[0])


def _page(
    items: list[Item],
    pause: datetime | None,
    size: int,
    calendars: Sequence[Any],
    by_calendar: dict[str, tuple[str, tzinfo]],
) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    taken = items[: size + 1]
    following: tuple[str, str] | None = None
    if len(taken) > size:
        taken = taken[:size]
        following = (taken[-1][0], taken[-1][1])
    elif pause is not None:
        following = (utc_text(pause), "")
    singles = events_public([i[3] for i in taken if i[2] == _ROW], calendars)
    if len(singles) == len(taken):
        return singles, following
    single = iter(singles).__next__
    events = [
        single()
        if kind == _ROW
        else shown[0].shown(shown[1], event_id)
        if kind == _OCCURRENCE
        else _series_public(shown, by_calendar)
        for _, event_id, kind, shown in taken
    ]
    return events, following


def _series_public(row: Row, by_calendar: dict[str, tuple[str, tzinfo]]) -> dict[str, Any]:
    name, tz = by_calendar[row.calendar_id]
    return event_public(row, calendar_name=name, tz=tz)


BusyEntry = tuple[str, str, str, str, str]
"""An occurrence that takes time: its calendar's id, start and end (stored UTC text), id and
title."""


def busy_occurrences(
    series_keys: Sequence[Any],
    calendars: Sequence[Any],
    *,
    load: Callable[[Sequence[str]], list[Any]],
    low: datetime,
    high: datetime,
    budget: int,
    later: bool = False,
) -> list[BusyEntry] | Later:
    """Every occurrence of the opaque series among ``series_keys`` (``queries.SERIES_KEYS``)
    that overlaps ``[low, high)``, in no order and without paging (for
    ``calendar_service.availability``), read through the same chunk cache as the list. The
    original starts of a series' exceptions are left out: a changed occurrence is a row of
    the window query, a cancelled one takes no time.

    The series share ``budget`` equally (at least ``SHARE_FLOOR`` each); a series whose
    share runs out is busy from the instant it paused at to ``high``: time that may be taken
    is never shown as free. ``later``: when series must be expanded (chunks not kept), a
    ``Later`` that finds them without the database (as ``page_with_series``)."""
    by_calendar = {c.id: (c.name, zone(c.time_zone)) for c in calendars}
    plans = [
        p
        for p in _PLANS.of(series_keys, by_calendar, load)
        if p.template["transparency"] == "opaque"
    ]
    if not plans:
        return []
    found = functools.partial(
        _busy_entries, plans, _skipped(series_keys), low=low, high=high, budget=budget
    )
    if not later:
        return found(may_expand=True)
    try:
        return found(may_expand=False)
    except _MustExpand:
        return Later(functools.partial(found, may_expand=True))


def _busy_entries(
    plans: list[_Plan],
    skipped: dict[str, set[str]],
    *,
    low: datetime,
    high: datetime,
    budget: int,
    may_expand: bool,
) -> list[BusyEntry]:
    """``busy_occurrences`` once the plans are known (no database)."""
    share = max(budget // len(plans), SHARE_FLOOR)
    low_text, high_text = utc_text(low), utc_text(high)
    found: list[BusyEntry] = []
    for plan in plans:
        calendar_id, title = plan.template["calendarId"], plan.template["title"]
        skip = skipped.get(plan.id, ())
        series = _Series(
            plan,
            since=EARLIEST,
            low=None,
            high_text=None,
            budget=Budget(share),
            may_expand=may_expand,
        )
        first = max(low - plan.longest, EARLIEST)
        first_text = utc_text(first)
        index = max(0, (first - plan.anchor) // plan.step)
        while True:
            chunk_start = plan.anchor + index * plan.step
            if chunk_start >= high or chunk_start > LATEST:
                break
            if plan.ends is not None and chunk_start >= plan.ends:
                break
            chunk = series._whole_chunk(chunk_start, index)
            entries = series._partial if chunk is None else chunk[1]
            for entry in entries:
                start_text, end_text = entry[0], entry[1]
                if start_text < first_text or start_text >= high_text or end_text <= low_text:
                    continue
                if start_text not in skip:
                    found.append(
                        (calendar_id, start_text, end_text, f"{plan.id}_{entry[2]}", title)
                    )
            if chunk is None:
                paused = series.paused or low
                found.append((calendar_id, utc_text(max(paused, low)), high_text, plan.id, title))
                break
            index += 1
    return found
