"""Recurring events (RFC 5545): rules read and checked, occurrences computed, occurrence ids.

Pure: no database, no I/O. A series is stored once, with its ``recurrence`` lines (one
``RRULE``, any ``EXDATE``/``RDATE``); its occurrences are computed here, never stored.

- ``parse_recurrence`` reads what a caller sent into a ``Rule`` (400s naming ``recurrence``,
  saying what is wrong) and gives the normalized lines that are stored and shown.
- ``expand`` yields a series' occurrence starts in time order, from a given instant on.
- ``summarize`` is what a write stores beside the rule: the start of the rule's last instance
  and the end of the series' last occurrence (``None`` when endless), after checking the rule
  occurs at all.
- ``occurrence_id`` / ``split_occurrence_id``: ``<seriesId>_<YYYYMMDDTHHMMSSZ>`` (the original
  start in UTC basic format), ``<seriesId>_<YYYYMMDD>`` for all-day series.

Expansion is python-dateutil's ``rrule`` in the calendar's time zone: DTSTART is the series'
local wall time (naive), each instance is localized with ``timeutil.localize`` (``fold=0``: a
time in a DST gap takes the offset before the gap, as RFC 5545 says), so a weekly 09:30
Europe/Berlin series stays at 09:30 local in summer and winter. As in RFC 5545, DTSTART (the
series' start) is always the first instance, and ``COUNT`` counts it.

Bounded work. dateutil's iterator can spin through many periods that produce nothing between two
instances (``FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30`` spins until the year 9999: seconds of CPU).
Every expansion here runs dateutil's own iteration with a metered ``_iterinfo`` (``_Gauge``): each
period it builds is charged to a ``Budget`` (about a microsecond a unit), and every expansion
stops at the end of the accepted date range (``timeutil.LATEST``) and at the window's end even
when nothing occurs. When a request's budget runs out, the expansion raises ``Paused`` with the
instant up to which it is complete, so a list answers a short page with a page token there.
Each expansion may always examine ``_FREE_PERIODS`` periods, so a paused list still moves on.
Expansions skip ahead to the window: DTSTART moves forward by whole periods of the rule (its
by-parts made explicit first, so the instances stay the same); a ``COUNT`` rule is expanded up to
the start of its last instance, computed once when the series is written (``summarize``).
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from dateutil import rrule as _rrule

from calendar_service.errors import FieldError, ValidationFailed
from calendar_service.timeutil import EARLIEST, LATEST, check_instant, is_valid_zone, localize, zone

FIELD = "recurrence"
MAX_LINE = 1000
"""Characters in one recurrence line."""
MAX_DATES = 1000
"""EXDATE and RDATE values in one series, together."""
MAX_TIMES_PER_DAY = 96
"""Instances one day of a rule may hold (BYHOUR x BYMINUTE x BYSECOND): every 15 minutes."""
MAX_INTERVAL = 10_000
READ_BUDGET = 50_000
"""Work units (about a microsecond each) one read (a list page, a get) may spend expanding."""
WRITE_BUDGET = 200_000
"""Work units a write may spend checking a rule and finding its last instance."""
_FREE_PERIODS = 2

FREQUENCIES = {
    "DAILY": _rrule.DAILY,
    "WEEKLY": _rrule.WEEKLY,
    "MONTHLY": _rrule.MONTHLY,
    "YEARLY": _rrule.YEARLY,
}
_REFUSED_FREQUENCIES = ("SECONDLY", "MINUTELY", "HOURLY")
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_INT_PARTS = {  # part: (least, greatest, may be negative)
    "BYSECOND": (0, 60, False),
    "BYMINUTE": (0, 59, False),
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (1, 31, True),
    "BYYEARDAY": (1, 366, True),
    "BYWEEKNO": (1, 53, True),
    "BYMONTH": (1, 12, False),
    "BYSETPOS": (1, 366, True),
}
_PARTS = ("FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "WKST", *_INT_PARTS)
_INT = re.compile(r"^[+-]?\d{1,6}$")
_BYDAY = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")
_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_DATE_TIME = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$")
_STAMP = re.compile(r"^\d{8}(T\d{6}Z)?$")


def _bad(message: str) -> ValidationFailed:
    return ValidationFailed([FieldError(FIELD, message)])


# ---------------------------------------------------------------------------------------------
# Reading rules


@dataclass(frozen=True, slots=True)
class Rule:
    """A series' recurrence, read and normalized.

    Timed series hold instants (aware, UTC); all-day series hold dates (naive midnights).
    """

    lines: tuple[str, ...]  # as stored and shown
    all_day: bool
    freq: int
    interval: int
    count: int | None
    until: datetime | None  # the UNTIL part: UTC (timed) or a naive midnight (all-day)
    by: tuple[tuple[str, Any], ...]  # dateutil keyword arguments for the by-parts and wkst
    exdates: frozenset[datetime]
    rdates: tuple[datetime, ...]  # sorted

    @property
    def has_end(self) -> bool:
        return self.count is not None or self.until is not None


def parse_recurrence(value: Any, *, tz: tzinfo, all_day: bool) -> Rule:
    """The ``recurrence`` a caller sent (a list of RFC 5545 lines) as a ``Rule``; a 400 naming
    ``recurrence`` and saying what is wrong otherwise. Date-times without ``Z`` or ``TZID`` are
    read in ``tz`` (the calendar's zone)."""
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise _bad('must be an array of RFC 5545 lines, e.g. ["RRULE:FREQ=WEEKLY;BYDAY=MO"]')
    rule: dict[str, Any] | None = None
    lines: list[str] = []
    exdates: list[datetime] = []
    rdates: list[datetime] = []
    for raw in value:
        line = raw.strip()
        if len(line) > MAX_LINE:
            raise _bad(f"each line must be at most {MAX_LINE} characters (got {len(line)})")
        head, sep, body = line.partition(":")
        name, *params = head.split(";")
        name = name.strip().upper()
        if not sep or not body:
            raise _bad(f"{line[:40]!r} is not an RFC 5545 line such as RRULE:FREQ=WEEKLY")
        if name == "RRULE":
            if rule is not None:
                raise _bad("must hold exactly one RRULE line (send more dates as RDATE)")
            if params:
                raise _bad("the RRULE line takes no parameters (RRULE:FREQ=...)")
            rule, normal = _read_rrule(body, tz=tz, all_day=all_day)
            lines.append("RRULE:" + normal)
        elif name in ("EXDATE", "RDATE"):
            values = _read_dates(name, params, body, tz=tz, all_day=all_day)
            (exdates if name == "EXDATE" else rdates).extend(values)
            if len(exdates) + len(rdates) > MAX_DATES:
                raise _bad(f"must hold at most {MAX_DATES} EXDATE and RDATE values in all")
            lines.append(_date_line(name, values, all_day))
        else:
            raise _bad(
                f"{name or line[:40]!r} is not a recurrence line: send one RRULE line and any "
                "EXDATE or RDATE lines"
            )
    if rule is None:
        raise _bad('must hold one RRULE line, e.g. "RRULE:FREQ=WEEKLY;BYDAY=MO"')
    by = tuple(sorted(rule["by"].items()))
    return Rule(
        lines=tuple(lines),
        all_day=all_day,
        freq=rule["freq"],
        interval=rule["interval"],
        count=rule["count"],
        until=rule["until"],
        by=by,
        exdates=frozenset(exdates),
        rdates=tuple(sorted(set(rdates))),
    )


@functools.lru_cache(maxsize=4096)
def stored_rule(text: tuple[str, ...], all_day: bool) -> Rule:
    """A stored (normalized) recurrence read again: its values are UTC or dates, so no zone
    is needed. Cached: the list reads the same series on every page."""
    return parse_recurrence(list(text), tz=UTC, all_day=all_day)


def _read_rrule(body: str, *, tz: tzinfo, all_day: bool) -> tuple[dict[str, Any], str]:
    parts: dict[str, str] = {}
    order: list[str] = []
    for item in body.split(";"):
        name, eq, text = item.partition("=")
        name = name.strip().upper()
        text = text.strip()
        if not eq or not text:
            raise _bad(f"RRULE part {item[:40]!r} must be NAME=VALUE, e.g. FREQ=WEEKLY")
        if name not in _PARTS:
            raise _bad(f"RRULE part {name[:40]!r} is not supported; known: {', '.join(_PARTS)}")
        if name in parts:
            raise _bad(f"RRULE part {name} is given twice")
        parts[name] = text.upper() if name != "UNTIL" else text
        order.append(name)
    freq_name = parts.get("FREQ")
    if freq_name is None:
        raise _bad("the RRULE needs FREQ (DAILY, WEEKLY, MONTHLY or YEARLY)")
    if freq_name in _REFUSED_FREQUENCIES:
        raise _bad(f"FREQ={freq_name} is not supported: use DAILY, WEEKLY, MONTHLY or YEARLY")
    if freq_name not in FREQUENCIES:
        raise _bad(f"FREQ={freq_name[:20]} is unknown: use DAILY, WEEKLY, MONTHLY or YEARLY")
    freq = FREQUENCIES[freq_name]
    if "COUNT" in parts and "UNTIL" in parts:
        raise _bad("the RRULE must not have both COUNT and UNTIL (RFC 5545): keep one")
    out: dict[str, Any] = {"freq": freq, "interval": 1, "count": None, "until": None, "by": {}}
    if "INTERVAL" in parts:
        out["interval"] = _positive(parts["INTERVAL"], "INTERVAL", MAX_INTERVAL)
    if "COUNT" in parts:
        out["count"] = _positive(parts["COUNT"], "COUNT", 10**6)
    if "UNTIL" in parts:
        out["until"] = _read_until(parts["UNTIL"], tz=tz, all_day=all_day)
        parts["UNTIL"] = _stamp(out["until"], all_day)
    by: dict[str, Any] = out["by"]
    for name, (least, greatest, negative) in _INT_PARTS.items():
        if name in parts:
            by[name.lower()] = _int_list(parts[name], name, least, greatest, negative)
    if "BYDAY" in parts:
        by["byweekday"] = _read_byday(parts["BYDAY"], freq_name, "BYWEEKNO" in parts)
    if "WKST" in parts:
        if parts["WKST"] not in WEEKDAYS:
            raise _bad(f"WKST must be one of {', '.join(WEEKDAYS)}")
        by["wkst"] = WEEKDAYS.index(parts["WKST"])
    _check_combination(freq_name, parts, all_day)
    normal = ";".join(f"{name}={parts[name]}" for name in order)
    return out, normal


def _positive(text: str, name: str, greatest: int) -> int:
    if not _INT.match(text) or not 1 <= int(text) <= greatest:
        raise _bad(f"{name} must be a whole number from 1 to {greatest}")
    return int(text)


def _int_list(text: str, name: str, least: int, greatest: int, negative: bool) -> tuple[int, ...]:
    values = []
    for item in text.split(","):
        ok = _INT.match(item) is not None
        n = int(item) if ok else 0
        if ok and n < 0 and negative:
            n = -n
        if not ok or not least <= n <= greatest or (n == 0 and negative):
            span = f"{least} to {greatest}" + (f" or -{greatest} to -1" if negative else "")
            raise _bad(f"{name} values must be whole numbers from {span} (got {item[:20]!r})")
        values.append(int(item))
    return tuple(dict.fromkeys(values))


def _read_byday(text: str, freq_name: str, weekno: bool) -> tuple[Any, ...]:
    days = []
    for item in text.split(","):
        match = _BYDAY.match(item.strip())
        if match is None:
            raise _bad(f"BYDAY values are weekdays such as MO or 2TU or -1FR (got {item[:20]!r})")
        n_text, day = match.groups()
        weekday = getattr(_rrule, day)
        if n_text:
            n = int(n_text)
            if freq_name not in ("MONTHLY", "YEARLY") or weekno:
                raise _bad(
                    "BYDAY with a number (such as 2TU) needs FREQ=MONTHLY or FREQ=YEARLY "
                    "(and no BYWEEKNO)"
                )
            if n == 0 or abs(n) > (5 if freq_name == "MONTHLY" else 53):
                raise _bad(f"BYDAY {item[:20]!r} names no such weekday of the period")
            weekday = weekday(n)
        days.append(weekday)
    return tuple(dict.fromkeys(days))


def _check_combination(freq_name: str, parts: dict[str, str], all_day: bool) -> None:
    """The RFC 5545 rules on which by-parts go with which FREQ, and ours."""
    if "BYWEEKNO" in parts and freq_name != "YEARLY":
        raise _bad("BYWEEKNO needs FREQ=YEARLY")
    if "BYYEARDAY" in parts and freq_name in ("DAILY", "WEEKLY", "MONTHLY"):
        raise _bad("BYYEARDAY needs FREQ=YEARLY")
    if "BYMONTHDAY" in parts and freq_name == "WEEKLY":
        raise _bad("BYMONTHDAY cannot be used with FREQ=WEEKLY")
    if "BYSETPOS" in parts and not any(p.startswith("BY") and p != "BYSETPOS" for p in parts):
        raise _bad("BYSETPOS needs another BY part (such as BYDAY) to pick from")
    times = ("BYHOUR", "BYMINUTE", "BYSECOND")
    if all_day and any(p in parts for p in times):
        raise _bad("an all-day series repeats whole days: BYHOUR, BYMINUTE, BYSECOND do not apply")
    per_day = 1
    for name in times:
        if name in parts:
            per_day *= len(set(parts[name].split(",")))
    if per_day > MAX_TIMES_PER_DAY:
        raise _bad(f"a rule may give at most {MAX_TIMES_PER_DAY} times a day (got {per_day})")


def _read_until(text: str, *, tz: tzinfo, all_day: bool) -> datetime:
    """UNTIL as UTC (timed series; a date means the end of that day) or a date (all-day)."""
    try:
        if _DATE.match(text):
            day = _date_of(text)
            if all_day:
                return datetime(day.year, day.month, day.day)
            value = localize(datetime.combine(day, time(23, 59, 59)), tz)
        else:
            value = _date_time_of(text, tz)
            if all_day:
                local = value.astimezone(tz)
                return datetime(local.year, local.month, local.day)
        return check_instant(value)
    except ValueError as exc:
        raise _bad(f"UNTIL {text[:30]!r} {exc}") from None


def _date_of(text: str) -> date:
    match = _DATE.match(text)
    if match is None:
        raise ValueError("must be a date such as 20260309")
    try:
        return date(*map(int, match.groups()))
    except ValueError:
        raise ValueError("is not a real date") from None


def _date_time_of(text: str, tz: tzinfo) -> datetime:
    """``20260309T090000Z`` (UTC) or ``20260309T090000`` (in ``tz``), as UTC."""
    match = _DATE_TIME.match(text)
    if match is None:
        raise ValueError("must be a date-time such as 20260309T090000Z")
    year, month, day, hour, minute, second, utc = match.groups()
    try:
        naive = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        raise ValueError("is not a real date and time") from None
    if not EARLIEST.year - 1 <= naive.year <= LATEST.year:
        raise ValueError("is outside the dates this service accepts")
    return check_instant(naive.replace(tzinfo=UTC) if utc else localize(naive, tz))


def _read_dates(
    name: str, params: Sequence[str], body: str, *, tz: tzinfo, all_day: bool
) -> list[datetime]:
    value_type = "DATE" if all_day else "DATE-TIME"
    zone_name: str | None = None
    for param in params:
        key, _, text = param.partition("=")
        key = key.strip().upper()
        if key == "VALUE" and text.upper() in ("DATE", "DATE-TIME"):
            value_type = text.upper()
        elif key == "TZID" and text:
            zone_name = text
        else:
            raise _bad(f"{name} parameter {param[:40]!r} is not supported (VALUE=DATE or TZID=...)")
    if all_day and value_type != "DATE":
        raise _bad(f"an all-day series takes dates: {name};VALUE=DATE:20260309")
    if not all_day and value_type == "DATE":
        raise _bad(
            f"a timed series takes date-times: {name}:20260309T090000Z or "
            f"{name};TZID=Europe/Berlin:20260309T100000"
        )
    local = tz
    if zone_name is not None:
        if all_day or not is_valid_zone(zone_name):
            raise _bad(f"{name} TZID must be an IANA time zone such as Europe/Berlin")
        local = zone(zone_name)
    values = []
    for item in body.split(","):
        item = item.strip()
        try:
            if all_day:
                day = _date_of(item)
                if not EARLIEST.year <= day.year <= LATEST.year - 1:
                    raise ValueError("is outside the dates this service accepts")
                values.append(datetime(day.year, day.month, day.day))
            else:
                if zone_name is not None and item.endswith("Z"):
                    raise ValueError("has both TZID and Z: send one")
                values.append(_date_time_of(item, local))
        except ValueError as exc:
            raise _bad(f"{name} value {item[:30]!r} {exc}") from None
    return values


def _stamp(value: datetime, all_day: bool) -> str:
    """RFC 5545 basic format: ``20260309T080000Z`` (UTC) or ``20260309`` (a date)."""
    if all_day:
        return value.strftime("%Y%m%d")
    return value.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _date_line(name: str, values: Iterable[datetime], all_day: bool) -> str:
    head = f"{name};VALUE=DATE:" if all_day else f"{name}:"
    return head + ",".join(_stamp(v, all_day) for v in values)


def with_until(rule: Rule, last: datetime, tz: tzinfo) -> list[str]:
    """The rule's lines ending just before the occurrence that starts at ``last`` (UTC): its
    COUNT or UNTIL replaced by an ``UNTIL`` (``scope=following``)."""
    if rule.all_day:
        stamp = _stamp(_naive_local(last, tz, True) - timedelta(days=1), True)
    else:
        stamp = _stamp(last - timedelta(seconds=1), False)
    out = []
    for line in rule.lines:
        if line.startswith("RRULE:"):
            parts = [p for p in line[6:].split(";") if p.split("=")[0] not in ("COUNT", "UNTIL")]
            line = "RRULE:" + ";".join([*parts, f"UNTIL={stamp}"])
        out.append(line)
    return out


def dates_split(rule: Rule, at: datetime, tz: tzinfo) -> tuple[list[str], list[str]]:
    """The EXDATE and RDATE lines of the part before ``at`` (UTC) and of the part from ``at``
    on, each value on the side it falls (``scope=following``); RRULE lines are left out."""
    at_key = _key(at, rule, tz)
    before: list[str] = []
    after: list[str] = []
    for line in rule.lines:
        if line.startswith("RRULE:"):
            continue
        name = line.split(":")[0].split(";")[0]
        values = _values_of(line)
        early = [v for v in values if v < at_key]
        late = [v for v in values if v >= at_key]
        if early:
            before.append(_date_line(name, early, rule.all_day))
        if late:
            after.append(_date_line(name, late, rule.all_day))
    return before, after


def _values_of(line: str) -> list[datetime]:
    """A stored EXDATE or RDATE line's values: naive midnights (dates) or UTC instants."""
    out = []
    for item in line.partition(":")[2].split(","):
        if _DATE.match(item):
            out.append(datetime.combine(_date_of(item), time()))
        else:
            out.append(_date_time_of(item, UTC))
    return out


def without_count(lines: Sequence[str]) -> list[str]:
    """The lines without COUNT in the RRULE (the new series of a split counts afresh)."""
    out = []
    for line in lines:
        if line.startswith("RRULE:"):
            parts = [p for p in line[6:].split(";") if not p.startswith("COUNT=")]
            line = "RRULE:" + ";".join(parts)
        out.append(line)
    return out


def with_count(lines: Sequence[str], count: int) -> list[str]:
    out = []
    for line in without_count(lines):
        if line.startswith("RRULE:"):
            line = f"{line};COUNT={count}"
        out.append(line)
    return out


# ---------------------------------------------------------------------------------------------
# Bounded expansion


class Budget:
    """Work units one request may spend expanding rules (shared by all its expansions)."""

    __slots__ = ("left",)

    def __init__(self, units: int = READ_BUDGET) -> None:
        self.left = units


class Paused(Exception):
    """The budget ran out: every occurrence starting before ``at`` (UTC) was yielded."""

    def __init__(self, at: datetime) -> None:
        super().__init__(at.isoformat())
        self.at = at


class _Stop(Exception):
    """The iteration reached the end of what was asked for (or of the accepted range)."""


class _OutOfBudget(Exception):
    def __init__(self, reached: date) -> None:
        super().__init__(reached.isoformat())
        self.reached = reached


class _Gauge:
    """One expansion's meter: its periods are charged to ``budget`` (after ``_FREE_PERIODS``),
    and it stops once a period starts after ``stop`` (a local date)."""

    __slots__ = ("budget", "periods", "setpos", "stop")

    def __init__(self, budget: Budget, stop: date, setpos: int) -> None:
        self.budget = budget
        self.stop = stop
        self.setpos = setpos
        self.periods = 0

    def charge(self, start: date, days: int) -> None:
        if start > self.stop:
            raise _Stop
        self.periods += 1
        if self.periods > _FREE_PERIODS:
            # Measured on dateutil 4.0: about 2 us a period plus 0.1 us a day filtered,
            # and BYSETPOS walks the period's days once per position.
            self.budget.left -= 2 + (days * (1 + self.setpos)) // 10
            if self.budget.left < 0:
                raise _OutOfBudget(start)


class _MeteredInfo(_rrule._iterinfo):
    """dateutil's per-period day sets, each charged to the rule's gauge first. (No
    ``__slots__`` of its own: the base's ``__init__`` sets the attributes it finds there.)"""

    def ydayset(self, year: int, month: int, day: int) -> Any:
        found = super().ydayset(year, month, day)
        self.rrule.gauge.charge(date(year, 1, 1), found[2] - found[1])
        return found

    def mdayset(self, year: int, month: int, day: int) -> Any:
        found = super().mdayset(year, month, day)
        self.rrule.gauge.charge(date(year, month, 1), found[2] - found[1])
        return found

    def wdayset(self, year: int, month: int, day: int) -> Any:
        found = super().wdayset(year, month, day)
        self.rrule.gauge.charge(date(year, month, day), found[2] - found[1])
        return found

    def ddayset(self, year: int, month: int, day: int) -> Any:
        found = super().ddayset(year, month, day)
        self.rrule.gauge.charge(date(year, month, day), 1)
        return found


# dateutil's own iteration, run with the metered day sets: the same code object, with
# ``_iterinfo`` bound to ``_MeteredInfo`` in its globals (no rule engine of our own).
_metered_iter = types.FunctionType(
    _rrule.rrule._iter.__code__,
    {**vars(_rrule), "_iterinfo": _MeteredInfo},
    "_iter",
    _rrule.rrule._iter.__defaults__,
    _rrule.rrule._iter.__closure__,
)


class _MeteredRule(_rrule.rrule):
    _iter = _metered_iter

    def __init__(self, gauge: _Gauge, **kwargs: Any) -> None:
        super().__init__(cache=False, **kwargs)
        self.gauge = gauge


@dataclass(frozen=True, slots=True)
class SeriesTimes:
    """What expanding a series needs besides its rule."""

    start: datetime  # UTC: DTSTART, the first occurrence
    tz: tzinfo
    last_start: datetime | None  # UTC start of the rule's last instance (``summarize``)


def _naive_local(value: datetime, tz: tzinfo, all_day: bool) -> datetime:
    local = value.astimezone(tz).replace(tzinfo=None)
    if all_day:
        return datetime(local.year, local.month, local.day)
    return local.replace(microsecond=0)


def _to_utc(naive: datetime, tz: tzinfo) -> datetime:
    return localize(naive, tz).astimezone(UTC)


def _explicit(rule: Rule, dtstart: datetime) -> dict[str, Any]:
    """The rule's by-parts with dateutil's defaults from DTSTART made explicit, so that DTSTART
    can move by whole periods without changing the instances."""
    by = dict(rule.by)
    if not any(k in by for k in ("byweekno", "byyearday", "bymonthday", "byweekday")):
        if rule.freq == _rrule.YEARLY:
            by.setdefault("bymonth", (dtstart.month,))
            by["bymonthday"] = (dtstart.day,)
        elif rule.freq == _rrule.MONTHLY:
            by["bymonthday"] = (dtstart.day,)
        elif rule.freq == _rrule.WEEKLY:
            by["byweekday"] = (dtstart.weekday(),)
    by.setdefault("byhour", (dtstart.hour,))
    by.setdefault("byminute", (dtstart.minute,))
    by.setdefault("bysecond", (dtstart.second,))
    return by


def _skipped_start(rule: Rule, dtstart: datetime, since: datetime) -> datetime:
    """The start of the rule's last period at or before ``since`` (both local, naive), on the
    rule's period grid from ``dtstart``; ``dtstart`` itself when ``since`` is not after it."""
    if since <= dtstart:
        return dtstart
    step = rule.interval
    if rule.freq == _rrule.DAILY:
        k = (since.date() - dtstart.date()).days // step
        day = dtstart.date() + timedelta(days=k * step)
    elif rule.freq == _rrule.WEEKLY:
        wkst = dict(rule.by).get("wkst", 0)
        week = dtstart.date() - timedelta(days=(dtstart.weekday() - wkst) % 7)
        k = (since.date() - week).days // 7 // step
        day = week + timedelta(weeks=k * step)
    elif rule.freq == _rrule.MONTHLY:
        months = (since.year - dtstart.year) * 12 + since.month - dtstart.month
        index = dtstart.year * 12 + dtstart.month - 1 + months // step * step
        day = date(index // 12, index % 12 + 1, 1)
    else:
        k = (since.year - dtstart.year) // step
        day = date(dtstart.year + k * step, 1, 1)
    moved = datetime.combine(day, time())
    return dtstart if moved <= dtstart else moved


_RANGE_END_DAY = (LATEST + timedelta(days=2)).date()


def _rule_instances(
    rule: Rule,
    times: SeriesTimes,
    *,
    since: datetime,
    before: datetime | None,
    budget: Budget,
    use_count: bool = False,
    endless: bool = False,
) -> Iterator[datetime]:
    """The RRULE's own instances (UTC), from the period holding ``since`` (``endless``: as if
    it had no COUNT or UNTIL); raises ``_OutOfBudget`` when the budget runs out."""
    tz = times.tz
    dtstart = _naive_local(times.start, tz, rule.all_day)
    local_since = _naive_local(max(since, EARLIEST), tz, rule.all_day)
    until: datetime | None = None
    count: int | None = None
    if endless:
        start = _skipped_start(rule, dtstart, local_since)
    elif rule.count is not None and (use_count or times.last_start is None):
        count = rule.count
        start = dtstart  # a COUNT is counted from DTSTART
    else:
        start = _skipped_start(rule, dtstart, local_since)
        if rule.count is not None:
            assert times.last_start is not None
            until = _naive_local(times.last_start, tz, rule.all_day)
        elif rule.until is not None:
            until = _naive_local(rule.until, tz, False) if not rule.all_day else rule.until
    stop = _RANGE_END_DAY
    if before is not None:
        stop = min(stop, (before.astimezone(tz) + timedelta(days=1)).date())
    by = _explicit(rule, dtstart)
    gauge = _Gauge(budget, stop, len(by.get("bysetpos", ())))
    metered = _MeteredRule(
        gauge,
        freq=rule.freq,
        dtstart=start,
        interval=rule.interval,
        count=count,
        until=until,
        **by,
    )
    iterator = iter(metered)
    # dateutil works in whole seconds: a start's fraction of a second is every instance's.
    fraction = timedelta(microseconds=times.start.microsecond)
    while True:
        try:
            local = next(iterator)
        except (StopIteration, _Stop):
            return
        instant = _to_utc(local + fraction, tz)
        if instant > LATEST:
            return
        yield instant


def expand(
    rule: Rule,
    times: SeriesTimes,
    *,
    since: datetime,
    before: datetime | None = None,
    budget: Budget,
) -> Iterator[datetime]:
    """The series' occurrence starts (UTC, in order, each once) from ``since`` (inclusive) to
    ``before`` (exclusive; ``None``: the end of the accepted range): DTSTART, the RRULE's
    instances and the RDATEs, less the EXDATEs. Raises ``Paused`` when ``budget`` runs out."""
    tz = times.tz
    extra = sorted({times.start, *(_from_key(r, rule, tz) for r in rule.rdates)})
    extra = [e for e in extra if e >= since and (before is None or e < before)]
    excluded = rule.exdates
    instances = _rule_instances(rule, times, since=since, before=before, budget=budget)
    pending = 0
    last: datetime | None = None
    while True:
        try:
            nxt: datetime | None = next(instances)
        except StopIteration:
            nxt = None
        except _OutOfBudget as out:
            at = _to_utc(datetime.combine(out.reached, time()), tz)
            for e in extra[pending:]:
                if e >= at:
                    break
                if _key(e, rule, tz) not in excluded and e != last:
                    last = e
                    yield e
            raise Paused(max(at, since)) from None
        if nxt is not None and nxt < since:
            continue
        if nxt is not None and before is not None and nxt >= before:
            nxt = None
        while pending < len(extra) and (nxt is None or extra[pending] <= nxt):
            e = extra[pending]
            pending += 1
            if e != last and _key(e, rule, tz) not in excluded:
                last = e
                yield e
        if nxt is None:
            return
        if nxt != last and _key(nxt, rule, tz) not in excluded:
            last = nxt
            yield nxt


def _key(instant: datetime, rule: Rule, tz: tzinfo) -> datetime:
    """How EXDATEs name ``instant``: itself to the second (timed) or its local date."""
    if not rule.all_day:
        return instant.replace(microsecond=0)
    local = instant.astimezone(tz)
    return datetime(local.year, local.month, local.day)


def _from_key(value: datetime, rule: Rule, tz: tzinfo) -> datetime:
    """An EXDATE or RDATE value as an instant: itself, or the local midnight of a date."""
    return value if not rule.all_day else _to_utc(value, tz)


def occurs_at(rule: Rule, times: SeriesTimes, original: datetime) -> bool:
    """Whether the series has an occurrence starting at ``original`` (UTC)."""
    try:
        found = next(
            expand(
                rule,
                times,
                since=original,
                before=original + timedelta(seconds=1),
                budget=Budget(),
            ),
            None,
        )
    except Paused:
        return False
    return found == original


@dataclass(frozen=True, slots=True)
class Summary:
    last_start: datetime | None  # UTC start of the rule's last instance; None: endless
    ends_at: datetime | None  # UTC end of the last occurrence; None: endless


def summarize(rule: Rule, times: SeriesTimes, *, length: timedelta | int) -> Summary:
    """Check that the rule occurs at all and find where the series ends, within
    ``WRITE_BUDGET`` (a 400 naming ``recurrence`` otherwise). ``length``: each occurrence's
    duration, or for all-day series its number of days."""
    budget = Budget(WRITE_BUDGET)
    dtstart = times.start
    try:
        # Whether the rule occurs at all: an UNTIL before its first instance leaves a series
        # of its start alone (as a split with scope=following can), which is fine.
        probe = _rule_instances(
            rule, times, since=dtstart, before=None, budget=budget, endless=True
        )
        first = next(probe, None)
    except _OutOfBudget:
        raise _bad(
            "the rule's first occurrence is too far from startsAt to compute: check its BY "
            "parts (such as BYMONTHDAY=30 with BYMONTH=2)"
        ) from None
    if first is None:
        raise _bad(
            "the rule never produces an occurrence (check its BY parts: for instance there is "
            "no 30 February) before the end of the accepted range"
        )
    last_start: datetime | None = None
    if rule.count is not None:
        # RFC 5545: COUNT counts DTSTART, which is an instance whether the rule yields it or not.
        wanted = rule.count if first == dtstart else rule.count - 1
        last_start = dtstart
        if wanted > 0:
            counted = _rule_instances(
                rule, times, since=dtstart, before=None, budget=budget, use_count=True
            )
            try:
                for n, instant in enumerate(counted, 1):
                    last_start = instant
                    if n >= wanted:
                        break
            except _OutOfBudget:
                raise _bad(
                    "COUNT is too large to compute for this rule: use a smaller COUNT or UNTIL"
                ) from None
    elif rule.until is not None:
        until = rule.until if not rule.all_day else _to_utc(rule.until, times.tz)
        last_start = max(dtstart, until)
    if last_start is None:
        return Summary(None, None)
    latest = max(last_start, dtstart, *(_from_key(r, rule, times.tz) for r in rule.rdates))
    return Summary(last_start, end_of(latest, times.tz, rule.all_day, length))


def end_of(start: datetime, tz: tzinfo, all_day: bool, length: timedelta | int) -> datetime:
    """An occurrence's end from its start: ``length`` later, or for all-day series the local
    midnight ``length`` days on (days, not hours, across DST)."""
    if all_day:
        assert isinstance(length, int)
        local = _naive_local(start, tz, True) + timedelta(days=length)
        return min(_to_utc(local, tz), LATEST)
    assert isinstance(length, timedelta)
    return min(start + length, LATEST)


# ---------------------------------------------------------------------------------------------
# Occurrence ids


def occurrence_id(series_id: str, original: datetime, *, all_day: bool, tz: tzinfo) -> str:
    """``<seriesId>_<YYYYMMDDTHHMMSSZ>``, or ``<seriesId>_<YYYYMMDD>`` (the local date) for
    an all-day series."""
    if all_day:
        return f"{series_id}_{original.astimezone(tz).strftime('%Y%m%d')}"
    return f"{series_id}_{original.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"


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
            if not _DATE.match(stamp):
                return None
            return _to_utc(datetime.combine(_date_of(stamp), time()), tz)
        if not _DATE_TIME.match(stamp):
            return None
        return _date_time_of(stamp, UTC)
    except ValueError:
        return None


def count_before(rule: Rule, times: SeriesTimes, at: datetime) -> int:
    """How many instances COUNT has counted before ``at`` (UTC): DTSTART and the RRULE's
    instances, EXDATEs included (RFC 5545 counts before excluding). Within
    ``WRITE_BUDGET``."""
    counted = 1 if times.start < at else 0
    budget = Budget(WRITE_BUDGET)
    try:
        for instant in _rule_instances(
            rule, times, since=times.start, before=at, budget=budget, use_count=True
        ):
            if instant >= at:
                break
            if instant != times.start:
                counted += 1
    except _OutOfBudget:
        raise _bad("this series is too long to split: change the whole series instead") from None
    return counted
