"""The time zone a ``TZID`` of an imported file names, found with bounded work.

A ``TZID`` is resolved, in order:

1. by its name (``resolve_tzid``): an IANA name (``Europe/Berlin``), a Windows zone name as
   Outlook writes it (``W. Europe Standard Time``, mapped with CLDR's table that ``icalendar``
   ships), or the IANA tail of a path-like TZID (``/mozilla.org/…/Europe/Berlin``);
2. else by the file's own ``VTIMEZONE`` for it (``FileZones``), read here and never handed to
   another library: its observances (``STANDARD``/``DAYLIGHT``) give the zone's transitions
   from 1900 to 2200, which are compared with every IANA zone for the year the zone is first
   used in (and the next): the IANA zone whose offsets agree at every transition and on the
   first of every month is the zone (among several, one whose city the TZID names, such as
   ``(UTC+01:00) Amsterdam, Berlin…``, else the first by name); when none agrees, the file's
   transitions themselves are the zone (``FileZone``);
3. else the events that use it are not imported (an error for their UID).

A ``VTIMEZONE`` is text from outside: reading one is bounded in steps whatever it says. An
observance's ``RRULE`` may only be ``FREQ=YEARLY`` or ``FREQ=MONTHLY`` with ``INTERVAL``,
``COUNT``, ``UNTIL``, ``BYMONTH``, ``BYMONTHDAY``, ``BYDAY``, ``BYSETPOS``, ``WKST`` and one
value each of ``BYHOUR``, ``BYMINUTE``, ``BYSECOND`` (what real zones use); it is expanded
month by month, each month looked at costing a unit of the file's ``MAX_ZONE_WORK`` (more for
long BYDAY, BYMONTHDAY and BYSETPOS lists), and never beyond the year 2200. A zone with
another rule, more than ``MAX_OBSERVANCES`` observances, an observance without ``DTSTART`` or
``TZOFFSETTO``, or whose reading would cost more than the file has left, is refused
(``ZoneRefused``, whose message says why): the events that use it are errors of their UIDs.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from icalendar import Component
from icalendar.timezone.windows_to_olson import WINDOWS_TO_OLSON

from calendar_service.platform.timeutil import is_valid_zone, zone

MAX_OBSERVANCES = 100
"""STANDARD and DAYLIGHT components in one VTIMEZONE."""
MAX_ZONE_WORK = 60_000
"""Units of work (a month of an observance's rule looked at, an RDATE value, an IANA zone
compared) spent reading the VTIMEZONEs of one file; a zone that would need more is refused."""
FIRST_YEAR = 1899  # transitions from here on are kept (the service's times start in 1900)
LAST_YEAR = 2200
_MATCH_COST = 50  # a comparison with the IANA zones (their offsets per year are cached)
_SUPPORTED_PARTS = {"FREQ", "INTERVAL", "COUNT", "UNTIL", "BYMONTH", "BYMONTHDAY", "BYDAY",
                    "BYSETPOS", "WKST", "BYHOUR", "BYMINUTE", "BYSECOND"}  # fmt: skip
_TIME_PARTS = (("BYHOUR", 23), ("BYMINUTE", 59), ("BYSECOND", 59))
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_BYDAY = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")
_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$")
_MAX_OFFSET = timedelta(hours=24)


class ZoneRefused(Exception):
    """A VTIMEZONE that cannot be read within the rules above; the message says why."""


def resolve_tzid(name: str) -> tzinfo | None:
    """The zone a TZID names: IANA, a Windows zone name (mapped), or the IANA tail of a
    path-like TZID; ``None`` when it is none of these."""
    text = name.strip().strip('"')
    if is_valid_zone(text):
        return zone(text)
    if text in WINDOWS_TO_OLSON:
        return zone(WINDOWS_TO_OLSON[text])
    parts = [p for p in text.split("/") if p]
    for size in (3, 2):
        if len(parts) >= size and is_valid_zone("/".join(parts[-size:])):
            return zone("/".join(parts[-size:]))
    return None


@dataclass(slots=True)
class Work:
    """The units of work a file's VTIMEZONEs may still cost."""

    limit: int = MAX_ZONE_WORK
    spent: int = 0

    def charge(self, units: int) -> None:
        """Spend ``units``, or refuse (spending nothing) if that would pass the limit."""
        if self.spent + units > self.limit:
            raise ZoneRefused(
                "reading the file's time zones would take too much work (their rules repeat "
                "too often, or there are too many of them)"
            )
        self.spent += units


