"""Date-time parsing and formatting: RFC 3339 out, ISO 8601 in, IANA zones cached."""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

# Accept the RFC 3339 profile of ISO 8601 (plus a space separator and no seconds):
# 2026-03-02T09:30:00+01:00, 2026-03-02T08:30:00Z, 2026-03-02T09:30, 2026-03-02T09:30:00.250Z.
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def utcnow() -> datetime:
    return datetime.now(UTC)


@functools.lru_cache(maxsize=1024)
def zone(name: str) -> tzinfo:
    if name == "UTC":
        return UTC
    return ZoneInfo(name)


def is_valid_zone(name: str) -> bool:
    if not name or name != name.strip() or ".." in name or name.startswith("/"):
        return False
    if name == "UTC":
        return True
    try:
        zone(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return name in _zones()


@functools.lru_cache(maxsize=1)
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def utc_text(value: datetime) -> str:
    """A date-time as SQLite stores it: RFC 3339 in UTC with microseconds,
    ``2026-03-02T08:30:00.000000Z``. Fixed width, so the text sorts in time order (the list
    window compares it in the index), and turning it into the API's form is one ``replace``
    (see ``format_utc``)."""
    v = value if value.tzinfo is UTC else value.astimezone(UTC)
    return v.isoformat(timespec="microseconds")[:26] + "Z"


def from_utc_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


STORED_WHOLE_SECOND = ".000000Z"


def format_utc(value: datetime | str) -> str:
    """``2026-03-02T08:30:00Z`` (microseconds kept only when present).

    ``value`` may also be the stored text (``utc_text``), formatted without parsing it."""
    if type(value) is str:
        return value.replace(STORED_WHOLE_SECOND, "Z")
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")  # type: ignore[union-attr]


def format_in(value: datetime | str, tz: tzinfo) -> str:
    """RFC 3339 in ``tz`` with its explicit offset (``Z`` for UTC); ``value`` as for
    ``format_utc``."""
    if tz is UTC:
        return format_utc(value)
    if type(value) is str:
        value = from_utc_text(value)
    text = value.astimezone(tz).isoformat()  # type: ignore[union-attr]
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def parse_date_time(text: str, tz: tzinfo) -> datetime:
    """Parse an ISO 8601 date-time; one without an offset is read in ``tz``. Returns UTC.

    Raises ValueError with a message fit for a person.
    """
    if not isinstance(text, str) or not _DATE_TIME.match(text.strip()):
        raise ValueError(
            "must be an RFC 3339 date-time such as 2026-03-02T09:30:00+01:00 "
            "(without an offset it is read in the calendar's time zone)"
        )
    text = text.strip()
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("is not a real date and time (check the day, month and hour)") from None
    if value.tzinfo is None:
        value = localize(value, tz)
    return value.astimezone(UTC)


def localize(naive: datetime, tz: tzinfo) -> datetime:
    """Attach ``tz`` to a wall-clock time (PEP 495 ``fold=0``): a time inside a DST gap is
    moved forward by the gap (02:30 becomes 03:30, as Google Calendar does); a time inside an
    overlap is its first occurrence."""
    return naive.replace(tzinfo=tz, fold=0)


def parse_day(text: str, tz: tzinfo) -> date:
    """For all-day events: a date, or a date-time at local midnight."""
    if not isinstance(text, str):
        raise ValueError("must be a date such as 2026-03-02")
    text = text.strip()
    if _DATE.match(text):
        try:
            return date.fromisoformat(text)
        except ValueError:
            raise ValueError("is not a real date (check the day and month)") from None
    if not _DATE_TIME.match(text):
        raise ValueError("must be a date such as 2026-03-02 (or a midnight date-time) for allDay")
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("is not a real date and time (check the day, month and hour)") from None
    if (value.hour, value.minute, value.second, value.microsecond) != (0, 0, 0, 0):
        raise ValueError("must be a date (2026-03-02) or a midnight date-time for an all-day event")
    return value.date()


def midnight(day: date, tz: tzinfo) -> datetime:
    return localize(datetime(day.year, day.month, day.day), tz).astimezone(UTC)


ONE_DAY = timedelta(days=1)
