"""Recurrence rules: the ``recurrence`` lines a caller sends, read, checked and normalized.

``parse_recurrence`` gives a ``Rule`` (a 400 naming ``recurrence`` and saying what is wrong
otherwise) whose ``lines`` are what is stored and shown: names upper-case, EXDATE/RDATE/UNTIL in
UTC for timed series and as dates for all-day ones. ``stored_rule`` reads stored lines again
(cached). ``with_until``, ``dates_split`` and ``with_count`` edit a rule's lines for a split
(``scope=following``). ``typed_lines``, ``every`` and ``recurrence_change`` build the lines
a form sends, ``every_of`` and ``Rule``'s parts read them back for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from dateutil import rrule as _rrule

from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.schema_patterns import MAX_LINE
from calendar_service.platform.timeutil import (
    EARLIEST,
    LATEST,
    check_instant,
    is_valid_zone,
    localize,
    zone,
)

FIELD = "recurrence"
MAX_DATES = 1000
"""EXDATE and RDATE values in one series, together."""
MAX_TIMES_PER_DAY = 96
"""Instances one day of a rule may hold (BYHOUR x BYMINUTE x BYSECOND): every 15 minutes."""
MAX_INTERVAL = 10_000

FREQUENCIES = {
    "DAILY": _rrule.DAILY,
    "WEEKLY": _rrule.WEEKLY,
    "MONTHLY": _rrule.MONTHLY,
    "YEARLY": _rrule.YEARLY,
}
_REFUSED_FREQUENCIES = ("SECONDLY", "MINUTELY", "HOURLY")
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_INT_PARTS = {  # part: (least, greatest, may be negative)
    "BYSECOND": (0, 59, False),  # 60 (a leap second, RFC 5545) cannot be computed
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
DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
DATE_TIME = re.compile(r"^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(Z?)$")


_PART_OF = {"byweekday": "BYDAY", "wkst": "WKST"}  # ``Rule.by``'s names that are not RFC 5545's
LINE_NAMES = ("RRULE", "EXDATE", "RDATE")


def refused(message: str) -> ValidationFailed:
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

    @property
    def rrule(self) -> str:
        """The RRULE line's value, as stored: ``FREQ=WEEKLY;BYDAY=MO``."""
        return next(line[6:] for line in self.lines if line.startswith("RRULE:"))

    @property
    def frequency(self) -> str:
        """FREQ: DAILY, WEEKLY, MONTHLY or YEARLY."""
        return next(name for name, freq in FREQUENCIES.items() if freq == self.freq)

    @property
    def parts(self) -> frozenset[str]:
        """The names of the parts the RRULE gives beyond FREQ, INTERVAL, COUNT and UNTIL
        (``BYDAY``, ``WKST``, ``BYMONTHDAY`` …)."""
        return frozenset(_PART_OF.get(name, name.upper()) for name, _ in self.by)

    @property
    def weekdays(self) -> tuple[tuple[int | None, str], ...]:
        """BYDAY, in the rule's order: each weekday (``MO`` … ``SU``) with its number
        (``-1`` for ``-1FR``), or None for every such weekday of the period."""
        days = dict(self.by).get("byweekday", ())
        return tuple((day.n, WEEKDAYS[day.weekday]) for day in days)

    @property
    def month_days(self) -> tuple[int, ...]:
        """BYMONTHDAY, in the rule's order (negative: counted from the month's end)."""
        days: tuple[int, ...] = dict(self.by).get("bymonthday", ())
        return days