@dataclass(slots=True)
class FileZones:
    """The VTIMEZONEs of one VCALENDAR by TZID, each read when an event first uses it."""

    components: dict[str, Component]
    work: Work = field(default_factory=Work)
    _found: dict[str, tzinfo | ZoneRefused] = field(default_factory=dict)

    @classmethod
    def of(cls, vcalendar: Component, work: Work | None = None) -> FileZones:
        found: dict[str, Component] = {}
        for component in vcalendar.subcomponents:
            if (component.name or "").upper() == "VTIMEZONE":
                tzid = component.get("TZID")
                if tzid is not None and not isinstance(tzid, list):
                    found.setdefault(str(tzid), component)
        return cls(found, work or Work())

    def zone(self, tzid: str, near: datetime | None) -> tzinfo | None:
        """The zone the file's VTIMEZONE ``tzid`` describes (``near``: the first time read
        in it, for the year to compare with the IANA zones); ``None`` if the file has none;
        ``ZoneRefused`` if it cannot be read (each later use raises it again)."""
        known = self._found.get(tzid)
        if known is None:
            component = self.components.get(tzid)
            if component is None:
                return None
            try:
                own = read_vtimezone(component, self.work, tzid)
                self.work.charge(_MATCH_COST)
                year = near.year if near is not None else datetime.now(UTC).year
                known = iana_match(own, year, tzid) or own
            except ZoneRefused as exc:
                known = exc
            self._found[tzid] = known
        if isinstance(known, ZoneRefused):
            raise known
        return known


# ---------------------------------------------------------------------------------------------
# A zone made of a file's transitions


class FileZone(tzinfo):
    """A zone given by its transitions (UTC instants) and the offset after each: PEP 495
    folds as ``zoneinfo`` has them (a wall time in a gap is read with the offset before it;
    one in an overlap is its first occurrence unless ``fold=1``). Every lookup is a bisection."""

    def __init__(
        self, name: str, instants: list[datetime], offsets: list[timedelta], names: list[str]
    ) -> None:
        # ``offsets`` and ``names`` have one more item than ``instants``: [0] is before the first.
        self._name = name
        self._utc = instants
        self._offsets = offsets
        self._names = names
        bigger = [max(offsets[i], offsets[i + 1]) for i in range(len(instants))]
        smaller = [min(offsets[i], offsets[i + 1]) for i in range(len(instants))]
        self._wall = (
            [t + o for t, o in zip(instants, bigger, strict=True)],
            [t + o for t, o in zip(instants, smaller, strict=True)],
        )

    def _index(self, dt: datetime) -> int:
        return bisect.bisect_right(self._wall[dt.fold], dt.replace(tzinfo=None))

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return self._offsets[0 if dt is None else self._index(dt)]

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str:
        return self._names[0 if dt is None else self._index(dt)]

    def fromutc(self, dt: datetime) -> datetime:
        utc = dt.replace(tzinfo=None)
        index = bisect.bisect_right(self._utc, utc)
        offset = self._offsets[index]
        local = utc + offset
        fold = 0
        if index > 0:
            before = self._offsets[index - 1]
            if before > offset and local < self._utc[index - 1] + before:
                fold = 1  # the second time round the repeated hour
        return local.replace(tzinfo=self, fold=fold)

    @property
    def transitions(self) -> int:
        return len(self._utc)

    def __repr__(self) -> str:
        return f"FileZone({self._name!r})"

    def __str__(self) -> str:
        return self._name


@dataclass(slots=True)
class _Observance:
    start: datetime  # naive wall time, in ``before``
    before: timedelta
    after: timedelta
    name: str
    rule: str | None
    rdates: list[Any]


def read_vtimezone(component: Component, work: Work, tzid: str) -> FileZone:
    """The ``FileZone`` a VTIMEZONE describes (see the module's docstring for the bounds)."""
    observances = [
        c for c in component.subcomponents if (c.name or "").upper() in ("STANDARD", "DAYLIGHT")
    ]
    if not observances:
        raise ZoneRefused("it has no STANDARD or DAYLIGHT observance")
    if len(observances) > MAX_OBSERVANCES:
        raise ZoneRefused(
            f"it has {len(observances)} observances (at most {MAX_OBSERVANCES} are read)"
        )
    work.charge(len(observances))
    read = [_observance(o) for o in observances]
    changes: list[tuple[datetime, timedelta, str]] = []
    for observance in read:
        for local in _onsets(observance, work):
            changes.append((local - observance.before, observance.after, observance.name))
    changes.sort(key=lambda c: c[0])
    first = min(read, key=lambda o: o.start)
    instants: list[datetime] = []
    offsets = [first.before]
    names = [first.name]
    for instant, offset, name in changes:
        if instants and instant == instants[-1]:  # two onsets at once: the later-listed wins
            offsets[-1], names[-1] = offset, name
            continue
        if offset == offsets[-1]:
            names[-1] = name
            continue
        instants.append(instant)
        offsets.append(offset)
        names.append(name)
    return FileZone(tzid, instants, offsets, names)


