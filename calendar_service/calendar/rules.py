"""The owner's rules for agents: what a key may book, said in advance (docs/rules.md).

The rules are one JSON object per owner, each rule optional: ``workingHours``
(``{mon: [{start, end}], ...}``, wall-clock times in the target calendar's zone; a weekday left
out has no working hours), ``bufferMinutes``, ``maxMeetingsPerDay``,
``maxMeetingMinutesPerDay``, ``focus`` (``{minutes, start, end}``), ``noMeetingDays``,
``minNoticeMinutes``, ``maxDaysAhead``, ``maxDurationMinutes`` and ``onViolation``
(``refuse``, the default, or ``ask``). ``read_rules`` checks an object sent by the owner,
naming every bad field as sent; ``set_rules`` replaces the owner's rules (an empty object
clears them; events already there stand, the next write to them is checked);
``rules_of`` reads them for a check, one read by the owner's id; ``rules_public`` is
``getSchedulingRules``' answer for a key. ``rule_verdict`` and ``rule_check`` evaluate them.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, bindparam, delete, insert, select

from calendar_service.access.keys import Principal
from calendar_service.platform.db import Statement
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.inputs import check_text
from calendar_service.platform.models.rules import rules_t

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
REFUSE = "refuse"
ASK = "ask"
DEFAULT_HORIZON_DAYS = 90
"""How far ahead a series is checked, occurrence by occurrence, when ``maxDaysAhead`` is
unset."""

MAX_INTERVALS = 6  # working-hours intervals a weekday may have
_LIMITS: dict[str, tuple[int, int]] = {
    "bufferMinutes": (0, 720),
    "maxMeetingsPerDay": (1, 100),
    "maxMeetingMinutesPerDay": (1, 1440),
    "minNoticeMinutes": (0, 43_200),
    "maxDaysAhead": (1, 730),
    "maxDurationMinutes": (1, 1440),
}
RULE_NAMES = (
    "workingHours",
    "bufferMinutes",
    "maxMeetingsPerDay",
    "maxMeetingMinutesPerDay",
    "focus",
    "noMeetingDays",
    "minNoticeMinutes",
    "maxDaysAhead",
    "maxDurationMinutes",
)
_KNOWN = (*RULE_NAMES, "onViolation")

Clock = timedelta  # a wall-clock time as the time since the local midnight (00:00 to 24:00)


@dataclass(frozen=True, slots=True, eq=False)
class Rules:
    """The rules read for evaluation (``rule_verdict``): each ``None`` when unset."""

    shown: dict[str, Any]  # the rules object as stored and shown
    hours: dict[int, tuple[tuple[Clock, Clock], ...]] | None  # weekday (Monday 0) → intervals
    buffer: timedelta | None
    max_meetings: int | None
    max_minutes: int | None
    focus: tuple[timedelta, Clock, Clock] | None  # minutes, start, end
    no_meeting_days: frozenset[int]
    min_notice: timedelta | None
    max_days_ahead: int | None
    max_duration: timedelta | None
    on_violation: str
    # What ``rule_verdict`` works out once for a day and zone: its working spans.
    memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def horizon(self) -> timedelta:
        """How far after its first occurrence to come a series is checked."""
        return timedelta(days=self.max_days_ahead or DEFAULT_HORIZON_DAYS)

    def working_day(self, weekday: int) -> bool:
        """A day the focus rule keeps a block free on: one with working hours (when they are
        set, else Monday to Friday) that is not a no-meeting day."""
        if weekday in self.no_meeting_days:
            return False
        return weekday < 5 if self.hours is None else bool(self.hours.get(weekday))


def _clock(value: Any, field: str, errors: list[FieldError]) -> Clock | None:
    """``HH:MM`` (00:00 to 24:00) as the time since midnight."""
    if not isinstance(value, str) or len(value) != 5 or value[2] != ":":
        errors.append(FieldError(field, "must be a time of day as HH:MM, such as 09:30"))
        return None
    hh, mm = value[:2], value[3:]
    if not (hh.isdigit() and mm.isdigit() and hh.isascii() and mm.isascii()):
        errors.append(FieldError(field, "must be a time of day as HH:MM, such as 09:30"))
        return None
    hours, minutes = int(hh), int(mm)
    if minutes > 59 or hours > 24 or (hours == 24 and minutes):
        errors.append(FieldError(field, "must be a time of day from 00:00 to 24:00"))
        return None
    return timedelta(hours=hours, minutes=minutes)


def _span(value: Any, field: str, errors: list[FieldError]) -> tuple[Clock, Clock] | None:
    if not isinstance(value, dict):
        errors.append(FieldError(field, 'must be an object such as {"start": "09:00", ...}'))
        return None
    for name in value:
        if name not in ("start", "end", "minutes") or (name == "minutes" and "." in field):
            errors.append(FieldError(f"{field}.{name}", "is not a known field"))
    start = _clock(value.get("start"), f"{field}.start", errors)
    end = _clock(value.get("end"), f"{field}.end", errors)
    if start is None or end is None:
        return None
    if end <= start:
        errors.append(FieldError(f"{field}.end", "must be after start (same day; 24:00 ends it)"))
        return None
    return start, end


def _whole(value: Any, field: str, errors: list[FieldError]) -> int | None:
    low, high = _LIMITS.get(field, (15, 1440))
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(FieldError(field, "must be a whole number"))
        return None
    if not low <= value <= high:
        errors.append(FieldError(field, f"must be from {low} to {high}"))
        return None
    return value


def _hours(value: Any, errors: list[FieldError]) -> dict[str, list[dict[str, str]]] | None:
    if not isinstance(value, dict):
        errors.append(FieldError("workingHours", 'must be an object such as {"mon": [...]}'))
        return None
    shown: dict[str, list[dict[str, str]]] = {}
    for day, spans in value.items():
        field = f"workingHours.{day}"
        if day not in WEEKDAYS:
            errors.append(FieldError(field, f"is not a weekday: use {', '.join(WEEKDAYS)}"))
            continue
        if not isinstance(spans, list) or len(spans) > MAX_INTERVALS:
            errors.append(
                FieldError(field, f"must be a list of at most {MAX_INTERVALS} {{start, end}}")
            )
            continue
        read = [(_span(s, f"{field}[{i}]", errors), s) for i, s in enumerate(spans)]
        good = sorted(((span, s) for span, s in read if span is not None), key=lambda x: x[0])
        for (one, _), (other, _) in itertools.pairwise(good):
            if other[0] < one[1]:
                errors.append(FieldError(field, "has working hours that overlap"))
                break
        shown[day] = [{"start": s["start"], "end": s["end"]} for _, s in good]
    return {day: shown[day] for day in WEEKDAYS if day in shown}


def read_rules(value: Any) -> dict[str, Any]:
    """The rules object ``value`` (untrusted JSON) as stored and shown, or ``ValidationFailed``
    naming every bad field as sent. ``null`` for a rule leaves it unset."""
    if not isinstance(value, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object of rules")])
    errors: list[FieldError] = []
    for name in value:
        errors += check_text("body", str(name))
        if name not in _KNOWN:
            errors.append(FieldError(str(name), f"is not a rule: use {', '.join(_KNOWN)}"))
    shown: dict[str, Any] = {}
    for name in RULE_NAMES:
        item = value.get(name)
        if item is None:
            continue
        if name == "workingHours":
            got: Any = _hours(item, errors)
        elif name == "focus":
            got = _focus(item, errors)
        elif name == "noMeetingDays":
            got = _days(item, errors)
        else:
            got = _whole(item, name, errors)
        if got is not None:
            shown[name] = got
    on = value.get("onViolation")
    if on is not None and on not in (REFUSE, ASK):
        errors.append(FieldError("onViolation", "must be refuse or ask"))
    if errors:
        raise ValidationFailed(errors)
    shown["onViolation"] = on or REFUSE
    return shown


def _focus(value: Any, errors: list[FieldError]) -> dict[str, Any] | None:
    span = _span(value, "focus", errors)
    minutes = (
        _whole(value.get("minutes"), "focus.minutes", errors) if isinstance(value, dict) else None
    )
    if span is None or minutes is None:
        return None
    if timedelta(minutes=minutes) > span[1] - span[0]:
        errors.append(FieldError("focus.minutes", "must fit between focus.start and focus.end"))
        return None
    return {"minutes": minutes, "start": value["start"], "end": value["end"]}


def _days(value: Any, errors: list[FieldError]) -> list[str] | None:
    if not isinstance(value, list):
        errors.append(FieldError("noMeetingDays", 'must be a list of weekdays such as ["fri"]'))
        return None
    bad = [v for v in value if v not in WEEKDAYS]
    if bad:
        errors.append(FieldError("noMeetingDays", f"has {bad[0]!r}: use {', '.join(WEEKDAYS)}"))
        return None
    return [day for day in WEEKDAYS if day in value]


def parsed(shown: dict[str, Any]) -> Rules:
    """The stored rules object (``read_rules``' output) for evaluation."""
    hours = None
    if "workingHours" in shown:
        hours = {
            WEEKDAYS.index(day): tuple(
                (_parse_clock(s["start"]), _parse_clock(s["end"])) for s in spans
            )
            for day, spans in shown["workingHours"].items()
        }
    focus = shown.get("focus")

    def minutes(name: str) -> timedelta | None:
        return None if name not in shown else timedelta(minutes=shown[name])

    return Rules(
        shown=shown,
        hours=hours,
        buffer=minutes("bufferMinutes") or None,
        max_meetings=shown.get("maxMeetingsPerDay"),
        max_minutes=shown.get("maxMeetingMinutesPerDay"),
        focus=None
        if focus is None
        else (
            timedelta(minutes=focus["minutes"]),
            _parse_clock(focus["start"]),
            _parse_clock(focus["end"]),
        ),
        no_meeting_days=frozenset(WEEKDAYS.index(d) for d in shown.get("noMeetingDays", ())),
        min_notice=minutes("minNoticeMinutes"),
        max_days_ahead=shown.get("maxDaysAhead"),
        max_duration=minutes("maxDurationMinutes"),
        on_violation=shown.get("onViolation", REFUSE),
    )


def _parse_clock(text: str) -> Clock:
    return timedelta(hours=int(text[:2]), minutes=int(text[3:]))


# ---------------------------------------------------------------------------------------------
# Storage

_READ = Statement(select(rules_t.c.rules).where(rules_t.c.user_id == bindparam("user_id")))


def stored_rules(conn: Connection, *, user_id: str) -> dict[str, Any]:
    """The owner's rules object as shown (``{"onViolation": "refuse"}`` when none are set)."""
    found = _READ.first(conn, user_id=user_id)
    shown: dict[str, Any] = {"onViolation": REFUSE} if found is None else orjson.loads(found[0])
    return shown


def rules_of(principal: Principal) -> Rules | None:
    """The rules that bind ``principal``'s writes, read with its key (``Principal.rules``),
    ``None`` when none does."""
    return _parsed_text(principal.rules) if principal.rules else None


@functools.lru_cache(maxsize=1024)
def _parsed_text(text: str) -> Rules:
    """Stored rules read once per process for each text (a ``Rules`` is never changed)."""
    return parsed(orjson.loads(text))


def set_rules(conn: Connection, *, user_id: str, value: Any, now: datetime) -> dict[str, Any]:
    """Replace the owner's rules with ``value`` (checked by ``read_rules``); returns them as
    shown. Events already there are not touched."""
    shown = read_rules(value)
    conn.execute(delete(rules_t).where(rules_t.c.user_id == user_id))
    if any(name in shown for name in RULE_NAMES) or shown["onViolation"] != REFUSE:
        conn.execute(
            insert(rules_t).values(
                user_id=user_id, rules=orjson.dumps(shown).decode(), updated_at=now
            )
        )
    return shown


def rules_public(conn: Connection, *, principal: Principal) -> dict[str, Any]:
    """``getSchedulingRules``: the owner's rules and whether they bind the calling key."""
    return {
        "rules": stored_rules(conn, user_id=principal.user_id),
        "bindsThisKey": principal.rules_bound,
    }