def parse_recurrence(value: Any, *, tz: tzinfo, all_day: bool) -> Rule:
    """The ``recurrence`` a caller sent (a list of RFC 5545 lines) as a ``Rule``; a 400 naming
    ``recurrence`` and saying what is wrong otherwise. Date-times without ``Z`` or ``TZID`` are
    read in ``tz`` (the calendar's zone)."""
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise refused('must be an array of RFC 5545 lines, e.g. ["RRULE:FREQ=WEEKLY;BYDAY=MO"]')
    rule: dict[str, Any] | None = None
    lines: list[str] = []
    exdates: list[datetime] = []
    rdates: list[datetime] = []
    for raw in value:
        line = raw.strip()
        if len(line) > MAX_LINE:
            raise refused(f"each line must be at most {MAX_LINE} characters (got {len(line)})")
        head, sep, body = line.partition(":")
        name, *params = head.split(";")
        name = name.strip().upper()
        if not sep or not body:
            raise refused(f"{line[:40]!r} is not an RFC 5545 line such as RRULE:FREQ=WEEKLY")
        if name == "RRULE":
            if rule is not None:
                raise refused("must hold exactly one RRULE line (send more dates as RDATE)")
            if params:
                raise refused("the RRULE line takes no parameters (RRULE:FREQ=...)")
            rule, normal = _read_rrule(body, tz=tz, all_day=all_day)
            lines.append("RRULE:" + normal)
        elif name in ("EXDATE", "RDATE"):
            values = _read_dates(name, params, body, tz=tz, all_day=all_day)
            (exdates if name == "EXDATE" else rdates).extend(values)
            if len(exdates) + len(rdates) > MAX_DATES:
                raise refused(f"must hold at most {MAX_DATES} EXDATE and RDATE values in all")
            lines.append(_date_line(name, values, all_day))
        else:
            raise refused(
                f"{name or line[:40]!r} is not a recurrence line: send one RRULE line and any "
                "EXDATE or RDATE lines"
            )
    if rule is None:
        raise refused('must hold one RRULE line, e.g. "RRULE:FREQ=WEEKLY;BYDAY=MO"')
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


def typed_lines(text: str) -> list[str]:
    """Recurrence lines typed one after another as one text (a form's field): separated by
    white space (no line holds any); a line without a name (``FREQ=WEEKLY;BYDAY=TU``) is the
    RRULE. Nothing is checked here: ``parse_recurrence`` does that."""
    return [
        line if line.upper().startswith(LINE_NAMES) else f"RRULE:{line}" for line in text.split()
    ]


def typed_text(lines: Sequence[str]) -> str:
    """Lines as ``typed_lines`` reads them back: one text."""
    return " ".join(lines)


def every(freq: str) -> list[str]:
    """The rule that repeats every day, week, month or year (``freq``: a FREQ) from the
    series' start, and says nothing else."""
    return [f"RRULE:FREQ={freq}"]


def every_of(lines: Sequence[str] | None) -> str | None:
    """The FREQ of a rule that says nothing else (``every``'s lines), else None."""
    return next((freq for freq in FREQUENCIES if lines == every(freq)), None)


def recurrence_change(sent: list[str] | None, current: list[str] | None) -> dict[str, Any]:
    """What an update that always carries an event's rule (a form that shows it) changes of
    it: nothing when the lines sent are the event's own (``current``: its ``recurrence``), so
    that posting the form unchanged leaves the series as it is; else ``recurrence``, the
    lines sent (None: the event no longer repeats)."""
    return {} if sent == current else {"recurrence": sent}


