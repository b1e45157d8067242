"""``ical.text`` writes a single event's VEVENT to the very bytes ``export`` writes with the
``icalendar`` package (``export._vevent`` and ``_alarm``): checked over generated events
(titles and texts with every character RFC 5545 escapes, long and multi-byte lines, zones
with and without DST, all-day events, attendees, reminders), and the writer leaves to
``export`` what it does not write; a feed of such events is the same either way."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import orjson

from calendar_service.calendar.calendars import CalendarRow
from calendar_service.interop.ical import export
from calendar_service.interop.ical.export import FeedContent, render_calendar
from calendar_service.interop.ical.people import people_lines
from calendar_service.interop.ical.text import single_vevent
from calendar_service.platform.timeutil import zone

PIECES = ["a", "b", " ", ",", ";", "\\", "\n", "\r\n", "\r", "é", "日本", "😀", ":", '"', "^"]
PIECES += ["x" * 30, "\\n", "\\N", "\t", "^^"]
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
ZONES += ["Etc/UTC", "America/St_Johns", "Pacific/Chatham"]


def _text(rnd: random.Random, most: int) -> str:
    return "".join(rnd.choice(PIECES) for _ in range(rnd.randrange(most)))


def _people(rnd: random.Random) -> dict[str, Any]:
    organizer: dict[str, Any] = {"email": "o@example.com"}
    if rnd.random() < 0.5:
        organizer["name"] = _text(rnd, 20) or "Olga"
    attendees = [
        {
            "email": f"a{n}@exämple.com" if n % 2 else f"b{n}@example.org",
            "name": _text(rnd, 30) or None,
            "optional": rnd.random() < 0.5,
            "responseStatus": rnd.choice(["needsAction", "accepted", "declined", "tentative"]),
        }
        for n in range(rnd.randrange(4))
    ]
    return {"organizer": organizer, "attendees": attendees, "sequence": 0}


def _event(rnd: random.Random, n: int, tz: Any) -> SimpleNamespace:
    all_day = rnd.random() < 0.2
    base = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=15 * rnd.randrange(200_000))
    if all_day:
        local = base.astimezone(tz)
        midnight = datetime(local.year, local.month, local.day, tzinfo=tz)
        starts = midnight.astimezone(UTC)
        ends = (midnight + timedelta(days=rnd.randrange(1, 4))).astimezone(UTC)
    else:
        starts = base + timedelta(microseconds=rnd.choice([0, 123456]))
        ends = starts + timedelta(minutes=rnd.choice([0, 30, 90, 1440]))
    created = datetime(2023, 5, 1, tzinfo=UTC) + timedelta(
        seconds=rnd.randrange(10**7), microseconds=rnd.randrange(10**6)
    )
    updated = created + timedelta(
        seconds=rnd.choice([0, 5, 100_000]), microseconds=rnd.randrange(10**6)
    )
    people = _people(rnd) if rnd.random() < 0.3 else None
    return SimpleNamespace(
        id=f"ev_{n}",
        calendar_id="cal",
        title=_text(rnd, 40),
        starts_at=starts,
        ends_at=ends,
        all_day=all_day,
        description=_text(rnd, 200) or None,
        location=_text(rnd, 90) or None,
        created_at=created,
        updated_at=updated,
        recurrence=None,
        recurrence_last_start=None,
        recurrence_ends_at=None,
        recurring_event_id=None,
        original_starts_at=None,
        status="confirmed",
        transparency=rnd.choice(["opaque", "transparent"]),
        time_zone=None,
        attendees=None if people is None else orjson.dumps(people).decode(),
    )


def test_a_single_event_is_written_to_the_bytes_icalendar_writes() -> None:
    rnd = random.Random(5545)
    written = left = 0
    for n in range(1200):
        name = rnd.choice(ZONES)
        tz = zone(name)
        row = _event(rnd, n, tz)
        reminder = rnd.choice([None, 0, 15, 90, 1440, 10080])
        uid = rnd.choice([row.id, "uid,with;escapes\\" + _text(rnd, 80)])
        fixed: dict[str, timedelta] = {}
        made = export._vevent(row, tz, uid=uid, fixed=fixed)
        if reminder is not None:
            made.add_component(export._alarm(reminder, str(made.get("SUMMARY", ""))))
        expected = made.to_ical().decode()
        people = None
        if row.attendees is not None:
            stored = orjson.loads(row.attendees)
            people = people_lines(stored["organizer"], stored["attendees"])
        found = single_vevent(
            uid=uid,
            title=row.title,
            starts=row.starts_at,
            ends=row.ends_at,
            all_day=row.all_day,
            description=row.description,
            location=row.location,
            created=row.created_at,
            updated=row.updated_at,
            transparent=row.transparency == "transparent",
            tz=tz,
            reminder=reminder,
            people=people,
        )
        if found is None:  # a local time in a fold: export writes it at a fixed offset
            left += 1
            assert fixed, expected
            continue
        assert not fixed
        written += 1
        assert found == expected, (name, row)
    assert written > 1100 and left < 100


def test_a_feed_of_single_events_is_what_icalendar_alone_writes() -> None:
    rnd = random.Random(7986)
    tz = zone("Europe/Paris")
    rows = [_event(rnd, n, tz) for n in range(60)]
    rows.append(_event(rnd, 60, tz))
    rows[-1].starts_at = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # in the fold
    rows[-1].ends_at = rows[-1].starts_at + timedelta(minutes=20)
    rows[-1].all_day = False
    calendar = CalendarRow("cal", "Cal, with; escapes", "Europe/Paris", True, 3600)
    content = FeedContent(calendar, singles=rows, reminder=30)
    body = render_calendar(content).body
    fixed: dict[str, timedelta] = {}
    made = [export._vevent(r, tz, uid=r.id, fixed=fixed) for r in rows]
    for vevent in made:
        vevent.add_component(export._alarm(30, str(vevent.get("SUMMARY", ""))))
    head, _, _ = body.partition(b"BEGIN:VEVENT\r\n")
    expected = head + b"".join(v.to_ical() for v in made) + b"END:VCALENDAR\r\n"
    assert body == expected
    assert b"BEGIN:VTIMEZONE\r\nTZID:Europe/Paris" in head and fixed  # and the fold's zone


def test_a_time_in_the_autumn_fold_is_left_to_export() -> None:
    tz = zone("Europe/Paris")
    folded = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 local, twice that night
    found = single_vevent(
        uid="u",
        title="t",
        starts=folded,
        ends=folded + timedelta(hours=1),
        all_day=False,
        description=None,
        location=None,
        created=folded,
        updated=folded,
        transparent=False,
        tz=tz,
        reminder=None,
    )
    assert found is None


def test_lines_are_folded_as_icalendar_folds_them() -> None:
    from icalendar.parser.string import _foldline

    from calendar_service.interop.ical.text import fold

    rnd = random.Random(75)
    for _ in range(3000):
        pieces = rnd.choice([["a", "\\", "^", "b,"], ["a", "\\", "é", "日", "😀", "^"]])
        line = "".join(rnd.choice(pieces) for _ in range(rnd.randrange(300)))
        assert fold(line) == _foldline(line), line
