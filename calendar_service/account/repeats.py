"""How the pages say a series repeats, and the event form's repeat choice as ``recurrence``.

``describe`` turns a series' ``recurrence`` (its stored lines, as the core shows them) into a
sentence such as "Repeats weekly on Monday and Wednesday, 10 times"; a rule it cannot put
into words (``BYSETPOS``, ``BYWEEKNO``, several by-parts at once …) is shown as its own text,
"Repeats: FREQ=…". Nothing here checks a rule: the core does, and its errors name the field.
"""

from __future__ import annotations

from datetime import datetime

FREQUENCIES = {  # the form's choices: the core's FREQ, and what the page calls it
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
_NAMES = ("RRULE", "EXDATE", "RDATE")


def recurrence_of(repeat: str, rule: str) -> tuple[list[str] | None, str | None]:
    """The form's choice (``repeat``: "", a FREQ or ``custom``) and typed ``rule`` as the
    core's ``recurrence`` lines, or an error for the form's repeat field. The typed rule's
    lines are separated by spaces (no line holds one); a line without a name is the
    ``RRULE``."""
    lines = rule.split()
    if repeat == CUSTOM:
        if not lines:
            return None, "type a rule such as FREQ=WEEKLY;INTERVAL=2;BYDAY=TU"
        return [
            line if line.upper().startswith(_NAMES) else f"RRULE:{line}" for line in lines
        ], None
    if lines:
        return None, "choose “Custom rule” to use the rule you typed, or clear it"
    if repeat == "":
        return None, None
    if repeat not in FREQUENCIES:
        return None, "choose one of the listed choices"
    return [f"RRULE:FREQ={repeat}"], None


def choice_of(recurrence: list[str] | None) -> dict[str, str]:
    """The form's ``repeat`` and ``rule`` inputs for an event's ``recurrence`` as stored:
    posted back unchanged, ``recurrence_of`` gives the same lines again."""
    if recurrence is None:
        return {"repeat": "", "rule": ""}
    for freq in FREQUENCIES:
        if recurrence == [f"RRULE:FREQ={freq}"]:
            return {"repeat": freq, "rule": ""}
    return {"repeat": CUSTOM, "rule": " ".join(recurrence)}


def describe(recurrence: list[str], starts_at: str) -> str:
    """A sentence for a series' rule; ``starts_at`` (its first occurrence, RFC 3339 in the
    calendar's zone) gives what the rule takes from it (a weekly rule's weekday)."""
    rule = next((line[6:] for line in recurrence if line.upper().startswith("RRULE:")), "")
    parts = dict(p.split("=", 1) for p in rule.split(";") if "=" in p)
    freq = parts.pop("FREQ", "")
    interval = int(parts.pop("INTERVAL", "1") or 1)
    count, until = parts.pop("COUNT", None), parts.pop("UNTIL", None)
    parts.pop("WKST", None)
    start = datetime.fromisoformat(starts_at.replace("Z", "+00:00"))
    on = _on(freq, parts, start) if freq in _ADVERB else None
    if on is None:
        return f"Repeats: {rule}" if rule else "Repeats"
    every = _ADVERB[freq] if interval == 1 else f"every {interval} {_UNIT[freq]}"
    sentence = f"Repeats {every}{on}"
    if count is not None:
        sentence += ", once" if count == "1" else f", {count} times"
    elif until is not None:
        sentence += f", until {_until(until, start)}"
    return sentence


def _on(freq: str, parts: dict[str, str], start: datetime) -> str | None:
    """The phrase after the frequency ("on Monday", with its leading space) for the by-parts
    this page can say; ``None`` for those it cannot."""
    byday, bymonthday = parts.pop("BYDAY", None), parts.pop("BYMONTHDAY", None)
    if parts:  # BYMONTH, BYSETPOS, BYHOUR …: shown as the rule's own text
        return None
    if freq == "DAILY":
        return "" if byday is None and bymonthday is None else None
    if freq == "WEEKLY":
        if bymonthday is not None:
            return None
        days = byday.split(",") if byday else [list(_DAYS)[start.weekday()]]
        if not all(d in _DAYS for d in days):
            return None
        return " on " + _and([_DAYS[d] for d in days])
    if freq == "MONTHLY":
        if byday is not None and bymonthday is None:
            return _nth_weekdays(byday)
        if byday is None:
            days = bymonthday.split(",") if bymonthday else [str(start.day)]
            return (" on day " if len(days) == 1 else " on days ") + _and(days)
        return None
    if byday is None and bymonthday is None:  # YEARLY
        return f" on {start.day} {start:%B}"
    return None


def _nth_weekdays(byday: str) -> str | None:
    """The phrase "on the first Monday and the last Friday" for a monthly ``BYDAY``."""
    said = []
    for item in byday.split(","):
        number, day = item[:-2], item[-2:]
        if day not in _DAYS:
            return None
        if not number:
            said.append(f"every {_DAYS[day]}")
            continue
        try:
            nth = _ORDINALS.get(int(number))
        except ValueError:
            return None
        if nth is None:
            return None
        said.append(f"the {nth} {_DAYS[day]}")
    return " on " + _and(said)


def _until(value: str, start: datetime) -> str:
    """An ``UNTIL`` (a date, or a UTC date-time) as the day it is in the series' zone."""
    if "T" not in value:
        day = datetime.strptime(value, "%Y%m%d")
    else:
        day = datetime.strptime(value.rstrip("Z") + "+0000", "%Y%m%dT%H%M%S%z")
        if start.tzinfo is not None:
            day = day.astimezone(start.tzinfo)
    return f"{day:%a} {day.day} {day:%b %Y}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
