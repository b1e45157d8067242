"""Date-time parsing and formatting: RFC 3339 out, ISO 8601 in, IANA zones cached.

The service accepts the instants from ``EARLIEST`` to ``LATEST`` (the years 1900 to 2200 in
UTC) and offsets within ``MAX_OFFSET`` (±18:00, as ISO 8601 practice and RFC 9557 have it;
Python alone would take up to ±23:59, and read +05:75 as 6:15). Every parser of an outside
date-time goes through ``check_instant``: event times, all-day dates, list bounds and page
tokens. Anything else is a ``ValueError`` with a message fit for a person, never an
``OverflowError`` further on: inside the range, any offset or zone and a day or a longest
event's length either way stays within what ``datetime`` holds.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

# Accept the RFC 3339 profile of ISO 8601 (plus a space separator and no seconds):
# 2026-03-02T09:30:00+01:00, 2026-03-02T08:30:00Z, 2026-03-02T09:30, 2026-03-02T09:30:00.250Z.
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UTC_SECONDS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})$")
_Day = TypeVar("_Day", bound=date)

MIN_YEAR = 1900
MAX_YEAR = 2200
EARLIEST = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)
"""The earliest instant accepted anywhere (inclusive)."""
LATEST = datetime(MAX_YEAR + 1, 1, 1, tzinfo=UTC)
"""The latest instant accepted anywhere (inclusive: the exclusive end of 2200-12-31 in UTC)."""
MAX_OFFSET = timedelta(hours=18)
"""The largest UTC offset accepted in input, either way (RFC 9557 / ISO 8601 practice)."""
LONGEST_SPAN = LATEST - EARLIEST
"""No event lasts longer than the accepted range itself."""

_OFFSET_HOURS = int(MAX_OFFSET.total_seconds()) // 3600
_INSTANTS_TEXT = (
    f"{EARLIEST.isoformat().replace('+00:00', 'Z')} to {LATEST.isoformat().replace('+00:00', 'Z')}"
)
RANGE_TEXT = f"{_INSTANTS_TEXT}, offsets within +/-{_OFFSET_HOURS:02d}:00"
"""The accepted range in words, for the published schemas."""
OUT_OF_RANGE = (
    f"is outside the dates this service accepts ({_INSTANTS_TEXT}, the years {MIN_YEAR}-{MAX_YEAR})"
)
BAD_OFFSET = (
    "has an offset this service does not accept: use "
    f"-{_OFFSET_HOURS:02d}:00 to +{_OFFSET_HOURS:02d}:00 (minutes 00-59)"
)


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


_UTC_TEXTS: dict[datetime, str] = {}  # made lately, by instant (UTC datetimes alone: no fold)
_UTC_TEXTS_MOST = 256
_DAY_TEXTS: dict[int, str] = {}  # "2026-03-02T", by the day's ordinal, made lately
# Days are kept by the thousand (a list's windows wander over years: kept by the 256, the days
# of its bounds were mostly made anew), about 80 bytes each.
_DAY_TEXTS_MOST = 4096
_CLOCK_TEXTS = tuple(f"{h:02d}:{m:02d}:" for h in range(24) for m in range(60))  # "08:30:"
_SECOND_TEXTS = tuple(f"{s:02d}." for s in range(60))  # "05."


def utc_text(value: datetime) -> str:
    """A date-time as SQLite stores it: RFC 3339 in UTC with microseconds,
    ``2026-03-02T08:30:00.000000Z``. Fixed width, so the text sorts in time order (the list
    window compares it in the index), and turning it into the API's form is one ``replace``
    (see ``format_utc``).

    A request writes the same few instants several times (a list its bounds, a create its
    ``now``): the texts made lately are kept. A new one is put together from kept parts (its
    day's, its hour and minute's, its second's): ``%`` formatting of its seven numbers cost
    some 10,000 instructions a time, twice what this does."""
    v = value if value.tzinfo is UTC else value.astimezone(UTC)
    text = _UTC_TEXTS.get(v)
    if text is None:
        ordinal = v.toordinal()
        day = _DAY_TEXTS.get(ordinal)
        if day is None:
            if len(_DAY_TEXTS) >= _DAY_TEXTS_MOST:
                _DAY_TEXTS.clear()
            day = _DAY_TEXTS[ordinal] = f"{v.year:04d}-{v.month:02d}-{v.day:02d}T"
        micro = v.microsecond
        text = (
            day
            + _CLOCK_TEXTS[v.hour * 60 + v.minute]
            + _SECOND_TEXTS[v.second]
            + (f"{micro:06d}Z" if micro else "000000Z")
        )
        if len(_UTC_TEXTS) >= _UTC_TEXTS_MOST:
            _UTC_TEXTS.clear()
        _UTC_TEXTS[v] = text
    return text


def from_utc_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


STORED_WHOLE_SECOND = ".000000Z"


def format_utc(value: datetime | str) -> str:
    """``2026-03-02T08:30:00Z`` (microseconds kept only when present).

    ``value`` may also be the stored text (``utc_text``), formatted without parsing it. A
    date-time goes through ``utc_text`` too (kept, or made of kept parts): ``isoformat`` cost
    about 11,000 instructions."""
    text = value if isinstance(value, str) else utc_text(value)
    return text.replace(STORED_WHOLE_SECOND, "Z")


def format_in(value: datetime | str, tz: tzinfo) -> str:
    """RFC 3339 in ``tz`` with its explicit offset (``Z`` for UTC); ``value`` as for
    ``format_utc``.

    RFC 3339 offsets are whole minutes, but a zone's local mean time is not (Europe/Amsterdam
    was +00:19:32 until 1937, Africa/Monrovia -00:44:30 until 1972): then the offset is rounded
    up to the next whole minute and the time shown in it, so the text still names exactly the
    same instant (it parses back to it), its wall-clock time is at most 59 seconds after the
    zone's own, never before (a local midnight keeps its date). An instant that cannot be shown
    in ``tz`` at all (only ever outside the accepted range) is shown in UTC."""
    if tz is UTC:
        return format_utc(value)
    if type(value) is str:
        value = from_utc_text(value)
    try:
        text = value.astimezone(tz).isoformat()  # type: ignore[union-attr]
    except OverflowError:
        return format_utc(value)
    if text[-6] not in "+-":  # seconds in the offset: -00:44:30
        text = _in_whole_minutes(value, tz)  # type: ignore[arg-type]
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _in_whole_minutes(value: datetime, tz: tzinfo) -> str:
    offset = value.astimezone(tz).utcoffset()
    assert offset is not None
    minutes = math.ceil(offset.total_seconds() / 60)
    return value.astimezone(timezone(timedelta(minutes=minutes))).isoformat()


def check_instant(value: datetime) -> datetime:
    """``value`` (aware) in UTC, if it is within the accepted range; else ValueError."""
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError(OUT_OF_RANGE) from None
    if not EARLIEST <= utc <= LATEST:
        raise ValueError(OUT_OF_RANGE)
    return utc


def _check_year(year: int) -> None:
    """Refuse a written year that cannot be in range in any zone before any arithmetic on it
    (converting 0001-01-01T00:00:00+05:00 to UTC overflows)."""
    if not MIN_YEAR - 1 <= year <= MAX_YEAR + 1:
        raise ValueError(OUT_OF_RANGE)


def _check_offset(text: str) -> None:
    """An explicit offset within ±18:00 with minutes 00-59 (Python reads +05:75 as 6:15)."""
    match = _OFFSET.search(text)
    if match is None:
        return
    hours, minutes = int(match.group(2)), int(match.group(3))
    if minutes > 59 or timedelta(hours=hours, minutes=minutes) > MAX_OFFSET:
        raise ValueError(BAD_OFFSET)


def parse_date_time(text: str, tz: tzinfo) -> datetime:
    """Parse an ISO 8601 date-time; one without an offset is read in ``tz``. Returns UTC.

    Raises ValueError with a message fit for a person.
    """
    if type(text) is str and len(text) == 20 and _UTC_SECONDS.match(text):
        # The common shape, whole seconds in UTC (``2026-03-02T09:30:00Z``), read in one step;
        # anything this does not accept takes the full path below, which says why.
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if EARLIEST <= value <= LATEST:
                return value
    if not isinstance(text, str) or not _DATE_TIME.match(text.strip()):
        raise ValueError(
            "must be an RFC 3339 date-time such as 2026-03-02T09:30:00+01:00 "
            "(without an offset it is read in the calendar's time zone)"
        )
    value = _read_date_time(text.strip())
    if value.tzinfo is None:
        value = localize(value, tz)
    return check_instant(value)


def _read_date_time(text: str) -> datetime:
    """A date-time matching ``_DATE_TIME``, checked for a real date, a sane year and offset."""
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    else:
        _check_offset(text)
    return _read_iso(
        datetime.fromisoformat, text, "is not a real date and time (check the day, month and hour)"
    )


def _read_iso(read: Callable[[str], _Day], text: str, not_real: str) -> _Day:
    """``read(text)`` (a ``fromisoformat``) on text its pattern has matched, so that a
    ValueError means no such day or hour (``not_real`` says so); the year checked."""
    try:
        value = read(text)
    except ValueError:
        raise ValueError(not_real) from None
    _check_year(value.year)
    return value


def localize(naive: datetime, tz: tzinfo) -> datetime:
    """Attach ``tz`` to a wall-clock time (PEP 495 ``fold=0``): a time inside a DST gap is
    moved forward by the gap (02:30 becomes 03:30, as Google Calendar does); a time inside an
    overlap is its first occurrence."""
    return naive.replace(tzinfo=tz, fold=0)


def wall_time(text: Any) -> datetime | None:
    """The wall-clock time a date-time written without an offset names (``None``: it has
    one, or is not a date-time); for ``keep_length``."""
    # One ending in Z has an offset, read or not: None without parsing it (a create asks
    # this of both its times, mostly sent in UTC; the parse cost about 4,000 instructions).
    if not isinstance(text, str) or text.rstrip().endswith(("Z", "z")):
        return None
    if not _DATE_TIME.match(text.strip()):
        return None
    try:
        value = _read_date_time(text.strip())
    except ValueError:
        return None
    return value if value.tzinfo is None else None


def gap_shift(naive: datetime, tz: tzinfo) -> timedelta:
    """How far ``localize`` moves a wall-clock time inside ``tz``'s spring-forward gap: the
    gap's length (02:30 on the night Europe/Berlin skips 02:00-03:00 is 03:30); zero for a
    time that exists."""
    try:
        moved = localize(naive, tz).astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    except OverflowError:
        return timedelta(0)
    return moved - naive


def keep_length(
    start_wall: datetime | None,
    end_wall: datetime | None,
    start: datetime,
    end: datetime,
    tz: tzinfo,
) -> datetime:
    """The end of an event that starts at ``start`` (UTC), written as the wall-clock time
    ``start_wall`` in ``tz``, and ends at ``end`` (``end_wall``: its end's wall-clock time,
    ``None`` when written with an offset). The one rule for a start in a spring gap, on every
    path (REST, MCP, the settings pages, the import): the gap moves the whole event forward
    by its length, the length written kept (02:30-03:15 on that night is 03:30-04:15, never
    03:30-03:15). An end with an offset is an instant and stays."""
    if start_wall is None or end_wall is None or not gap_shift(start_wall, tz):
        return end
    return start + (end_wall - start_wall)


def gap_message(start_wall: datetime, tz: tzinfo) -> str:
    """Why an event whose start is in a spring gap and whose end is an instant cannot be."""
    moved = start_wall + gap_shift(start_wall, tz)
    return (
        f"{start_wall:%Y-%m-%dT%H:%M} does not exist in {getattr(tz, 'key', 'UTC')} (its clocks "
        f"skip that hour): it reads as {moved:%H:%M}, which is after endsAt; send startsAt "
        "with its offset, or endsAt without one"
    )


def parse_day(text: str, tz: tzinfo) -> date:
    """For all-day events: a date, or a date-time at local midnight. The year is checked to be
    near the accepted range (``midnight`` checks the instant itself)."""
    if not isinstance(text, str):
        raise ValueError("must be a date such as 2026-03-02")
    text = text.strip()
    if _DATE.match(text):
        return _read_iso(date.fromisoformat, text, "is not a real date (check the day and month)")
    if not _DATE_TIME.match(text):
        raise ValueError("must be a date such as 2026-03-02 (or a midnight date-time) for allDay")
    value = _read_date_time(text)
    if (value.hour, value.minute, value.second, value.microsecond) != (0, 0, 0, 0):
        raise ValueError("must be a date (2026-03-02) or a midnight date-time for an all-day event")
    return value.date()


def midnight(day: date, tz: tzinfo) -> datetime:
    """The start of ``day`` in ``tz``, in UTC; ValueError if outside the accepted range.
    ``day`` must be within a year of the range (as ``parse_day`` returns, or one day after)."""
    return check_instant(localize(datetime(day.year, day.month, day.day), tz))


ONE_DAY = timedelta(days=1)


def joined(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    """``spans`` (start, end) in order, those that overlap or touch made one."""
    found: list[tuple[datetime, datetime]] = []
    for start, end in sorted(spans):
        if found and start <= found[-1][1]:
            found[-1] = (found[-1][0], max(found[-1][1], end))
        else:
            found.append((start, end))
    return found
