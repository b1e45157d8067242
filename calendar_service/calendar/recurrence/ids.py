"""Occurrence ids: ``<seriesId>_<YYYYMMDDTHHMMSSZ>`` (the original start in UTC basic
format), ``<seriesId>_<YYYYMMDD>`` (the local date) for all-day series."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, tzinfo

from calendar_service.calendar.recurrence.rules import (
    DATE,
    DATE_TIME,
    date_of,
    date_time_of,
    to_utc,
)

_STAMP = re.compile(r"^\d{8}(T\d{6}Z)?$")


def occurrence_id(series_id: str, original: datetime, *, all_day: bool, tz: tzinfo) -> str:
    """``<seriesId>_<YYYYMMDDTHHMMSSZ>``, or ``<seriesId>_<YYYYMMDD>`` (the local date) for
    an all-day series."""
    return f"{series_id}_{occurrence_stamp(original, all_day=all_day, tz=tz)}"


def occurrence_stamp(original: datetime, *, all_day: bool, tz: tzinfo) -> str:
    """What follows the series' id and ``_`` in an occurrence id."""
    if all_day:
        return original.astimezone(tz).strftime("%Y%m%d")
    return original.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def split_occurrence_id(event_id: str) -> tuple[str, str] | None:
    """``(seriesId, stamp)`` if ``event_id`` has an occurrence id's form, else ``None``."""
    series_id, sep, stamp = event_id.rpartition("_")
    if not sep or not series_id or not _STAMP.match(stamp):
        return None
    return series_id, stamp


def original_of(stamp: str, *, all_day: bool, tz: tzinfo) -> datetime | None:
    """The original start (UTC) an occurrence id's stamp names, or ``None`` if it names none
    (an all-day series takes a date, a timed one a UTC date-time)."""
    try:
        if all_day:
            if not DATE.match(stamp):
                return None
            return to_utc(datetime.combine(date_of(stamp), time()), tz)
        if not DATE_TIME.match(stamp):
            return None
        return date_time_of(stamp, UTC)
    except ValueError:
        return None
