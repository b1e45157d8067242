"""The owner's rules for agents applied to times, without the database (``calendar.rules``
holds them; docs/rules.md): ``broken`` is the rules' verdict on one time, in words a person
and a model can act on, ``passes`` whether it keeps them all, and ``SlotFilter`` what
``findFreeTime`` keeps of its free time (the times a meeting may lie in at all, and each
candidate checked as ``passes`` checks it, from facts worked out once a local day).
``rule_check`` reads what they need and applies them to writes and to free time."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import NamedTuple

from calendar_service.calendar.events.busy import Busy
from calendar_service.calendar.rules import WEEKDAYS, Rules
from calendar_service.platform.timeutil import format_in, localize, union_of, utc_text

MAX_OCCURRENCES = 400
"""Occurrences of one series a check looks at, at most (a daily series over 90 days is 90)."""

DAY = timedelta(days=1)

"""How far before and after the time asked the suggestions are looked for."""
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

Span = tuple[datetime, datetime]


@dataclass(slots=True)
class Verdict:
    """What the rules say of a write: ``errors`` (``{rule, message}``, each rule once) and
    ``suggestions`` (``{startsAt, endsAt}``); ``rules`` the owner's."""

    rules: Rules
    errors: list[dict[str, str]] = field(default_factory=list)
    suggestions: list[dict[str, str]] = field(default_factory=list)

    @property
    def asks(self) -> bool:
        """Whether the owner asked to decide such writes (``onViolation: ask``)."""
        return self.rules.on_violation == "ask"


class Meetings:
    """The owner's meetings as (start, end, id), sorted by start, for the pure checks."""

    def __init__(self, items: Iterable[Busy]) -> None:
        found = [(_instant(b[1]), _instant(b[2]), b[3]) for b in items if b[2] > b[1]]
        found.sort()
        self.items = found
        self.starts = [m[0] for m in found]
        self.longest = max([e - s for s, e, _ in found], default=timedelta(0))

    def overlapping(self, low: datetime, high: datetime, skip: str | None) -> list[Span]:
        """The meetings overlapping ``[low, high)``, but the one whose id is ``skip``."""
        first = bisect.bisect_left(self.starts, low - self.longest)
        last = bisect.bisect_left(self.starts, high)
        return [(s, e) for s, e, i in self.items[first:last] if e > low and s < high and i != skip]

    def near(self, low: datetime, high: datetime) -> bool:
        """Whether a meeting overlaps ``[low, high)``."""
        first = bisect.bisect_left(self.starts, low - self.longest)
        last = bisect.bisect_left(self.starts, high)
        return any(e > low and s < high for s, e, _ in self.items[first:last])

    def starting(self, low: datetime, high: datetime, skip: str | None) -> int:
        first, last = bisect.bisect_left(self.starts, low), bisect.bisect_left(self.starts, high)
        if skip is None:
            return last - first
        return sum(1 for _, _, i in self.items[first:last] if i != skip)


@functools.lru_cache(maxsize=16384)
def instant(text: str) -> datetime:
    """A stored UTC text as an instant (kept: the same busy times are read again and again;
    ``availability`` reads them with it too)."""
    return datetime.fromisoformat(text).astimezone(UTC)


_instant = instant


@functools.lru_cache(maxsize=8192)
def _at(day: date, clock: timedelta, tz: tzinfo) -> datetime:
    """``clock`` (00:00 to 24:00) on the local ``day``, in UTC (a wall time in a spring gap
    moves forward by the gap; 24:00 is the next midnight)."""
    wall = datetime.combine(day, time()) + clock
    return localize(wall, tz).astimezone(UTC)


def _days(start: datetime, end: datetime, tz: tzinfo) -> list[date]:
    """The local days ``[start, end)`` touches (its start's day for a zero-length one)."""
    first = start.astimezone(tz).date()
    last = max((end - timedelta(microseconds=1)).astimezone(tz).date(), first)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _day_text(day: date) -> str:
    return f"{_DAY_NAMES[day.weekday()]} {day.isoformat()}"


