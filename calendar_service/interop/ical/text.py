"""A single event's ``VEVENT`` written as text, without building ``icalendar`` objects.

``export.render_calendar`` builds each VEVENT with the ``icalendar`` package: some 2 ms an
event, most of a CalDAV report's time (docs/performance.md, "CalDAV"). A single event (no
rule, no changed occurrences) is written here instead, straight from its fields, to the same
bytes: the same properties in the order ``icalendar`` writes them (``SUMMARY``, ``DTSTART``,
``DTEND``, ``DTSTAMP``, ``UID``, ``SEQUENCE``, then the others by name), TEXT escaped as
RFC 5545 3.3.11 says and lines folded at 75 octets as ``icalendar`` folds them (never inside
an escape), times in the calendar's zone (``TZID=``), in UTC (``Z``) or as dates
(``VALUE=DATE``). ``tests/core/interop/ical/test_text_writer.py`` holds the two writers to the same
bytes.

What it does not write, ``single_vevent`` answers ``None`` for, and the caller renders with
``export`` as before: a local time that occurs twice (the autumn fold, written at a fixed
offset there). Attendees' lines are written by ``icalendar`` (``people.people_lines``).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from icalendar import vDuration
from icalendar.timezone.tzid import tzid_from_tzinfo

from calendar_service.calendar.attendees import decode
from calendar_service.interop.ical.edges import is_ambiguous
from calendar_service.interop.ical.people import people_lines
from calendar_service.platform.models.columns import from_db

CRLF = "\r\n"


def escape(text: str) -> str:
    """RFC 5545 3.3.11 TEXT, as ``icalendar`` escapes it (line breaks as ``\\n``)."""
    if not text or not any(c in text for c in "\\;,\r\n"):
        return text
    return (
        text.replace(r"\N", "\n")
        .replace("\\", "\\\\")
        .replace(";", r"\;")
        .replace(",", r"\,")
        .replace("\r\n", r"\n")
        .replace("\n", r"\n")
        .replace("\r", r"\n")
    )


def fold(line: str) -> str:
    """One content line folded as ``icalendar`` folds it: a break before the octet that
    would make a line 75 long, never between a backslash (or a caret) and what it escapes."""
    ascii = line.isascii()
    if len(line) < 75 and (ascii or len(line.encode()) < 75):
        return line
    if ascii:  # an octet a character: 74 a line, 73 where the 74th would split an escape
        cut: list[str] = []
        start = 0
        while len(line) - start > 74:
            end = start + 74
            if line[end - 1] in "\\^":
                end -= 1
            cut.append(line[start:end])
            start = end
        cut.append(line[start:])
        return "\r\n ".join(cut)
    parts: list[str] = []
    current: list[str] = []
    count = 0
    for char in line:
        size = 1 if char < "\x80" else len(char.encode())
        if current and count + size >= 75:
            if len(current) > 1 and current[-1] in "\\^":
                kept = current.pop()
                parts.append("".join(current))
                current = [kept]
                count = len(kept.encode())
            else:
                parts.append("".join(current))
                current = []
                count = 0
        current.append(char)
        count += size
    if current:
        parts.append("".join(current))
    return "\r\n ".join(parts)


def _utc(value: datetime) -> str:
    v = value.astimezone(UTC)
    return f"{v.year:04d}{v.month:02d}{v.day:02d}T{v.hour:02d}{v.minute:02d}{v.second:02d}Z"


@functools.lru_cache(maxsize=1024)
def zone_form(tz: tzinfo) -> str | None:
    """How ``icalendar`` names ``tz`` in a ``TZID`` (its equivalent-zone table's name), ``""``
    for a zone it writes in UTC (``Z``: UTC, Etc/UTC...), ``None`` if it has no name."""
    if tz is UTC:
        return ""
    tzid = tzid_from_tzinfo(tz)
    if tzid is None:
        return None
    return "" if tzid == "UTC" else tzid


def _time(name: str, value: datetime, tz: tzinfo, tzid: str, all_day: bool) -> str:
    local = value.astimezone(tz)
    if all_day:
        return f"{name};VALUE=DATE:{local.year:04d}{local.month:02d}{local.day:02d}"
    if not tzid:
        return f"{name}:{_utc(value)}"
    return (
        f"{name};TZID={tzid}:{local.year:04d}{local.month:02d}{local.day:02d}"
        f"T{local.hour:02d}{local.minute:02d}{local.second:02d}"
    )


@functools.lru_cache(maxsize=256)
def _trigger(minutes: int) -> str:
    """A reminder's ``TRIGGER`` value as ``icalendar`` writes it (``-PT15M``, ``-P1D``...)."""
    return str(vDuration(timedelta(minutes=-minutes)).to_ical().decode())


def alarm_lines(minutes: int, title: str) -> str:
    """The owner's default reminder (``export._alarm``) as text."""
    return (
        "BEGIN:VALARM\r\nACTION:DISPLAY\r\n"
        + fold("DESCRIPTION:" + escape(title or "Reminder"))
        + f"\r\nTRIGGER:{_trigger(minutes)}\r\nEND:VALARM\r\n"
    )


def single_vevent(
    *,
    uid: str,
    title: str,
    starts: datetime,
    ends: datetime,
    all_day: bool,
    description: str | None,
    location: str | None,
    created: datetime,
    updated: datetime,
    transparent: bool,
    tz: tzinfo,
    reminder: int | None,
    people: dict[str, str] | None = None,
) -> str | None:
    """A single event's VEVENT (``export._vevent`` with the reminder's VALARM), or ``None``
    when its start or end is a local time that occurs twice in ``tz`` (see the module), or
    ``icalendar`` has no name for ``tz``."""
    tzid = zone_form(tz)
    if tzid is None:
        return None
    if not all_day and tzid and (is_ambiguous(starts, tz) or is_ambiguous(ends, tz)):
        return None
    stamp = _utc(updated)
    out = [
        "BEGIN:VEVENT",
        fold("SUMMARY:" + escape(title)),
        _time("DTSTART", starts, tz, tzid, all_day),
        _time("DTEND", ends, tz, tzid, all_day),
        "DTSTAMP:" + stamp,
        fold("UID:" + escape(uid)),
        f"SEQUENCE:{max(0, int((updated - created).total_seconds()))}",
    ]
    tail = []
    if people and "ATTENDEE" in people:
        tail.append(people["ATTENDEE"])
    tail.append("CREATED:" + _utc(created) + CRLF)
    if description:
        tail.append(fold("DESCRIPTION:" + escape(description)) + CRLF)
    tail.append("LAST-MODIFIED:" + stamp + CRLF)
    if location:
        tail.append(fold("LOCATION:" + escape(location)) + CRLF)
    if people and "ORGANIZER" in people:
        tail.append(people["ORGANIZER"])
    tail.append("STATUS:CONFIRMED\r\n")
    tail.append("TRANSP:TRANSPARENT\r\n" if transparent else "TRANSP:OPAQUE\r\n")
    if reminder is not None:
        tail.append(alarm_lines(reminder, title))
    tail.append("END:VEVENT\r\n")
    return CRLF.join(out) + CRLF + "".join(tail)


def row_vevent(row: Any, tz: tzinfo, *, uid: str, reminder: int | None) -> str | None:
    """``single_vevent`` of a single event's row (its columns, as ``export`` reads them)."""
    people = decode(row.attendees)
    return single_vevent(
        uid=uid,
        title=row.title,
        starts=from_db(row.starts_at),
        ends=from_db(row.ends_at),
        all_day=bool(row.all_day),
        description=row.description,
        location=row.location,
        created=from_db(row.created_at),
        updated=from_db(row.updated_at),
        transparent=row.transparency == "transparent",
        tz=tz,
        reminder=reminder,
        people=None if people is None else people_lines(people["organizer"], people["attendees"]),
    )


__all__ = ["alarm_lines", "escape", "fold", "row_vevent", "single_vevent"]
