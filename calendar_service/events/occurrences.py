"""The list's occurrences: the series that may occur in the window, expanded only inside it
(from the page token's position on), merged with the window query's rows in
``(startsAt, id)`` order, so that ``limit`` and page tokens work across both as across single
events alone.

Occurrences sort by their start (stored UTC text, as the rows' starts) and their id
(``<seriesId>_<UTC stamp>``). Each series is a lazy stream: only as much of it is expanded as
the page takes. The streams of one request share ``recurrence.READ_BUDGET`` equally (at least
``SHARE_FLOOR`` each); when a stream's share runs out, it ends with a *pause* at the instant
up to which it is complete, and the page ends there, shorter than ``limit``, with a page token
that resumes at that instant (Google Calendar's API returns short pages too). A page token is
``(start, id)``; a pause's has the id ``""``, which sorts before every id, so the next page
starts at the pause's instant.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, tzinfo
from typing import Any

from calendar_service.events.series import length_of, rule_of
from calendar_service.events.shapes import Row, event_public, events_public, occurrence_public
from calendar_service.recurrence import (
    READ_BUDGET,
    Budget,
    Paused,
    SeriesTimes,
    end_of,
    expand,
    occurrence_id,
)
from calendar_service.timeutil import EARLIEST, from_utc_text, utc_text, zone

SHARE_FLOOR = 200
"""Work units each series of a page may spend however many there are (about 100 days of a
daily rule, or 5 years of a yearly one)."""

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
)

# A merged item: (start as stored UTC text, id, kind, what to show).
Item = tuple[str, str, int, Any]
_ROW, _OCCURRENCE, _SERIES, _PAUSE = range(4)


def series_row(values: Sequence[Any]) -> Row:
    """A row of ``queries.series_statement`` with its date-times read (they come as text)."""
    row = dict(zip(_SERIES_NAMES, values, strict=True))
    for name in ("starts_at", "ends_at", "recurrence_last_start"):
        if row[name] is not None:
            row[name] = from_utc_text(row[name])
    return Row(row)


def _stream(
    series: Row,
    *,
    name: str,
    tz: tzinfo,
    low: datetime | None,
    high: datetime | None,
    after: tuple[str, str] | None,
    skip: frozenset[str],
    budget: Budget,
) -> Iterator[Item]:
    """One series' occurrences in the window and after the token, in order; a pause last if
    the budget runs out."""
    all_day = bool(series.all_day)
    length = length_of(series.starts_at, series.ends_at, all_day=all_day, tz=tz)
    since = EARLIEST
    if low is not None:
        longest = timedelta(days=length + 1) if isinstance(length, int) else length
        since = max(since, low - longest)
    if after is not None:
        since = max(since, from_utc_text(after[0]))
    times = SeriesTimes(series.starts_at, tz, series.recurrence_last_start)
    starts = expand(rule_of(series), times, since=since, before=high, budget=budget)
    try:
        for start in starts:
            end = end_of(start, tz, all_day, length)
            if low is not None and not (end > low or start >= low):
                continue
            text = utc_text(start)
            if text in skip:  # changed (a row of its own) or cancelled
                continue
            event_id = occurrence_id(series.id, start, all_day=all_day, tz=tz)
            if after is not None and (text, event_id) <= after:
                continue
            yield text, event_id, _OCCURRENCE, (series, name, tz, event_id, start, end)
    except Paused as pause:
        yield utc_text(pause.at), "", _PAUSE, None


def page_with_series(
    rows: Sequence[Any],
    series_rows: Sequence[Any],
    exceptions: Sequence[Any],
    calendars: Sequence[Any],
    *,
    low: datetime | None,
    high: datetime | None,
    after: tuple[str, str] | None,
    size: int,
    single_events: bool,
) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """The page (events) and where the next one starts (``(start text, id)``, or ``None``)
    from the window query's ``rows`` (at most ``size + 1``), the candidate series and their
    exceptions' original starts. ``single_events=False``: the series themselves."""
    by_calendar = {c.id: (c.name, zone(c.time_zone)) for c in calendars}
    streams: list[Iterator[Item]] = [iter([(r[3], r[0], _ROW, r) for r in rows])]
    if single_events:
        skipped: dict[str, set[str]] = {}
        for series_id, original in exceptions:
            skipped.setdefault(series_id, set()).add(original)
        # Each series gets an equal share, so that a few sparse series cannot starve the
        # others: every stream moves on by its share on every page.
        share = max(READ_BUDGET // len(series_rows), SHARE_FLOOR)
        for values in series_rows:
            series = series_row(values)
            name, tz = by_calendar[series.calendar_id]
            streams.append(
                _stream(
                    series,
                    name=name,
                    tz=tz,
                    low=low,
                    high=high,
                    after=after,
                    skip=frozenset(skipped.get(series.id, ())),
                    budget=Budget(share),
                )
            )
    else:
        whole = [(v[3], v[0], _SERIES, series_row(v)) for v in series_rows]
        streams.append(iter([w for w in whole if after is None or (w[0], w[1]) > after]))
    taken: list[Item] = []
    pause: Item | None = None
    for item in heapq.merge(*streams, key=lambda item: (item[0], item[1])):
        if item[2] == _PAUSE:
            pause = item
            break
        taken.append(item)
        if len(taken) > size:
            break
    following: tuple[str, str] | None = None
    if len(taken) > size:
        taken = taken[:size]
        following = (taken[-1][0], taken[-1][1])
    elif pause is not None:
        following = (pause[0], "")
    return _shown(taken, calendars, by_calendar), following


def _shown(
    taken: Sequence[Item], calendars: Sequence[Any], by_calendar: dict[str, tuple[str, tzinfo]]
) -> list[dict[str, Any]]:
    """The public events of a page's items, in order: the rows formatted all at once."""
    singles = iter(events_public([i[3] for i in taken if i[2] == _ROW], calendars))
    events = []
    for _, _, kind, shown in taken:
        if kind == _ROW:
            events.append(next(singles))
        elif kind == _SERIES:
            name, tz = by_calendar[shown.calendar_id]
            events.append(event_public(shown, calendar_name=name, tz=tz))
        else:
            series, name, tz, event_id, start, end = shown
            events.append(
                occurrence_public(
                    series, calendar_name=name, tz=tz, event_id=event_id, span=(start, end)
                )
            )
    return events
