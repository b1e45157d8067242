"""How the pages say a series repeats, and the event form's repeat choice as ``recurrence``.

``describe`` turns a series' ``recurrence`` (its stored lines, as the core shows them, read by
the core's ``recurrence.rules``) into a sentence such as "Repeats weekly on Monday and
Wednesday, 10 times"; a rule it cannot put into words (``BYSETPOS``, ``BYWEEKNO``, several
by-parts at once …) is shown as its own text, "Repeats: FREQ=…". The form's choices become
lines through ``recurrence.rules`` too. Nothing here reads or checks a rule's text: the core
does, and its errors name the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from calendar_service.calendar.recurrence import rules

FREQUENCIES = {  # the form's choices: the core's FREQ (rules.FREQUENCIES), and their names
    "DAILY": "Every day",
    "WEEKLY": "Every week (the start’s weekday)",
    "MONTHLY": "Every month (the start’s day)",
    "YEARLY": "Every year (the start’s date)",
}
CUSTOM = "custom"
_ADVERB = {"DAILY": "daily", "WEEKLY": "weekly", "MONTHLY": "monthly", "YEARLY": "yearly"}
_UNIT = {"DAILY": "days", "WEEKLY": "weeks", "MONTHLY": "months", "YEARLY": "years"}
_DAYS = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_ORDINALS = {
    1: "first",
    2: "second",
    3: "third",
    4: "fourth",
    5: "fifth",
    -1: "last",
    -2: "second to last",
}


def recurrence_of(repeat: str, rule: str) -> tuple[list[str] | None, str | None]:
    """The form's choice (``repeat``: "", a FREQ or ``custom``) and typed ``rule`` as the
    core's ``recurrence`` lines (``rules.typed_lines``, ``rules.every``), or an error for the
    form's repeat field."""
    lines = rules.typed_lines(rule)
    if repeat == CUSTOM:
        if not lines:
            return None, "type a rule such as FREQ=WEEKLY;INTERVAL=2;BYDAY=TU"
        return lines, None
    if lines:
        return None, "choose “Custom rule” to use the rule you typed, or clear it"
    if repeat == "":
        return None, None
    if repeat not in FREQUENCIES:
        return None, "choose one of the listed choices"
    return rules.every(repeat), None


def choice_of(recurrence: list[str] | None) -> dict[str, str]:
    """The form's ``repeat`` and ``rule`` inputs for an event's ``recurrence`` as stored:
    posted back unchanged, ``recurrence_of`` gives the same lines again."""
    if recurrence is None:
        return {"repeat": "", "rule": ""}
    freq = rules.every_of(recurrence)
    if freq is not None:
        return {"repeat": freq, "rule": ""}
    return {"repeat": CUSTOM, "rule": rules.typed_text(recurrence)}


def describe(series: Mapping[str, Any]) -> str:
    """A sentence for a series' rule (its public object: ``recurrence`` as stored, read by
    ``rules.stored_rule``); its ``startsAt`` (its first occurrence, in the calendar's zone)
    gives what the rule takes from it (a weekly rule's weekday)."""
    rule = rules.stored_rule(tuple(series["recurrence"]), bool(series["allDay"]))
    start = datetime.fromisoformat(series["startsAt"].replace("Z", "+00:00"))
    on = _on(rule, start)
    if on is None:
        return f"Repeats: {rule.rrule}"
    freq = rule.frequency
    every = _ADVERB[freq] if rule.interval == 1 else f"every {rule.interval} {_UNIT[freq]}"
    sentence = f"Repeats {every}{on}"
    if rule.count is not None:
        sentence += ", once" if rule.count == 1 else f", {rule.count} times"
    elif rule.until is not None:
        sentence += f", until {_until(rule.until, start)}"
    return sentence


def _on(rule: rules.Rule, start: datetime) -> str | None:
    """The phrase after the frequency ("on Monday", with its leading space) for the by-parts
    this page can say; ``None`` for those it cannot."""
    if rule.parts - {"BYDAY", "BYMONTHDAY", "WKST"}:  # BYMONTH, BYSETPOS …: shown as written
        return None
    byday, bymonthday = rule.weekdays, rule.month_days
    freq = rule.frequency
    if freq == "DAILY":
        return "" if not byday and not bymonthday else None
    if freq == "WEEKLY":
        if bymonthday:
            return None
        days = [day for _, day in byday] or [rules.WEEKDAYS[start.weekday()]]
        return " on " + _and([_DAYS[d] for d in days])
    if freq == "MONTHLY":
        if byday and not bymonthday:
            return _nth_weekdays(byday)
        if not byday:
            days = [str(d) for d in bymonthday] or [str(start.day)]
            return (" on day " if len(days) == 1 else " on days ") + _and(days)
        return None
    if not byday and not bymonthday:  # YEARLY
        return f" on {start.day} {start:%B}"
    return None


def _nth_weekdays(byday: tuple[tuple[int | None, str], ...]) -> str | None:
    """The phrase "on the first Monday and the last Friday" for a monthly ``BYDAY``."""
    said = []
    for number, day in byday:
        if number is None:
            said.append(f"every {_DAYS[day]}")
            continue
        nth = _ORDINALS.get(number)
        if nth is None:
            return None
        said.append(f"the {nth} {_DAYS[day]}")
    return " on " + _and(said)


def _until(value: datetime, start: datetime) -> str:
    """A rule's ``until`` (a date, or a UTC date-time) as the day it is in the series' zone."""
    day = value if value.tzinfo is None or start.tzinfo is None else value.astimezone(start.tzinfo)
    return f"{day:%a} {day.day} {day:%b %Y}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