def _clock_text(clock: timedelta) -> str:
    minutes = int(clock.total_seconds()) // 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def broken(
    rules: Rules,
    tz: tzinfo,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    meetings: Meetings,
    skip: str | None,
    series: bool = False,
) -> list[tuple[str, str]]:
    """The rules a meeting at ``[start, end)`` (UTC) breaks, as ``(rule, message)`` in the
    order of ``rules.RULE_NAMES``, among the owner's ``meetings`` (the one whose id is
    ``skip`` is this meeting itself) in the calendar's zone ``tz``. ``series``: an occurrence
    of a series (``maxDaysAhead`` binds its first one only)."""
    found: list[tuple[str, str]] = []
    days = _days(start, end, tz)

    def when() -> str:
        return f"{start.astimezone(tz):%Y-%m-%d %H:%M} ({getattr(tz, 'key', 'UTC')})"

    if rules.hours is not None and not _within_hours(rules, tz, start, end):
        day = days[0]
        spans = rules.hours.get(day.weekday(), ())
        hours = ", ".join(f"{_clock_text(a)}-{_clock_text(b)}" for a, b in spans)
        found.append(
            (
                "workingHours",
                f"{when()} to {end.astimezone(tz):%H:%M} is outside the owner's working hours"
                + (
                    f" on {_DAY_NAMES[day.weekday()]}s ({hours})."
                    if hours
                    else f" ({_DAY_NAMES[day.weekday()]} has none)."
                ),
            )
        )
    if rules.buffer is not None:
        near = meetings.overlapping(start - rules.buffer, end + rules.buffer, skip)
        if near:
            s, e = near[0]
            buffer = int(rules.buffer.total_seconds() // 60)
            found.append(
                (
                    "bufferMinutes",
                    f"{when()} leaves less than {buffer} minutes between it and the meeting "
                    f"{format_in(s, tz)} to {format_in(e, tz)}; the owner keeps {buffer} "
                    "minutes free before and after each meeting.",
                )
            )
    if rules.max_meetings is not None:
        day = days[0]
        low, high = _at(day, timedelta(0), tz), _at(day, timedelta(days=1), tz)
        count = meetings.starting(low, high, skip) + 1
        if count > rules.max_meetings:
            found.append(
                (
                    "maxMeetingsPerDay",
                    f"It would be meeting {count} on {_day_text(day)}; the owner allows "
                    f"{rules.max_meetings} a day.",
                )
            )
    if rules.max_minutes is not None:
        for day in days:
            minutes = _minutes_on(day, tz, start, end, meetings, skip)
            if minutes > rules.max_minutes:
                found.append(
                    (
                        "maxMeetingMinutesPerDay",
                        f"It would make {minutes} minutes of meetings on {_day_text(day)}; "
                        f"the owner allows {rules.max_minutes} a day.",
                    )
                )
                break
    if rules.focus is not None:
        for day in days:
            message = _focus_broken(rules, tz, day, start, end, meetings, skip)
            if message is not None:
                found.append(("focus", message))
                break
    if rules.no_meeting_days:
        for day in days:
            if day.weekday() in rules.no_meeting_days:
                found.append(
                    (
                        "noMeetingDays",
                        f"{_day_text(day)} is a {WEEKDAYS[day.weekday()]}, a day the owner "
                        "keeps free of meetings.",
                    )
                )
                break
    if rules.min_notice is not None and start < now + rules.min_notice:
        notice = int(rules.min_notice.total_seconds() // 60)
        found.append(
            (
                "minNoticeMinutes",
                f"{when()} is less than {notice} minutes from now; the owner wants at least "
                f"{notice} minutes' notice.",
            )
        )
    if (
        rules.max_days_ahead is not None
        and not series
        and start > now + timedelta(days=rules.max_days_ahead)
    ):
        found.append(
            (
                "maxDaysAhead",
                f"{when()} is more than {rules.max_days_ahead} days ahead; the owner allows "
                f"booking up to {rules.max_days_ahead} days ahead.",
            )
        )
    if rules.max_duration is not None and end - start > rules.max_duration:
        limit = int(rules.max_duration.total_seconds() // 60)
        minutes = int((end - start).total_seconds() // 60)
        found.append(
            (
                "maxDurationMinutes",
                f"It lasts {minutes} minutes; the owner allows meetings of at most {limit}.",
            )
        )
    return found


def _within_hours(rules: Rules, tz: tzinfo, start: datetime, end: datetime) -> bool:
    """Whether ``[start, end)`` lies within the working hours (those of consecutive days
    joined: a meeting may cross midnight only from one working span into the next)."""
    first = start.astimezone(tz).date() - timedelta(days=1)
    last = end.astimezone(tz).date()
    spans: list[Span] = []
    day = first
    while day <= last:
        spans.extend(_working_spans(rules, day, tz))
        day += timedelta(days=1)
    return any(s <= start and end <= e for s, e in union_of(spans))


def _working_spans(rules: Rules, day: date, tz: tzinfo) -> list[Span]:
    """The working hours of the local ``day``, as instants (worked out once per rules)."""
    key = ("hours", day, tz)
    found: list[Span] | None = rules.memo.get(key)
    if found is None:
        assert rules.hours is not None
        found = [(_at(day, a, tz), _at(day, b, tz)) for a, b in rules.hours.get(day.weekday(), ())]
        if len(rules.memo) < 4096:
            rules.memo[key] = found
    return found


def _focus_broken(
    rules: Rules,
    tz: tzinfo,
    day: date,
    start: datetime,
    end: datetime,
    meetings: Meetings,
    skip: str | None,
) -> str | None:
    """Why the meeting breaks the focus rule on ``day``, or ``None``: on a working day whose
    focus window it overlaps, no free block of the length asked would be left there."""
    assert rules.focus is not None
    length, a, b = rules.focus
    if not rules.working_day(day.weekday()):
        return None
    low, high = _at(day, a, tz), _at(day, b, tz)
    if not (start < high and end > low):
        return None
    if _longest_free(low, high, meetings.overlapping(low, high, skip), start, end) >= length:
        return None
    minutes = int(length.total_seconds() // 60)
    return (
        f"It would leave no free block of {minutes} minutes between {_clock_text(a)} and "
        f"{_clock_text(b)} on {_day_text(day)}; the owner keeps one for focus on working days."
    )


def passes(
    rules: Rules,
    tz: tzinfo,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    meetings: Meetings,
    skip: str | None = None,
) -> bool:
    """Whether a meeting at ``[start, end)`` would keep every rule: ``broken`` says none, the
    rules that need no counting tried first (``findFreeTime`` asks of many times)."""
    if not _timely(rules, start, end, now):
        return False
    if rules.no_meeting_days and any(
        d.weekday() in rules.no_meeting_days for d in _days(start, end, tz)
    ):
        return False
    if rules.hours is not None and not _within_hours(rules, tz, start, end):
        return False
    buffer = rules.buffer
    if buffer is not None and meetings.overlapping(start - buffer, end + buffer, skip):
        return False
    days = _days(start, end, tz)
    if rules.max_meetings is not None:
        low, high = _at(days[0], timedelta(0), tz), _at(days[0], DAY, tz)
        if meetings.starting(low, high, skip) + 1 > rules.max_meetings:
            return False
    if rules.max_minutes is not None:
        for day in days:
            if _minutes_on(day, tz, start, end, meetings, skip) > rules.max_minutes:
                return False
    if rules.focus is not None:
        for day in days:
            if _focus_broken(rules, tz, day, start, end, meetings, skip) is not None:
                return False
    return True


def _timely(rules: Rules, start: datetime, end: datetime, now: datetime) -> bool:
    """Whether a meeting at ``[start, end)`` keeps the rules that need no calendar: its
    length, the notice and the days ahead."""
    if rules.max_duration is not None and end - start > rules.max_duration:
        return False
    if rules.min_notice is not None and start < now + rules.min_notice:
        return False
    return rules.max_days_ahead is None or start <= now + timedelta(days=rules.max_days_ahead)


def _minutes_on(
    day: date, tz: tzinfo, start: datetime, end: datetime, meetings: Meetings, skip: str | None
) -> int:
    """Minutes of meetings on the local ``day`` with one at ``[start, end)`` (overlaps once)."""
    low, high = _at(day, timedelta(0), tz), _at(day, DAY, tz)
    return _day_minutes(low, high, [*meetings.overlapping(low, high, skip), (start, end)])


def _day_minutes(low: datetime, high: datetime, busy: list[Span]) -> int:
    """Minutes of ``[low, high)`` that ``busy`` takes (overlaps once)."""
    return _minutes_of(low, high, union_of(busy))


def _minutes_of(low: datetime, high: datetime, joined: list[Span]) -> int:
    """Minutes of ``[low, high)`` that ``joined`` (``union_of``'s, each overlapping it) take."""
    taken = _NONE
    for s, e in joined:
        taken += min(e, high) - max(s, low)
    return int(taken.total_seconds() // 60)


class SlotFilter:
    """What ``findFreeTime`` keeps of its free time under the rules binding the key:
    ``clip`` cuts free intervals to the times a meeting may lie in at all (working hours, not
    on a no-meeting day, after the notice, within the days ahead), ``keeps`` says whether a
    meeting at ``[start, end)`` keeps every rule: what ``passes`` says, from what is worked
    out once for each local day a candidate touches (its working spans joined with the day
    before's, its meetings' count, minutes and joined spans, those near its focus window), so
    that the next candidate on that day costs a few comparisons."""

    __slots__ = (
        "_facts",
        "_last",
        "_latest",
        "_longest",
        "_soonest",
        "meetings",
        "now",
        "rules",
        "tz",
    )

    def __init__(self, rules: Rules, tz: tzinfo, now: datetime, meetings: Meetings) -> None:
        self.rules, self.tz, self.now, self.meetings = rules, tz, now, meetings
        self._soonest = now + rules.min_notice if rules.min_notice is not None else None
        self._latest = (
            now + timedelta(days=rules.max_days_ahead) if rules.max_days_ahead is not None else None
        )
        self._longest = rules.max_duration if rules.max_duration is not None else timedelta.max
        self._facts: dict[date, _DayFacts] = {}
        self._last: _DayFacts | None = None

    def keeps(self, start: datetime, end: datetime) -> bool:
        length = end - start
        if length > self._longest:
            return False
        if self._soonest is not None and start < self._soonest:
            return False
        if self._latest is not None and start > self._latest:
            return False
        day = self._last
        if day is None or not day.low <= start < day.high or end > day.high:  # another day
            first = start.astimezone(self.tz).date()
            if max((end - _TICK).astimezone(self.tz).date(), first) != first:
                return self._keeps_across(start, end)
            day = self._last = self._day(first)
        if day.full:  # a no-meeting day, or as many meetings as the rules allow
            return False
        if day.hours is not None:
            for s, e in day.hours:
                if s <= start and end <= e:
                    break
            else:
                return False
        for s, e in day.fenced:  # the meetings a buffer reaches, widened by it
            if e > start and s < end:
                return False
        # Counted against the day's minutes only when longer than the minutes left.
        if length >= day.room and day.minutes_with(start, end) > (self.rules.max_minutes or 0):
            return False
        focus = day.focus
        if focus is not None and start < focus[1] and end > focus[0]:
            for s, e in day.gaps:  # ``focus_kept``
                if start >= s or end <= e:
                    break
            else:
                return False
        return True

    def _keeps_across(self, start: datetime, end: datetime) -> bool:
        """``keeps`` for a meeting across midnight (local days of its own)."""
        rules, tz = self.rules, self.tz
        days = _days(start, end, tz)
        if rules.no_meeting_days and any(d.weekday() in rules.no_meeting_days for d in days):
            return False
        if rules.hours is not None and not _within_hours(rules, tz, start, end):
            return False
        if rules.buffer is not None and self.meetings.near(
            start - rules.buffer, end + rules.buffer
        ):
            return False
        if rules.max_meetings is not None and self._day(days[0]).count + 1 > rules.max_meetings:
            return False
        for facts in map(self._day, days):
            if rules.max_minutes is not None and facts.minutes_with(start, end) > rules.max_minutes:
                return False
            if facts.focus is not None and not facts.focus_kept(start, end):
                return False
        return True

    def _day(self, day: date) -> _DayFacts:
        found = self._facts.get(day)
        if found is None:
            found = self._facts[day] = _DayFacts(self.rules, self.tz, day, self.meetings)
        return found

    def clip(self, free: Iterable[Span]) -> Iterator[Span]:
        """``free`` (in order, disjoint) cut lazily: a search that stops at its first slots
        works out the allowed spans of the days it reaches only."""
        rules = self.rules
        floor, ceiling = self._soonest, self._latest
        allowed = None
        if rules.hours is not None or rules.no_meeting_days:
            allowed = _Ahead(rules, self.tz)
        for start, end in free:
            if floor is not None:
                start = max(start, floor)
            if ceiling is not None:
                end = min(end, ceiling + DAY)  # a meeting starts by then, lasts a day at most
            if start >= end:
                continue
            if allowed is None:
                yield start, end
                continue
            yield from allowed.within(start, end)


class _Ahead:
    """The spans a meeting may lie in by working hours and no-meeting days (``_allowed``),
    joined across midnight, worked out a local day at a time as ``within`` is asked of later
    and later intervals."""

    __slots__ = ("_day", "_done", "_edge", "_spans", "rules", "tz")

    def __init__(self, rules: Rules, tz: tzinfo) -> None:
        self.rules, self.tz = rules, tz
        self._spans: list[Span] = []  # joined, in order; the last may grow yet
        self._day: date | None = None  # the last day whose spans are in
        self._edge: datetime | None = None  # the end of that day
        self._done = 0  # spans before this one end before every interval asked from now on

    def within(self, start: datetime, end: datetime) -> list[Span]:
        """The parts of ``[start, end)`` in the allowed spans (``start`` at or after the
        previous call's)."""
        rules, tz, spans = self.rules, self.tz, self._spans
        day, edge = self._day, self._edge
        if day is None or edge is None:
            day = start.astimezone(tz).date() - 2 * DAY
            edge = _at(day, DAY, tz)
        while edge <= end:  # the days up to the one ``end`` is in
            day += DAY
            low, edge, off, _, _ = _frame(rules, tz, day)
            if off:
                continue
            new = [(low, edge)] if rules.hours is None else _working_spans(rules, day, tz)
            for s, e in new:
                if spans and s <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], max(spans[-1][1], e))
                else:
                    spans.append((s, e))
        self._day, self._edge = day, edge
        while self._done < len(spans) and spans[self._done][1] <= start:
            self._done += 1
        out = []
        for a, b in spans[self._done :]:
            if a >= end:
                break
            low = start if start > a else a
            high = end if end < b else b
            if low < high:
                out.append((low, high))
        return out


_TICK = timedelta(microseconds=1)
_ZERO = timedelta(0)
_MINUTE = timedelta(minutes=1)


class _Frame(NamedTuple):
    """What the rules make of a local day whatever the meetings (``_frame``)."""

    low: datetime  # its bounds
    high: datetime
    off: bool  # a no-meeting day
    hours: list[Span] | None  # its working spans joined with the day before's; None: no hours
    focus: Span | None  # its focus window, on a working day


def _frame(rules: Rules, tz: tzinfo, day: date) -> _Frame:
    """What the rules make of the local ``day`` (``_Frame``), worked out once per rules
    (``Rules.memo``)."""
    key = ("frame", day, tz)
    found: _Frame | None = rules.memo.get(key)
    if found is None:
        hours: list[Span] | None = None
        if rules.hours is not None:
            spans = [*_working_spans(rules, day - DAY, tz), *_working_spans(rules, day, tz)]
            hours = union_of(spans)
        focus = None
        if rules.focus is not None and rules.working_day(day.weekday()):
            focus = (_at(day, rules.focus[1], tz), _at(day, rules.focus[2], tz))
        off = day.weekday() in rules.no_meeting_days
        found = _Frame(_at(day, _ZERO, tz), _at(day, DAY, tz), off, hours, focus)
        if len(rules.memo) < 4096:
            rules.memo[key] = found
    return found


class _DayFacts:
    """What ``SlotFilter`` works out once for a local day: what the rules make of it
    (``_frame``: bounds, ``off``, ``hours``, ``focus``), the meetings that start on it
    (``count``), those a buffer reaches widened by it (``fenced``), those on it joined and
    clipped to it (``joined``), their length (``taken``) and the length a meeting must reach
    to break ``maxMeetingMinutesPerDay`` (``room``), and the free blocks of its focus window
    long enough to keep one (``gaps``, each as the earliest start and the latest end of a
    meeting that leave a long enough part of it)."""

    __slots__ = (
        "count",
        "fenced",
        "focus",
        "full",
        "gaps",
        "high",
        "hours",
        "joined",
        "low",
        "off",
        "room",
        "taken",
    )

    def __init__(self, rules: Rules, tz: tzinfo, day: date, meetings: Meetings) -> None:
        self.low, self.high, self.off, self.hours, focus = _frame(rules, tz, day)
        low, high = self.low, self.high
        self.count = meetings.starting(low, high, None)
        self.full = self.off or (
            rules.max_meetings is not None and self.count + 1 > rules.max_meetings
        )
        # The meetings a buffer around a meeting on this day reaches, widened by the buffer:
        # a meeting at [start, end) keeps it when it overlaps none of them.
        buffer = rules.buffer
        self.fenced: list[Span] = []
        if buffer is not None:
            self.fenced = [
                (s - buffer, e + buffer)
                for s, e in meetings.overlapping(low - buffer, high + buffer, None)
            ]
        self.joined = [
            (max(s, low), min(e, high)) for s, e in union_of(meetings.overlapping(low, high, None))
        ]
        self.taken = sum((e - s for s, e in self.joined), start=_ZERO)
        # Past ``maxMeetingMinutesPerDay`` only with a meeting of at least this length.
        self.room = timedelta.max
        if rules.max_minutes is not None:
            self.room = _MINUTE * (rules.max_minutes + 1) - self.taken
        self.focus = focus
        self.gaps: list[Span] = []
        if focus is not None:
            assert rules.focus is not None
            length = rules.focus[0]
            focus_low, focus_high = focus
            # The free blocks of the focus window (within the day) at least ``length`` long,
            # each as the earliest start and the latest end a meeting may have to leave a
            # long enough part of it: before it (``start >= s``) or after it (``end <= e``).
            at = focus_low
            for s, e in [*self.joined, _END]:
                if s >= focus_high:
                    s = focus_high
                if s - at >= length:
                    self.gaps.append((at + length, s - length))
                if e > at:
                    at = e
                if at >= focus_high:
                    break

    def minutes_with(self, start: datetime, end: datetime) -> int:
        """``_minutes_on`` this day with a meeting at ``[start, end)``."""
        a, b = max(start, self.low), min(end, self.high)
        extra = b - a if a < b else timedelta(0)
        for s, e in self.joined:
            if s < b and e > a:
                extra -= min(b, e) - max(a, s)
        return int((self.taken + extra).total_seconds() // 60)

    def focus_kept(self, start: datetime, end: datetime) -> bool:
        """Not ``_focus_broken`` on this day by a meeting at ``[start, end)``: it misses the
        focus window, or leaves a long enough part of one of its free blocks (``gaps``)."""
        assert self.focus is not None
        low, high = self.focus
        if not (start < high and end > low):
            return True
        return any(start >= s or end <= e for s, e in self.gaps)


_END = (datetime.max.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC))


def reach(rules: Rules, tz: tzinfo, start: datetime, end: datetime) -> Span:
    """The times whose meetings ``passes`` and ``broken`` look at for one meeting at ``[start,
    end)``: the local days it touches (their count and minutes, their focus windows) and its
    buffer either side."""
    buffer = rules.buffer or timedelta(0)
    day = _frame(rules, tz, start.astimezone(tz).date())
    if end <= day.high:
        return min(day.low, start - buffer), max(day.high, end + buffer)
    last = max((end - _TICK).astimezone(tz).date(), day.low.astimezone(tz).date())
    return min(day.low, start - buffer), max(_at(last, DAY, tz), end + buffer)


def keeps_one(
    rules: Rules,
    tz: tzinfo,
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    items: Sequence[Busy],
    skip: str,
) -> bool:
    """``passes`` for one meeting at ``[start, end)`` among ``items`` (``meetings_of``'s, in
    any order, those overlapping ``reach`` at least; ``skip`` the meeting itself), without a
    ``Meetings``: a write's check asks of one time only. A meeting within a local day is
    checked against that day's facts (``_frame``, kept) and the meetings near it; one
    across midnight as ``passes`` checks it."""
    day = _frame(rules, tz, start.astimezone(tz).date())
    if end > day.high:
        return passes(rules, tz, start, end, now=now, meetings=Meetings(items), skip=skip)
    if not _timely(rules, start, end, now):
        return False
    if day.off:
        return False
    if day.hours is not None and not any(s <= start and end <= e for s, e in day.hours):
        return False
    buffer = rules.buffer or _NONE
    near_low, near_high = start - buffer, end + buffer
    low, high = day.low, day.high
    low_text, high_text = utc_text(min(low, near_low)), utc_text(max(high, near_high))
    count = 0  # the meetings that start on the day
    on_day: list[Span] = []
    for item in items:  # one pass: the texts compared first, instants only for those near
        s_text, e_text = item[1], item[2]
        if e_text <= low_text or s_text >= high_text or e_text <= s_text or item[3] == skip:
            continue
        s, e = _instant(s_text), _instant(e_text)
        if rules.buffer is not None and e > near_low and s < near_high:
            return False
        if e > low and s < high:
            on_day.append((s, e))
            count += s >= low
    if rules.max_meetings is not None and count >= rules.max_meetings:
        return False
    joined = union_of([*on_day, (start, end)])
    if rules.max_minutes is not None and _minutes_of(low, high, joined) > rules.max_minutes:
        return False
    if day.focus is None or rules.focus is None:
        return True
    low, high = day.focus
    return not (start < high and end > low) or _longest_gap(low, high, joined) >= rules.focus[0]


_NONE = timedelta(0)


def _longest_free(
    low: datetime, high: datetime, taken: list[Span], start: datetime, end: datetime
) -> timedelta:
    """The longest free block of ``[low, high)`` with ``taken`` and a meeting at ``[start,
    end)`` (the focus rule)."""
    return _longest_gap(low, high, union_of([*taken, (start, end)]))


def _longest_gap(low: datetime, high: datetime, joined: list[Span]) -> timedelta:
    """The longest block of ``[low, high)`` that ``joined`` (``union_of``'s) leaves free."""
    at, longest = low, _NONE
    for s, e in joined:
        if e > low and s < high:
            longest = max(longest, s - at)
            at = max(at, e)
    return max(longest, high - at)


_DAY_REACH = timedelta(hours=26)


def slack(rules: Rules) -> timedelta:
    """How far either side of a window the meetings the rules look at are read: the local
    days a time in it touches begin at most 25 hours before it (a day DST makes longer) and
    end at most 25 hours after, and a buffer reaches beyond them."""
    return _DAY_REACH + (rules.buffer or timedelta(0))


def days_around(rules: Rules, tz: tzinfo, low: datetime, high: datetime) -> Span:
    """What a ``SlotFilter`` of times within ``[low, high)`` reads meetings over: the local
    days in ``tz`` they may touch, and the buffer either side (``_DayFacts`` looks no
    further)."""
    first, last = low.astimezone(tz).date(), (high - _TICK).astimezone(tz).date()
    buffer = rules.buffer or timedelta(0)
    return _at(first, timedelta(0), tz) - buffer, _at(last, DAY, tz) + buffer


__all__ = [
    "DAY",
    "MAX_OCCURRENCES",
    "Meetings",
    "SlotFilter",
    "Span",
    "Verdict",
    "broken",
    "days_around",
    "instant",
    "keeps_one",
    "passes",
    "reach",
    "slack",
]
