"""``POST /api/v1/calendar/events/import``: Google-, Apple- and Outlook-style files come in
with their recurrence, exceptions, zones and all-day events; importing twice changes
nothing; bad input is a clear 4xx or a per-UID entry in ``errors``, never a 5xx."""

from __future__ import annotations

import httpx

from calendar_service.access import call_history as history
from calendar_service.platform.db import Database
from tests.rest.ical.support import ICS, IMPORT
from tests.rest.recurrence_support import Cal, calendar_in, listed, watch
from tests.support import Factory, bearer, queued

GOOGLE = """BEGIN:VCALENDAR
PRODID:-//Google Inc//Google Calendar 70.9054//EN
VERSION:2.0
CALSCALE:GREGORIAN
METHOD:PUBLISH
X-WR-CALNAME:Work
X-WR-TIMEZONE:Europe/Berlin
BEGIN:VTIMEZONE
TZID:Europe/Berlin
X-LIC-LOCATION:Europe/Berlin
BEGIN:DAYLIGHT
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
TZNAME:CEST
DTSTART:19700329T020000
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU
END:DAYLIGHT
BEGIN:STANDARD
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
TZNAME:CET
DTSTART:19701025T030000
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU
END:STANDARD
END:VTIMEZONE
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260316T093000
DTEND;TZID=Europe/Berlin:20260316T100000
RRULE:FREQ=WEEKLY;WKST=MO;COUNT=5;BYDAY=MO
EXDATE;TZID=Europe/Berlin:20260330T093000
DTSTAMP:20260301T120000Z
UID:weekly-standup@google.com
CREATED:20260201T120000Z
SUMMARY:Stand-up
ATTENDEE;CN=Ann;PARTSTAT=ACCEPTED:mailto:ann@example.com
ATTENDEE;CN=Bob;PARTSTAT=NEEDS-ACTION:mailto:bob@example.com
BEGIN:VALARM
ACTION:DISPLAY
DESCRIPTION:Reminder
TRIGGER:-PT10M
END:VALARM
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260325T140000
DTEND;TZID=Europe/Berlin:20260325T143000
DTSTAMP:20260301T120000Z
UID:weekly-standup@google.com
RECURRENCE-ID;TZID=Europe/Berlin:20260323T093000
SUMMARY:Stand-up (moved)
SEQUENCE:1
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Europe/Berlin:20260406T093000
DTEND;TZID=Europe/Berlin:20260406T100000
DTSTAMP:20260301T120000Z
UID:weekly-standup@google.com
RECURRENCE-ID;TZID=Europe/Berlin:20260406T093000
STATUS:CANCELLED
SUMMARY:Stand-up
END:VEVENT
BEGIN:VEVENT
DTSTART;VALUE=DATE:20260501
DTEND;VALUE=DATE:20260502
DTSTAMP:20260301T120000Z
UID:labour-day@google.com
SUMMARY:Labour day
RRULE:FREQ=YEARLY
END:VEVENT
BEGIN:VEVENT
DTSTART:20260320T170000Z
DTEND:20260320T180000Z
DTSTAMP:20260301T120000Z
UID:drinks@google.com
SUMMARY:Drinks
LOCATION:Bar
DESCRIPTION:Line one\\nLine two\\, with a comma
END:VEVENT
END:VCALENDAR
"""

WINDOW = ("2026-03-01T00:00:00Z", "2026-06-01T00:00:00Z")


def _import(api: httpx.Client, cal: Cal, text: str | bytes, **params: str) -> httpx.Response:
    body = text.encode() if isinstance(text, str) else text
    return api.post(IMPORT, content=body, params=params, headers={**cal.headers, **ICS})


def _titles_and_local_starts(api: httpx.Client, cal: Cal) -> list[tuple[str, str]]:
    return [(e["title"], e["startsAt"]) for e in listed(api, cal, timeMin=WINDOW[0],
                                                         timeMax=WINDOW[1])]  # fmt: skip


