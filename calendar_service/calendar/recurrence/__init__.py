"""Recurring events (RFC 5545): rules read and checked, occurrences computed, occurrence ids.

Pure: no database, no I/O. A series is stored once, with its ``recurrence`` lines (one
``RRULE``, any ``EXDATE``/``RDATE``); its occurrences are computed here, never stored.

- ``rules``: ``parse_recurrence`` reads what a caller sent into a ``Rule`` (400s naming
  ``recurrence``, saying what is wrong) with the normalized lines that are stored and shown;
- ``expansion``: ``expand`` yields a series' occurrence starts in time order from an instant
  on, within a work ``Budget``; ``summarize`` is what a write stores beside the rule (where
  the series ends), after checking that the rule occurs at all;
- ``ids``: ``<seriesId>_<YYYYMMDDTHHMMSSZ>``, ``<seriesId>_<YYYYMMDD>`` for all-day series.

As in RFC 5545, a series' start (DTSTART) is always its first occurrence, and ``COUNT``
counts it. This package re-exports what the events core uses.
"""

from __future__ import annotations

from collections.abc import Sequence

from calendar_service.calendar.recurrence.expansion import (
    READ_BUDGET,
    READ_MOST_INSTANCES,
    READ_MOST_PERIODS,
    WRITE_BUDGET,
    Budget,
    Paused,
    SeriesTimes,
    Summary,
    Work,
    count_before,
    end_of,
    expand,
    measured,
    occurs_at,
    summarize,
)
from calendar_service.calendar.recurrence.ids import (
    occurrence_id,
    occurrence_stamp,
    original_of,
    split_occurrence_id,
)
from calendar_service.calendar.recurrence.rules import (
    FIELD,
    MAX_DATES,
    MAX_LINE,
    MAX_TIMES_PER_DAY,
    Rule,
    dates_split,
    parse_recurrence,
    stored_rule,
    with_count,
    with_until,
)

__all__: Sequence[str] = (
    "FIELD",
    "MAX_DATES",
    "MAX_LINE",
    "MAX_TIMES_PER_DAY",
    "READ_BUDGET",
    "READ_MOST_INSTANCES",
    "READ_MOST_PERIODS",
    "WRITE_BUDGET",
    "Budget",
    "Paused",
    "Rule",
    "SeriesTimes",
    "Summary",
    "Work",
    "count_before",
    "dates_split",
    "end_of",
    "expand",
    "measured",
    "occurrence_id",
    "occurrence_stamp",
    "occurs_at",
    "original_of",
    "parse_recurrence",
    "split_occurrence_id",
    "stored_rule",
    "summarize",
    "with_count",
    "with_until",
)
