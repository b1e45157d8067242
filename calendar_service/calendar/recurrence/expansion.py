"""Expanding a series: its occurrences in time order, with bounded work.

Expansion is python-dateutil's ``rrule`` in the calendar's time zone: DTSTART is the series'
local wall time (naive), each instance is localized with ``timeutil.localize`` (``fold=0``: a
time in a DST gap takes the offset before the gap, as RFC 5545 says), so a weekly 09:30
Europe/Berlin series stays at 09:30 local in summer and winter. As in RFC 5545, DTSTART (the
series' start) is always the first instance, and ``COUNT`` counts it.

Bounded work. dateutil's iterator can spin through many periods that produce nothing between two
instances (``FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30`` spins until the year 9999: seconds of CPU),
and a rule of 96 a day yields 35,000 instances a year. Every expansion here runs dateutil's own
iteration with a metered ``_iterinfo`` (``_Gauge``): each period it builds, and each instance it
yields (in the window or not), is charged to a ``Budget`` (about a microsecond a unit, and
counted: ``Budget.periods``, ``Budget.instances``, summed by ``measured``), and every expansion
stops at the end of the accepted date range (``timeutil.LATEST``) and at the window's end even
when nothing occurs. When a request's budget runs out, the expansion raises ``Paused`` with the
instant up to which it is complete, so a list answers a short page with a page token there.
Each expansion may always walk ``_FREE_PERIODS`` periods and compute the instances up to its
``since`` and one after, so a paused list still moves on; ``READ_MOST_INSTANCES`` and
``READ_MOST_PERIODS`` are what one list page may compute for one series at the most.
Expansions skip ahead to the window: DTSTART moves forward by whole periods of the rule (its
by-parts made explicit first, so the instances stay the same), and without BYSETPOS on inside
the period to the day before the window; a ``COUNT`` rule is expanded up to the start of its
last instance, computed once when the series is written (``summarize``).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from dateutil import rrule as _rrule

from calendar_service.calendar.recurrence.rules import (
    Rule,
    exdate_key,
    from_key,
    naive_local,
    refused,
    to_utc,
)
from calendar_service.platform.timeutil import EARLIEST, LATEST

READ_BUDGET = 50_000
"""Work units (about a microsecond each) one read (a list page, a get) may spend expanding."""
WRITE_BUDGET = 200_000
"""Work units a write may spend checking a rule and finding its last instance."""
READ_INSTANCE_UNITS = 15
"""Units each instance costs a read: dateutil's, its instant, and the list's occurrence made
of it (its id and times as text)."""
WRITE_INSTANCE_UNITS = 1
"""Units each instance costs a write, which only counts them (``summarize``,
``count_before``)."""
CALL_UNITS = 20
"""Units each expansion costs to set up (dateutil's rule and its first period's masks)."""
_FREE_PERIODS = 2
_MOST_SETPOS = 2 * 366  # BYSETPOS values validation accepts: 1 to 366 and -366 to -1
FREE_INSTANCES = _MOST_SETPOS + 1
"""Instances one expansion may compute after its budget ran out: those before its ``since``
(at most two days of 96 times, or with BYSETPOS one period's positions) and one after."""
FREE_EXPANSIONS = 3
"""Expansions a list may run for one series once its share ran out: the one that ran out, the
chunk read again in order, and the one from the page's start (so that the page moves on)."""
READ_MOST_INSTANCES = READ_BUDGET // READ_INSTANCE_UNITS + FREE_EXPANSIONS * FREE_INSTANCES
"""Instances a list page computes at most for one series (its whole budget): 5,532."""
READ_MOST_PERIODS = READ_BUDGET // 2 + FREE_EXPANSIONS * (_FREE_PERIODS + 1)
"""Periods (dateutil's steps) a list page walks at most for one series (2 units or more
each): 25,009."""


# ---------------------------------------------------------------------------------------------
# Bounded expansion


class Budget:
    """Work units one request may spend expanding rules (shared by all its expansions), and
    what they were spent on: ``periods`` dateutil built (its steps) and ``instances`` it
    yielded (each one, whether or not it is then in the window)."""

    __slots__ = ("instances", "left", "periods")

    def __init__(self, units: int = READ_BUDGET) -> None:
        self.left = units
        self.periods = 0
        self.instances = 0
        measuring = _MEASURING.get()
        if measuring is not None:
            measuring.append(self)


class Work:
    """The work of every ``Budget`` made while ``measured`` is active (in this context: a
    request's, or a test's): the expansion steps (periods) and the instances computed."""

    __slots__ = ("_budgets",)

    def __init__(self, budgets: list[Budget]) -> None:
        self._budgets = budgets

    @property
    def periods(self) -> int:
        return sum(b.periods for b in self._budgets)

    @property
    def instances(self) -> int:
        return sum(b.instances for b in self._budgets)


_MEASURING: ContextVar[list[Budget] | None] = ContextVar("measuring", default=None)


@contextmanager
def measured() -> Iterator[Work]:
    """Count the work of the expansions run inside the block (tests, benchmarks)."""
    budgets: list[Budget] = []
    token = _MEASURING.set(budgets)
    try:
        yield Work(budgets)
    finally:
        _MEASURING.reset(token)


class Paused(Exception):
    """The budget ran out: every occurrence starting before ``at`` (UTC) was yielded."""

    def __init__(self, at: datetime) -> None:
        super().__init__(at.isoformat())
        self.at = at


class _Stop(Exception):
    """The iteration reached the end of what was asked for (or of the accepted range)."""


class _OutOfBudget(Exception):
    """The budget ran out at ``reached`` (a local date-time: where a period starts, or the
    instance not yielded), or at ``at`` (UTC, with the start's fraction of a second)."""

    def __init__(self, reached: datetime, at: datetime | None = None) -> None:
        super().__init__(reached.isoformat())
        self.reached = reached
        self.at = at


class _Gauge:
    """One expansion's meter: each period it builds is charged to ``budget`` (the first
    ``_FREE_PERIODS`` too, but they never stop it), the first also for the days dateutil walks
    before DTSTART when it starts inside a period (``first_extra`` units); it stops once a
    period starts after ``stop`` (a local date)."""

    __slots__ = ("budget", "first_extra", "periods", "setpos", "stop")

    def __init__(self, budget: Budget, stop: date, setpos: int, first_extra: int = 0) -> None:
        self.budget = budget
        self.stop = stop
        self.setpos = setpos
        self.first_extra = first_extra
        self.periods = 0

    def charge(self, start: date, days: int) -> None:
        if start > self.stop:
            raise _Stop
        self.periods += 1
        budget = self.budget
        budget.periods += 1
        # Measured on dateutil 4.0: about 2 us a period plus 0.1 us a day filtered,
        # and BYSETPOS walks the period's days once per position.
        budget.left -= 2 + (days * (1 + self.setpos)) // 10 + self.first_extra
        self.first_extra = 0
        if budget.left < 0 and self.periods > _FREE_PERIODS:
            raise _OutOfBudget(datetime.combine(start, time()))


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


def _skipped_start(rule: Rule, dtstart: datetime, since: datetime) -> tuple[datetime, int]:
    """Where to start dateutil for the instances from ``since`` on (both local, naive), and
    the days of its first period it walks before that without yielding (to charge them).

    The start of the rule's last period at or before ``since``, on the rule's period grid
    from ``dtstart`` (``dtstart`` itself when ``since`` is not after it); without BYSETPOS
    (which picks from a whole period), further on inside that period, to the day before
    ``since`` (a day of margin for DST), so that a year of 96 times a day is not yielded up to
    December: dateutil yields the same instances from any DTSTART inside a period, the rule's
    by-parts being explicit (``_explicit``)."""
    period = _period_start(rule, dtstart, since)
    if since <= dtstart or dict(rule.by).get("bysetpos"):
        return period, 0
    inside = datetime.combine(since.date() - timedelta(days=1), time())
    if inside <= period:
        return period, 0
    return inside, (inside - period).days


def _period_start(rule: Rule, dtstart: datetime, since: datetime) -> datetime:
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
    instance_units: int = READ_INSTANCE_UNITS,
) -> Iterator[datetime]:
    """The RRULE's own instances (UTC), from the period holding ``since`` (``endless``: as if
    it had no COUNT or UNTIL); raises ``_OutOfBudget`` when the budget runs out.

    Every instance dateutil yields costs ``instance_units`` (those before ``since`` too); the
    budget stops the expansion at a period's start (after ``_FREE_PERIODS``) or at an
    instance after ``since``, never before: each expansion moves past ``since``."""
    tz = times.tz
    dtstart = naive_local(times.start, tz, rule.all_day)
    local_since = naive_local(max(since, EARLIEST), tz, rule.all_day)
    until: datetime | None = None
    count: int | None = None
    walked = 0
    if endless:
        start, walked = _skipped_start(rule, dtstart, local_since)
    elif rule.count is not None and (use_count or times.last_start is None):
        count = rule.count
        start = dtstart  # a COUNT is counted from DTSTART
    else:
        start, walked = _skipped_start(rule, dtstart, local_since)
        if rule.count is not None:
            assert times.last_start is not None
            until = naive_local(times.last_start, tz, rule.all_day)
        elif rule.until is not None:
            until = naive_local(rule.until, tz, False) if not rule.all_day else rule.until
    stop = _RANGE_END_DAY
    if before is not None:
        stop = min(stop, (before.astimezone(tz) + timedelta(days=1)).date())
    by = _explicit(rule, dtstart)
    budget.left -= CALL_UNITS
    # The days walked before the start, once for each of the times of a day.
    per_day = len(by["byhour"]) * len(by["byminute"]) * len(by["bysecond"])
    gauge = _Gauge(budget, stop, len(by.get("bysetpos", ())), walked * per_day // 10)
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
        instant = to_utc(local + fraction, tz)
        if instant > LATEST:
            return
        budget.instances += 1
        budget.left -= instance_units
        if budget.left < 0 and instant > since:
            raise _OutOfBudget(local, instant)
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
    extra = sorted({times.start, *(from_key(r, rule, tz) for r in rule.rdates)})
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
            at = out.at if out.at is not None else to_utc(out.reached, tz)
            for e in extra[pending:]:
                if e >= at:
                    break
                if exdate_key(e, rule, tz) not in excluded and e != last:
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
            if e != last and exdate_key(e, rule, tz) not in excluded:
                last = e
                yield e
        if nxt is None:
            return
        if nxt != last and exdate_key(nxt, rule, tz) not in excluded:
            last = nxt
            yield nxt


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
            rule,
            times,
            since=dtstart,
            before=None,
            budget=budget,
            endless=True,
            instance_units=WRITE_INSTANCE_UNITS,
        )
        first = next(probe, None)
    except _OutOfBudget:
        raise refused(
            "the rule's first occurrence is too far from startsAt to compute: check its BY "
            "parts (such as BYMONTHDAY=30 with BYMONTH=2)"
        ) from None
    if first is None:
        raise refused(
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
                rule,
                times,
                since=dtstart,
                before=None,
                budget=budget,
                use_count=True,
                instance_units=WRITE_INSTANCE_UNITS,
            )
            try:
                for n, instant in enumerate(counted, 1):
                    last_start = instant
                    if n >= wanted:
                        break
            except _OutOfBudget:
                raise refused(
                    "COUNT is too large to compute for this rule: use a smaller COUNT or UNTIL"
                ) from None
    elif rule.until is not None:
        until = rule.until if not rule.all_day else to_utc(rule.until, times.tz)
        last_start = max(dtstart, until)
    if last_start is None:
        return Summary(None, None)
    latest = max(last_start, dtstart, *(from_key(r, rule, times.tz) for r in rule.rdates))
    return Summary(last_start, end_of(latest, times.tz, rule.all_day, length))


def end_of(start: datetime, tz: tzinfo, all_day: bool, length: timedelta | int) -> datetime:
    """An occurrence's end from its start: ``length`` later, or for all-day series the local
    midnight ``length`` days on (days, not hours, across DST)."""
    if all_day:
        assert isinstance(length, int)
        local = naive_local(start, tz, True) + timedelta(days=length)
        return min(to_utc(local, tz), LATEST)
    assert isinstance(length, timedelta)
    return min(start + length, LATEST)


def count_before(rule: Rule, times: SeriesTimes, at: datetime) -> int:
    """How many instances COUNT has counted before ``at`` (UTC): DTSTART and the RRULE's
    instances, EXDATEs included (RFC 5545 counts before excluding). Within
    ``WRITE_BUDGET``."""
    counted = 1 if times.start < at else 0
    budget = Budget(WRITE_BUDGET)
    try:
        for instant in _rule_instances(
            rule,
            times,
            since=times.start,
            before=at,
            budget=budget,
            use_count=True,
            instance_units=WRITE_INSTANCE_UNITS,
        ):
            if instant >= at:
                break
            if instant != times.start:
                counted += 1
    except _OutOfBudget:
        raise refused("this series is too long to split: change the whole series instead") from None
    return counted
