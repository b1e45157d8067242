"""The list's occurrences: the series that may occur in the window, expanded only inside it
(from the page token's position on, a chunk at a time: ``events.chunks``), merged with the
window query's rows in ``(startsAt, id)`` order, so that ``limit`` and page tokens work across
both as across single events alone.

Occurrences sort by their start (stored UTC text, as the rows' starts) and their id
(``<seriesId>_<UTC stamp>``).

The page is read from merged chunks (every series of the page over a stretch, in order, kept
for the same set of series) from where the page starts, or the earliest series does; failing
that (a budget ran out, or the series are sparse), series by series, merged in order (a
heap), each read a chunk at a time only as far as the page needs it.

Bounded work: the series of one request share ``recurrence.READ_BUDGET`` equally (at least
``chunks.SHARE_FLOOR`` each). When a series' share runs out, it *pauses* at the instant up
to which it is complete, and the page ends there, shorter than ``limit``, with a page token
that resumes at that instant (Google Calendar's API returns short pages too). A page token is
``(start, id)``; a pause's has the id ``""``, which sorts before every id, so the next page
starts at the pause's instant, and every page moves on. A page that needs chunks not kept is a
``later.Later`` for the fronts (made on a thread, after the transaction); one read from memory
is made at once.
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

from calendar_service.calendar.events.chunks import (
    PLANS,
    SHARE_FLOOR,
    Entry,
    Plan,
    Series,
    now_or_later,
    series_row,
    sized,
    skipped_starts,
)
from calendar_service.calendar.events.shapes import Prepared, Row, event_public, events_public
from calendar_service.calendar.recurrence import READ_BUDGET, Budget
from calendar_service.platform.deferred import Later
from calendar_service.platform.lru import Lru
from calendar_service.platform.timeutil import EARLIEST, LATEST, from_utc_text, utc_text, zone

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


_MERGED = timedelta(days=28)
_MERGED_EACH = 512
"""Occurrences a merged chunk is made to hold at most (by ``chunks``' estimate of a rule's
occurrences a day)."""
_MERGED_MOST = 24
"""Merged chunks one page reads at the most before it goes series by series."""
_MERGED_KEPT_MOST = 100_000
"""Occurrences the merged chunks keep at most in all (each with its object and JSON: about
1 KB)."""
_MERGED_CHUNKS: Lru = Lru(4096, most_weight=_MERGED_KEPT_MOST)


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
    return now_or_later(page, later=later)


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
    database); ``may_expand=False``: from kept chunks only (``MustExpand`` otherwise)."""
    # Where the page starts: its token's start (an occurrence overlapping ``low`` may start
    # before it: each series looks back by its own length, ``Series``).
    since = max(EARLIEST, from_utc_text(after[0]) if after else EARLIEST)
    low_text, high_text = texts
    end = high or LATEST + timedelta(days=1)
    plans = found_set.plans
    row_starts = list(map(_ROW_START, rows))  # in the rows' (start, id) order
    if not plans:  # every candidate series was deleted meanwhile
        return _merged_page(rows, row_starts, [], size, calendars)
    # Each series gets an equal share, so that a few sparse series cannot starve the others.
    share = max(READ_BUDGET // len(plans), SHARE_FLOOR)
    made: list[Series] = []

    def series_of_page() -> list[Series]:
        if not made:
            made.extend(
                Series(
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
    # The budget ran out, or the window is sparse: series by series.
    series = series_of_page()
    for s in series:
        s.restart()
    return _series_by_series(
        rows,
        series,
        skipped,
        calendars,
        by_calendar,
        end=end,
        low_text=low_text,
        after=after,
        size=size,
    )


def _series_by_series(
    rows: Sequence[Any],
    series: list[Series],
    skipped: dict[str, set[str]],
    calendars: Sequence[Any],
    by_calendar: dict[str, tuple[str, tzinfo]],
    *,
    end: datetime,
    low_text: str | None,
    after: tuple[str, str] | None,
    size: int,
) -> Page:
    """``_occurrence_page``'s page series by series, merged in order (a heap), each read as
    far as the page needs it; the page ends at the earliest pause."""
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
    s: Series,
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
    series_of_page: Callable[[], list[Series]],
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
    series_of_page: Callable[[], list[Series]], token: int, index: int, step: timedelta
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
    plans: tuple[Plan, ...]
    longest: timedelta
    ends: str | None
    first: datetime  # no occurrence of the set starts before it (its earliest series' start)
    merged: timedelta  # the length of its merged chunks (``_MERGED``, shorter when dense)


class _SetTokens:
    """A small number, and the plans, for each set of series (their rows as stored, their
    calendars' names and zones) seen lately: merged chunks are keyed by the number, so the
    rows are hashed once a page, not once a chunk. A calendar's series as kept
    (``queries.window_series`` gives the same tuple each time) are not even hashed: they are
    known by identity, and their exceptions (``skipped_starts``) with them."""

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
        starts of their exceptions by series id (``skipped_starts``); both shared, read-only."""
        calendars = tuple(by_calendar.items())
        kept = type(series_keys) is tuple
        if kept:
            with self._lock:
                seen = self._kept.get(id(series_keys))
            # The entry holds the tuple: while it is kept, no other object has its id.
            if seen is not None and seen[0] is series_keys and seen[1] == calendars:
                return seen[2], seen[3]
        found = self._set(series_keys, by_calendar, calendars, load)
        skipped = skipped_starts(series_keys)
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
        plans = PLANS.of(series_keys, by_calendar, load)
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
                timedelta(days=sized(_MERGED.days, sum(p.per_day for p in plans), _MERGED_EACH)),
            )
            if len(self._sets) > self._size:
                self._sets.popitem(last=False)
        return found


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