def _read_rrule(body: str, *, tz: tzinfo, all_day: bool) -> tuple[dict[str, Any], str]:
    parts: dict[str, str] = {}
    order: list[str] = []
    for item in body.split(";"):
        name, eq, text = item.partition("=")
        name = name.strip().upper()
        text = text.strip()
        if not eq or not text:
            raise refused(f"RRULE part {item[:40]!r} must be NAME=VALUE, e.g. FREQ=WEEKLY")
        if name not in _PARTS:
            raise refused(f"RRULE part {name[:40]!r} is not supported; known: {', '.join(_PARTS)}")
        if name in parts:
            raise refused(f"RRULE part {name} is given twice")
        parts[name] = text.upper() if name != "UNTIL" else text
        order.append(name)
    freq_name = parts.get("FREQ")
    if freq_name is None:
        raise refused("the RRULE needs FREQ (DAILY, WEEKLY, MONTHLY or YEARLY)")
    if freq_name in _REFUSED_FREQUENCIES:
        raise refused(f"FREQ={freq_name} is not supported: use DAILY, WEEKLY, MONTHLY or YEARLY")
    if freq_name not in FREQUENCIES:
        raise refused(f"FREQ={freq_name[:20]} is unknown: use DAILY, WEEKLY, MONTHLY or YEARLY")
    freq = FREQUENCIES[freq_name]
    if "COUNT" in parts and "UNTIL" in parts:
        raise refused("the RRULE must not have both COUNT and UNTIL (RFC 5545): keep one")
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
        by["byweekday"] = _read_byday(
            parts["BYDAY"], freq_name, "BYWEEKNO" in parts, monthly="BYMONTH" in parts
        )
    if "WKST" in parts:
        if parts["WKST"] not in WEEKDAYS:
            raise refused(f"WKST must be one of {', '.join(WEEKDAYS)}")
        by["wkst"] = WEEKDAYS.index(parts["WKST"])
    _check_combination(freq_name, parts, all_day)
    normal = ";".join(f"{name}={parts[name]}" for name in order)
    return out, normal


def _positive(text: str, name: str, greatest: int) -> int:
    if not _INT.match(text) or not 1 <= int(text) <= greatest:
        raise refused(f"{name} must be a whole number from 1 to {greatest}")
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
            raise refused(f"{name} values must be whole numbers from {span} (got {item[:20]!r})")
        values.append(int(item))
    return tuple(dict.fromkeys(values))


def _read_byday(text: str, freq_name: str, weekno: bool, *, monthly: bool) -> tuple[Any, ...]:
    """BYDAY's weekdays. A number counts within the month in a MONTHLY rule and in a YEARLY
    one with BYMONTH (RFC 5545 3.3.10: at most the fifth), else within the year."""
    days = []
    for item in text.split(","):
        match = _BYDAY.match(item.strip())
        if match is None:
            raise refused(
                f"BYDAY values are weekdays such as MO or 2TU or -1FR (got {item[:20]!r})"
            )
        n_text, day = match.groups()
        weekday = getattr(_rrule, day)
        if n_text:
            n = int(n_text)
            if freq_name not in ("MONTHLY", "YEARLY") or weekno:
                raise refused(
                    "BYDAY with a number (such as 2TU) needs FREQ=MONTHLY or FREQ=YEARLY "
                    "(and no BYWEEKNO)"
                )
            if n == 0 or abs(n) > (5 if freq_name == "MONTHLY" or monthly else 53):
                raise refused(f"BYDAY {item[:20]!r} names no such weekday of the period")
            weekday = weekday(n)
        days.append(weekday)
    return tuple(dict.fromkeys(days))


def _check_combination(freq_name: str, parts: dict[str, str], all_day: bool) -> None:
    """The RFC 5545 rules on which by-parts go with which FREQ, and ours."""
    if "BYWEEKNO" in parts and freq_name != "YEARLY":
        raise refused("BYWEEKNO needs FREQ=YEARLY")
    if "BYYEARDAY" in parts and freq_name in ("DAILY", "WEEKLY", "MONTHLY"):
        raise refused("BYYEARDAY needs FREQ=YEARLY")
    if "BYMONTHDAY" in parts and freq_name == "WEEKLY":
        raise refused("BYMONTHDAY cannot be used with FREQ=WEEKLY")
    if "BYSETPOS" in parts and not any(p.startswith("BY") and p != "BYSETPOS" for p in parts):
        raise refused("BYSETPOS needs another BY part (such as BYDAY) to pick from")
    times = ("BYHOUR", "BYMINUTE", "BYSECOND")
    if all_day and any(p in parts for p in times):
        raise refused(
            "an all-day series repeats whole days: BYHOUR, BYMINUTE, BYSECOND do not apply"
        )
    per_day = 1
    for name in times:
        if name in parts:
            per_day *= len(set(parts[name].split(",")))
    if per_day > MAX_TIMES_PER_DAY:
        raise refused(f"a rule may give at most {MAX_TIMES_PER_DAY} times a day (got {per_day})")