def _offset_of(component: Component, name: str) -> timedelta | None:
    value = component.get(name)
    offset = getattr(value, "td", None)
    if value is None:
        return None
    if not isinstance(offset, timedelta) or abs(offset) >= _MAX_OFFSET:
        raise ZoneRefused(f"its {name} is not a UTC offset such as +0100")
    return offset


def _observance(component: Component) -> _Observance:
    start = getattr(component.get("DTSTART"), "dt", None)
    if isinstance(component.get("DTSTART"), list):
        raise ZoneRefused("an observance has more than one DTSTART")
    if isinstance(start, datetime):
        start = start.replace(tzinfo=None)
    elif isinstance(start, date):
        start = datetime(start.year, start.month, start.day)
    else:
        raise ZoneRefused("an observance has no DTSTART")
    after = _offset_of(component, "TZOFFSETTO")
    if after is None:
        raise ZoneRefused("an observance has no TZOFFSETTO")
    before = _offset_of(component, "TZOFFSETFROM") or after
    rule = component.get("RRULE")
    if isinstance(rule, list):
        raise ZoneRefused("an observance has more than one RRULE")
    rdates = component.get("RDATE")
    name = component.get("TZNAME")
    return _Observance(
        start=start,
        before=before,
        after=after,
        name=str(name if name is not None and not isinstance(name, list) else "")[:40],
        rule=None if rule is None else rule.to_ical().decode(errors="replace"),
        rdates=[] if rdates is None else rdates if isinstance(rdates, list) else [rdates],
    )


def _onsets(observance: _Observance, work: Work) -> Iterator[datetime]:
    """The observance's onsets (wall times, in the offset before), from ``FIRST_YEAR`` to
    ``LAST_YEAR``: its DTSTART, its RDATEs and its RRULE's instances."""
    if observance.start.year <= LAST_YEAR:
        yield observance.start
    for prop in observance.rdates:
        for item in getattr(prop, "dts", []):
            work.charge(1)
            value = item.dt
            if isinstance(value, tuple):  # a PERIOD: its start
                value = value[0]
            if isinstance(value, datetime):
                yield value.replace(tzinfo=None)
            elif isinstance(value, date):
                yield datetime(value.year, value.month, value.day)
    if observance.rule is not None:
        yield from _rule_onsets(observance, work)


@dataclass(slots=True)
class _ZoneRule:
    yearly: bool
    interval: int = 1
    count: int | None = None
    until: datetime | None = None  # UTC, naive
    months: tuple[int, ...] = ()
    monthdays: tuple[int, ...] = ()
    days: tuple[tuple[int, int], ...] = ()  # (ordinal or 0, weekday)
    setpos: tuple[int, ...] = ()
    at: time | None = None  # BYHOUR/BYMINUTE/BYSECOND, else DTSTART's time