def test_a_google_export_comes_in_with_its_series_exceptions_and_all_day_events(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    watch(db, cal.owner)
    answer = _import(api, cal, GOOGLE)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    report = answer.json()
    assert (report["created"], report["updated"], report["skipped"]) == (3, 0, 0)
    assert report["errors"] == []
    assert report["warnings"] == [
        {
            "uid": "weekly-standup@google.com",
            "message": "not imported, as events here have no place for them: 2 attendees, alarms",
        }
    ]
    assert _titles_and_local_starts(api, cal) == [
        ("Stand-up", "2026-03-16T09:30:00+01:00"),
        ("Drinks", "2026-03-20T18:00:00+01:00"),
        ("Stand-up (moved)", "2026-03-25T14:00:00+01:00"),
        # 30 March excluded (EXDATE), 6 April cancelled (STATUS:CANCELLED); after the DST change
        ("Stand-up", "2026-04-13T09:30:00+02:00"),
        ("Labour day", "2026-05-01T00:00:00+02:00"),
    ]
    drinks = next(e for e in listed(api, cal) if e["title"] == "Drinks")
    assert drinks["description"] == "Line one\nLine two, with a comma"
    assert drinks["location"] == "Bar"
    labour = next(e for e in listed(api, cal) if e["title"] == "Labour day")
    assert labour["allDay"] is True and labour["endsAt"] == "2026-05-02T00:00:00+02:00"
    # Each created event went through the outbox as any other change.
    kinds = sorted((kind, event["title"]) for kind, event in queued(db, cal.owner))
    assert kinds == [
        ("calendar.event.created", "Drinks"),
        ("calendar.event.created", "Labour day"),
        ("calendar.event.created", "Stand-up"),
        ("calendar.event.updated", "Stand-up (moved)"),
    ]


def test_importing_the_same_file_twice_changes_nothing_and_a_changed_file_updates_in_place(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    cal = calendar_in(factory, "Europe/Berlin")
    assert _import(api, cal, GOOGLE).json()["created"] == 3
    before = listed(api, cal, singleEvents="false")
    watch(db, cal.owner)

    again = _import(api, cal, GOOGLE).json()
    assert (again["created"], again["updated"], again["skipped"]) == (0, 0, 3)
    assert listed(api, cal, singleEvents="false") == before
    assert queued(db, cal.owner) == []

    changed = GOOGLE.replace("SUMMARY:Drinks", "SUMMARY:Drinks on the roof")
    report = _import(api, cal, changed).json()
    assert (report["created"], report["updated"], report["skipped"]) == (0, 1, 2)
    after = {e["id"]: e["title"] for e in listed(api, cal, singleEvents="false")}
    assert set(after) == {e["id"] for e in before}  # the same events, changed in place
    assert "Drinks on the roof" in after.values()
    assert [kind for kind, _ in queued(db, cal.owner)] == ["calendar.event.updated"]


OUTLOOK = """BEGIN:VCALENDAR
PRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN
VERSION:2.0
METHOD:PUBLISH
X-MS-OLK-FORCEINSPECTOROPEN:TRUE
BEGIN:VTIMEZONE
TZID:W. Europe Standard Time
BEGIN:STANDARD
DTSTART:16011028T030000
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010325T020000
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
END:DAYLIGHT
END:VTIMEZONE
BEGIN:VEVENT
CLASS:PUBLIC
CREATED:20260301T101010Z
DTEND;TZID="W. Europe Standard Time":20260402T110000
DTSTAMP:20260301T101010Z
DTSTART;TZID="W. Europe Standard Time":20260402T100000
LAST-MODIFIED:20260301T101010Z
ORGANIZER;CN=Carol:mailto:carol@example.com
PRIORITY:5
SEQUENCE:0
SUMMARY;LANGUAGE=en-gb:Review
TRANSP:OPAQUE
UID:040000008200E00074C5B7101A82E00800000000
X-MICROSOFT-CDO-BUSYSTATUS:BUSY
END:VEVENT
BEGIN:VEVENT
DTSTART;TZID=Pacific Standard Time:20260403T090000
DTEND;TZID=Pacific Standard Time:20260403T093000
DTSTAMP:20260301T101010Z
SUMMARY:Call with Seattle
UID:040000008200E00074C5B7101A82E00800000001
END:VEVENT
END:VCALENDAR
"""


def test_windows_zone_names_as_outlook_writes_them_are_mapped(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    report = _import(api, cal, OUTLOOK).json()
    assert (report["created"], report["errors"]) == (2, [])
    assert report["warnings"] == [
        {
            "uid": "040000008200E00074C5B7101A82E00800000000",
            "message": "not imported, as events here have no place for them: the organizer",
        }
    ]
    assert _titles_and_local_starts(api, cal) == [
        ("Review", "2026-04-02T08:00:00Z"),  # 10:00 in Berlin (summer time)
        ("Call with Seattle", "2026-04-03T16:00:00Z"),  # 09:00 in Seattle (no VTIMEZONE)
    ]


def _one(uid: str, *lines: str) -> str:
    return "\n".join(["BEGIN:VEVENT", f"UID:{uid}", "DTSTAMP:20260301T000000Z", *lines,
                      "END:VEVENT"])  # fmt: skip


def _file(*events: str) -> str:
    return "\n".join(["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", *events,
                      "END:VCALENDAR", ""])  # fmt: skip


def test_events_that_cannot_be_read_are_listed_per_uid_and_the_rest_comes_in(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    text = _file(
        _one("good", "DTSTART:20260310T100000Z", "DTEND:20260310T110000Z", "SUMMARY:Good"),
        _one("no-start", "DTEND:20260310T110000Z", "SUMMARY:No start"),
        _one("bad-zone", "DTSTART;TZID=Mars/Olympus:20260310T100000", "SUMMARY:Mars"),
        _one("broken", "DTSTART:2026031", "SUMMARY:Broken date"),
        _one("bad-rule", "DTSTART:20260310T100000Z", "RRULE:FREQ=MINUTELY", "SUMMARY:Often"),
        _one("backwards", "DTSTART:20260310T100000Z", "DTEND:20260310T090000Z"),
        _one("long", "DTSTART:20260311T100000Z", "SUMMARY:" + "x" * 400),
        _one("two-starts", "DTSTART:20260310T100000Z", "DTSTART:20260311T100000Z"),
    )
    answer = _import(api, cal, text)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["created"] == 2
    errors = {e["uid"]: e["message"] for e in report["errors"]}
    assert set(errors) == {"no-start", "bad-zone", "broken", "bad-rule", "backwards",
                           "two-starts"}  # fmt: skip
    assert "no DTSTART" in errors["no-start"]
    assert "'Mars/Olympus'" in errors["bad-zone"] and "IANA" in errors["bad-zone"]
    assert "DTSTART" in errors["broken"]
    assert "MINUTELY is not supported" in errors["bad-rule"]
    assert "ends before it starts" in errors["backwards"]
    titles = sorted(e["title"] for e in listed(api, cal))
    assert titles[0] == "Good" and titles[1].startswith("xxx") and len(titles[1]) == 300


def test_what_is_not_icalendar_is_a_400_and_nothing_is_imported(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    event = _one("a", "DTSTART:20260310T100000Z", "SUMMARY:A")
    cases = {
        "json": '{"title": "not ics"}',
        "text": "hello\nworld",
        "empty": "",
        "bare event": event,
        "cut short": "BEGIN:VCALENDAR\nVERSION:2.0\n" + event,
        "end mismatch": "BEGIN:VCALENDAR\nBEGIN:VEVENT\nEND:VTODO\nEND:VCALENDAR\n",
        "nested": "BEGIN:VCALENDAR\n"
        + "BEGIN:X-A\n" * 10_000
        + "END:X-A\n" * 10_000
        + "END:VCALENDAR\n",
        "bad line": "BEGIN:VCALENDAR\nthis is not a content line\nEND:VCALENDAR\n",
        "binary": b"\x00\xff\xfe\x89PNG\r\n".decode("latin-1"),
    }
    for name, text in cases.items():
        answer = _import(api, cal, text.encode("latin-1" if name == "binary" else "utf-8"))
        assert answer.status_code == 400, (name, answer.text)
        problem = answer.json()
        assert problem["code"] == "invalid_icalendar", name
        assert problem["errors"][0]["field"] == "body"
        assert problem["detail"] == problem["errors"][0]["message"]
    assert listed(api, cal) == []


def test_a_file_too_large_or_with_too_many_events_is_refused_whole(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    event = _one("e-{}", "DTSTART:20260310T100000Z", "SUMMARY:" + "y" * 1800)
    big = _file(*(event.format(i) for i in range(5600)))  # over 10 MB
    assert len(big) > 10_000_000
    answer = _import(api, cal, big)
    assert answer.status_code == 413
    assert answer.json()["code"] == "payload_too_large"
    assert "split" in answer.json()["detail"]

    many = _file(*(_one(f"m-{i}", "DTSTART:20260310T100000Z") for i in range(5001)))
    answer = _import(api, cal, many)
    assert answer.status_code == 413
    assert "5000 events" in answer.json()["detail"]
    assert listed(api, cal) == []


def test_the_import_needs_text_calendar_a_write_key_and_a_calendar_within_its_reach(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    cal = calendar_in(factory, "UTC")
    text = _file(_one("a", "DTSTART:20260310T100000Z", "SUMMARY:A")).encode()
    json_type = {"Content-Type": "application/json"}
    as_json = api.post(IMPORT, content=text, headers={**cal.headers, **json_type})
    assert as_json.status_code == 415 and "text/calendar" in as_json.json()["detail"]

    key_id, secret = factory.key(cal.owner, permission="read")
    read_only = api.post(IMPORT, content=text, headers={**bearer(secret), **ICS})
    assert read_only.status_code == 401
    assert read_only.json()["code"] == "insufficient_scope"
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["operation"], c["status"], c["path"]) for c in calls] == [
        ("importCalendarEvents", 401, IMPORT)
    ]

    other = factory.calendar(cal.owner, name="Other")
    elsewhere = _import(api, cal, text, calendarId=other)  # the key reaches one calendar
    assert elsewhere.status_code == 401 and elsewhere.json()["code"] == "insufficient_scope"
    assert api.post(IMPORT, content=text, headers=ICS).status_code == 401  # no key

    _, everything = factory.key(cal.owner)
    named = api.post(IMPORT, content=text, params={"calendar": "Other"},
                     headers={**bearer(everything), **ICS})  # fmt: skip
    assert named.status_code == 200 and named.json()["created"] == 1
    in_other = listed(api, Cal(cal.owner, other, bearer(everything)), calendarIds=other)
    assert [e["calendarId"] for e in in_other if e["title"] == "A"] == [other]
    unknown = api.post(IMPORT, content=text, params={"calendar": "Nope"},
                       headers={**bearer(everything), **ICS})  # fmt: skip
    assert unknown.status_code == 400 and "Nope" in unknown.text


def test_floating_times_are_read_in_the_calendars_zone_and_dates_are_all_day(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "America/New_York")
    text = _file(
        _one("floating", "DTSTART:20260310T090000", "DURATION:PT45M", "SUMMARY:Floating"),
        _one("day", "DTSTART;VALUE=DATE:20260311", "SUMMARY:Day off"),
    )
    assert _import(api, cal, text).json()["created"] == 2
    events = {e["title"]: e for e in listed(api, cal)}
    assert events["Floating"]["startsAt"] == "2026-03-10T09:00:00-04:00"
    assert events["Floating"]["endsAt"] == "2026-03-10T09:45:00-04:00"
    assert events["Day off"]["allDay"] is True
    assert events["Day off"]["endsAt"] == "2026-03-12T00:00:00-04:00"


def test_changed_occurrences_without_their_series_or_rule_are_said(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    text = _file(
        _one("single", "DTSTART:20260310T100000Z", "SUMMARY:Once"),
        _one("single", "RECURRENCE-ID:20260310T100000Z", "DTSTART:20260310T120000Z",
             "SUMMARY:Once, moved"),
        _one("orphan", "RECURRENCE-ID:20260311T100000Z", "DTSTART:20260311T110000Z",
             "SUMMARY:Invitation to one occurrence"),
        _one("orphan", "RECURRENCE-ID:20260312T100000Z", "DTSTART:20260312T100000Z",
             "STATUS:CANCELLED"),
        _one("not-produced", "DTSTART:20260310T100000Z", "RRULE:FREQ=DAILY;COUNT=2",
             "SUMMARY:Twice"),
        _one("not-produced", "RECURRENCE-ID:20260320T100000Z", "DTSTART:20260320T100000Z",
             "SUMMARY:Not one of them"),
    )  # fmt: skip
    report = _import(api, cal, text).json()
    assert (report["created"], report["errors"]) == (3, [])
    said = {(w["uid"], w["message"]) for w in report["warnings"]}
    assert ("single", "1 changed occurrences of an event that does not repeat (no RRULE or "
            "RDATE): ignored") in said  # fmt: skip
    assert any(uid == "orphan" and "not in the file" in m for uid, m in said)
    assert any(uid == "orphan" and "each is imported as an event of its own" in m
               for uid, m in said)  # fmt: skip
    assert any(uid == "not-produced" and "2026-03-20" in m for uid, m in said)
    titles = sorted(e["title"] for e in listed(api, cal))
    assert titles == ["Invitation to one occurrence", "Once", "Twice", "Twice"]