def _read_until(text: str, *, tz: tzinfo, all_day: bool) -> datetime:
    """UNTIL as UTC (timed series; a date means the end of that day) or a date (all-day)."""
    try:
        if DATE.match(text):
            day = date_of(text)
            if all_day:
                return datetime(day.year, day.month, day.day)
            value = localize(datetime.combine(day, time(23, 59, 59)), tz)
        else:
            value = date_time_of(text, tz)
            if all_day:
                local = value.astimezone(tz)
                return datetime(local.year, local.month, local.day)
        return check_instant(value)
    except ValueError as exc:
        raise refused(f"UNTIL {text[:30]!r} {exc}") from None


def date_of(text: str) -> date:
    match = DATE.match(text)
    if match is None:
        raise ValueError("must be a date such as 20260309")
    try:
        return date(*map(int, match.groups()))
    except ValueError:
        raise ValueError("is not a real date") from None


def date_time_of(text: str, tz: tzinfo) -> datetime:
    """``20260309T090000Z`` (UTC) or ``20260309T090000`` (in ``tz``), as UTC."""
    match = DATE_TIME.match(text)
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
            raise refused(
                f"{name} parameter {param[:40]!r} is not supported (VALUE=DATE or TZID=...)"
            )
    if all_day and value_type != "DATE":
        raise refused(f"an all-day series takes dates: {name};VALUE=DATE:20260309")
    if not all_day and value_type == "DATE":
        raise refused(
            f"a timed series takes date-times: {name}:20260309T090000Z or "
            f"{name};TZID=Europe/Berlin:20260309T100000"
        )
    local = tz
    if zone_name is not None:
        if all_day or not is_valid_zone(zone_name):
            raise refused(f"{name} TZID must be an IANA time zone such as Europe/Berlin")
        local = zone(zone_name)
    values = []
    for item in body.split(","):
        item = item.strip()
        try:
            if all_day:
                day = date_of(item)
                if not EARLIEST.year <= day.year <= LATEST.year - 1:
                    raise ValueError("is outside the dates this service accepts")
                values.append(datetime(day.year, day.month, day.day))
            else:
                if zone_name is not None and item.endswith("Z"):
                    raise ValueError("has both TZID and Z: send one")
                values.append(date_time_of(item, local))
        except ValueError as exc:
            raise refused(f"{name} value {item[:30]!r} {exc}") from None
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
        stamp = _stamp(naive_local(last, tz, True) - timedelta(days=1), True)
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
    at_key = exdate_key(at, rule, tz)
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
        if DATE.match(item):
            out.append(datetime.combine(date_of(item), time()))
        else:
            out.append(date_time_of(item, UTC))
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


def naive_local(value: datetime, tz: tzinfo, all_day: bool) -> datetime:
    local = value.astimezone(tz).replace(tzinfo=None)
    if all_day:
        return datetime(local.year, local.month, local.day)
    return local.replace(microsecond=0)


def to_utc(naive: datetime, tz: tzinfo) -> datetime:
    return localize(naive, tz).astimezone(UTC)


def exdate_key(instant: datetime, rule: Rule, tz: tzinfo) -> datetime:
    """How EXDATEs name ``instant``: itself to the second (timed) or its local date."""
    if not rule.all_day:
        return instant.replace(microsecond=0)
    local = instant.astimezone(tz)
    return datetime(local.year, local.month, local.day)


def from_key(value: datetime, rule: Rule, tz: tzinfo) -> datetime:
    """An EXDATE or RDATE value as an instant: itself, or the local midnight of a date."""
    return value if not rule.all_day else to_utc(value, tz)