def _int(text: str, name: str, least: int, greatest: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ZoneRefused(f"its RRULE's {name} is not a whole number") from None
    if not least <= abs(value) <= greatest:
        raise ZoneRefused(f"its RRULE's {name} value {value} is out of range")
    return value


def _zone_rule(text: str, observance: _Observance) -> _ZoneRule:
    parts: dict[str, str] = {}
    for item in text.split(";"):
        name, _, value = item.partition("=")
        parts[name.strip().upper()] = value.strip().upper()
    freq = parts.get("FREQ", "")
    if freq not in ("YEARLY", "MONTHLY"):
        raise ZoneRefused(
            f"an observance repeats with FREQ={freq[:20] or '(none)'}: time zone rules are "
            "read only with FREQ=YEARLY or FREQ=MONTHLY"
        )
    unknown = sorted(set(parts) - _SUPPORTED_PARTS)
    if unknown:
        raise ZoneRefused(
            f"an observance's RRULE uses {', '.join(u[:20] for u in unknown[:3])}, which time "
            "zone rules are not read with"
        )
    rule = _ZoneRule(yearly=freq == "YEARLY")
    if "INTERVAL" in parts:
        rule.interval = _int(parts["INTERVAL"], "INTERVAL", 1, 1000)
        if rule.interval < 1:
            raise ZoneRefused("its RRULE's INTERVAL must be positive")
    if "COUNT" in parts:
        rule.count = _int(parts["COUNT"], "COUNT", 1, 10**6)
        if rule.count < 1:
            raise ZoneRefused("its RRULE's COUNT must be positive")
    if "UNTIL" in parts:
        rule.until = _until(parts["UNTIL"], observance)
    if "BYMONTH" in parts:
        rule.months = tuple(
            sorted({_int(m, "BYMONTH", 1, 12) for m in parts["BYMONTH"].split(",")[:12]})
        )
        if min(rule.months) < 1:
            raise ZoneRefused("its RRULE's BYMONTH values must be months 1 to 12")
    if "BYMONTHDAY" in parts:
        rule.monthdays = tuple(
            _int(d, "BYMONTHDAY", 1, 31) for d in parts["BYMONTHDAY"].split(",")[:31]
        )
    if "BYDAY" in parts:
        days = []
        for item in parts["BYDAY"].split(",")[:35]:
            match = _BYDAY.match(item.strip())
            if match is None:
                raise ZoneRefused(f"its RRULE's BYDAY value {item[:20]!r} is not a weekday")
            ordinal = _int(match.group(1), "BYDAY", 1, 5) if match.group(1) else 0
            days.append((ordinal, _WEEKDAYS.index(match.group(2))))
        rule.days = tuple(days)
        if rule.yearly and not rule.months and any(o for o, _ in days):
            raise ZoneRefused("its RRULE's BYDAY has a number (such as -1SU) without BYMONTH")
    if any(name in parts for name, _ in _TIME_PARTS):
        clock: list[int] = []
        for name, greatest in _TIME_PARTS:
            given = parts.get(name)
            if given is not None and "," in given:
                raise ZoneRefused(f"its RRULE has more than one {name} value")
            default = int(getattr(observance.start, name[2:].lower()))
            number = default if given is None else _int(given, name, 0, greatest)
            if number < 0:
                raise ZoneRefused(f"its RRULE's {name} must not be negative")
            clock.append(number)
        rule.at = time(clock[0], clock[1], clock[2])
    if "BYSETPOS" in parts:
        rule.setpos = tuple(_int(p, "BYSETPOS", 1, 366) for p in parts["BYSETPOS"].split(",")[:366])
    return rule


def _until(text: str, observance: _Observance) -> datetime:
    match = _STAMP.match(text)
    if match is None:
        raise ZoneRefused("its RRULE's UNTIL is not a date or date-time")
    year, month, day, hour, minute, second, utc = match.groups()
    try:
        value = datetime(int(year), int(month), int(day), int(hour or 23), int(minute or 59),
                         int(second or 59))  # fmt: skip
    except ValueError:
        raise ZoneRefused("its RRULE's UNTIL is not a real date") from None
    return value if utc else value - observance.before


def _rule_onsets(observance: _Observance, work: Work) -> Iterator[datetime]:
    """The RRULE's instances after DTSTART, month by month, each month a unit of work (and
    one more per 8 BYDAY and BYMONTHDAY values; per period, one per 8 BYSETPOS values)."""
    assert observance.rule is not None
    rule = _zone_rule(observance.rule, observance)
    start = observance.start
    step = rule.interval * (12 if rule.yearly else 1)
    index = start.year * 12 + start.month - 1  # the period's first month, as a month number
    if rule.yearly:
        index = start.year * 12
    if rule.count is None and index // 12 < FIRST_YEAR:  # skip what cannot matter, aligned
        periods = (FIRST_YEAR * 12 - index + step - 1) // step
        index += periods * step
    left = rule.count
    at = rule.at or start.time()
    while index // 12 <= LAST_YEAR:
        year = index // 12
        if rule.yearly:
            months = rule.months or (
                tuple(range(1, 13)) if rule.monthdays or rule.days else (start.month,)
            )
        else:
            month = index % 12 + 1
            months = (month,) if not rule.months or month in rule.months else ()
        found: list[datetime] = []
        if rule.setpos:  # picked per period: a unit per 8 positions
            work.charge(len(rule.setpos) // 8)
        for month in months:
            work.charge(1 + (len(rule.days) + len(rule.monthdays)) // 8)
            found.extend(
                datetime.combine(date(year, month, d), at) for d in _days(year, month, rule, start)
            )
        if rule.setpos and found:
            found = sorted({found[p - 1 if p > 0 else p] for p in rule.setpos
                            if -len(found) <= p <= len(found) and p != 0})  # fmt: skip
        for onset in found:
            if onset <= start:
                continue
            if rule.until is not None and onset - observance.before > rule.until:
                return
            if left is not None:
                if left <= 1:  # DTSTART was the first of COUNT
                    return
                left -= 1
            yield onset
        index += step
    return


def _days(year: int, month: int, rule: _ZoneRule, start: datetime) -> list[int]:
    last = calendar.monthrange(year, month)[1]
    days: set[int] | None = None
    if rule.monthdays:
        days = {d if d > 0 else last + 1 + d for d in rule.monthdays}
        days = {d for d in days if 1 <= d <= last}
    if rule.days:
        first = calendar.weekday(year, month, 1)
        picked: set[int] = set()
        for ordinal, weekday in rule.days:
            matching = list(range(1 + (weekday - first) % 7, last + 1, 7))
            if ordinal == 0:
                picked.update(matching)
            elif -len(matching) <= ordinal <= len(matching):
                picked.add(matching[ordinal - 1 if ordinal > 0 else ordinal])
        days = picked if days is None else days & picked
    if days is None:
        return [start.day] if start.day <= last else []
    return sorted(days)


# ---------------------------------------------------------------------------------------------
# The IANA zone a file's zone is


@functools.lru_cache(maxsize=1)
def _iana_names() -> tuple[str, ...]:
    from zoneinfo import available_timezones

    preferred = set(WINDOWS_TO_OLSON.values())
    names = [n for n in available_timezones() if is_valid_zone(n)]
    # The zones CLDR maps Windows names to first (the usual name of a zone), then the rest.
    return tuple(sorted(names, key=lambda n: (n not in preferred, n.startswith("Etc/"), n)))


@functools.lru_cache(maxsize=8)
def _by_offsets(year: int) -> dict[tuple[timedelta, ...], tuple[str, ...]]:
    """The IANA zones by their offsets on the first of each month of ``year``."""
    groups: dict[tuple[timedelta, ...], list[str]] = {}
    points = [datetime(year, m, 1, 12, tzinfo=UTC) for m in range(1, 13)]
    for name in _iana_names():
        tz = zone(name)
        key = tuple(p.astimezone(tz).utcoffset() or timedelta(0) for p in points)
        groups.setdefault(key, []).append(name)
    return {k: tuple(v) for k, v in groups.items()}


def iana_match(own: FileZone, year: int, tzid: str) -> tzinfo | None:
    """The IANA zone whose offsets agree with ``own`` in ``year`` and the year after (at
    every transition of ``own``, just before it, and on the first of each month); ``None``
    if there is none."""
    year = min(max(year, FIRST_YEAR + 1), LAST_YEAR - 1)
    points = [datetime(year, m, 1, 12, tzinfo=UTC) for m in range(1, 13)]
    key = tuple(p.astimezone(own).utcoffset() or timedelta(0) for p in points)
    candidates = _by_offsets(year).get(key, ())
    if not candidates:
        return None
    probes = [datetime(y, m, 1, 12, tzinfo=UTC) for y in (year, year + 1) for m in range(1, 13)]
    low, high = datetime(year, 1, 1), datetime(year + 2, 1, 1)
    for instant in own._utc[bisect.bisect_left(own._utc, low) : bisect.bisect_left(own._utc, high)]:
        probes += [
            instant.replace(tzinfo=UTC),
            (instant - timedelta(seconds=1)).replace(tzinfo=UTC),
        ]
    wanted = [p.astimezone(own).utcoffset() for p in probes]
    hint = re.sub(r"[^a-z]+", " ", tzid.lower())
    agreeing = []
    for name in candidates:
        tz = zone(name)
        if all(p.astimezone(tz).utcoffset() == w for p, w in zip(probes, wanted, strict=True)):
            agreeing.append(name)
    if not agreeing:
        return None
    for name in agreeing:  # one whose city the TZID names: "(UTC+01:00) Amsterdam, Berlin…"
        city = name.rsplit("/", 1)[-1].replace("_", " ").lower()
        if re.search(rf"\b{re.escape(city)}\b", hint):
            return zone(name)
    return zone(agreeing[0])


__all__ = ["MAX_OBSERVANCES", "MAX_ZONE_WORK", "FileZone", "FileZones", "Work", "ZoneRefused",
           "resolve_tzid"]  # fmt: skip
