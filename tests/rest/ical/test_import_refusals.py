"""What the import refuses, it refuses per UID and by the same rules as every other path: a
rule part value the rules refuse on create (``BYSECOND=60``), NUL in any text (the UID too),
which REST refuses with a 400; other control characters pass, as they do over REST."""

from __future__ import annotations

import httpx
from sqlalchemy import select

from calendar_service.platform.db import Database
from calendar_service.platform.inputs import NUL_MESSAGE
from calendar_service.platform.models import ical_uids_t
from tests.rest.conftest import EVENTS
from tests.rest.ical.support import ICS, IMPORT
from tests.rest.recurrence_support import Cal, calendar_in, listed
from tests.support import Factory


def _one(uid: str, *lines: str) -> str:
    return "\n".join(
        ["BEGIN:VEVENT", f"UID:{uid}", "DTSTAMP:20260301T000000Z", *lines, "END:VEVENT"]
    )


def _file(*events: str) -> bytes:
    return "\n".join(
        ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//test//EN", *events, "END:VCALENDAR", ""]
    ).encode()


def _import(api: httpx.Client, cal: Cal, body: bytes) -> dict[str, object]:
    answer = api.post(IMPORT, content=body, headers={**cal.headers, **ICS})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


GOOD = _one("good", "DTSTART:20260310T100000Z", "DTEND:20260310T110000Z", "SUMMARY:Good")


def test_a_rule_part_value_the_rules_cannot_take_is_an_error_of_its_uid_alone(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    report = _import(
        api,
        cal,
        _file(
            GOOD,
            _one(
                "leap-second",
                "DTSTART:20260310T100000Z",
                "DTEND:20260310T110000Z",
                "RRULE:FREQ=DAILY;BYSECOND=60",
                "SUMMARY:Leap",
            ),
        ),
    )
    assert report["created"] == 1
    errors = report["errors"]
    assert isinstance(errors, list) and [e["uid"] for e in errors] == ["leap-second"]
    assert "recurrence" in errors[0]["message"] and "BYSECOND" in errors[0]["message"]
    assert [e["title"] for e in listed(api, cal)] == ["Good"]


def test_nul_in_a_uid_or_a_text_is_an_error_of_its_uid_as_rest_refuses_it(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    cal = calendar_in(factory, "UTC")
    times = ("DTSTART:20260310T100000Z", "DTEND:20260310T110000Z")
    report = _import(
        api,
        cal,
        _file(
            GOOD,
            _one("nul\x00uid", *times, "SUMMARY:NUL in the UID"),
            _one("nul-summary", *times, "SUMMARY:Bad\x00title"),
            _one("nul-description", *times, "SUMMARY:D", "DESCRIPTION:x\x00y"),
            _one("nul-location", *times, "SUMMARY:L", "LOCATION:\x00"),
        ),
    )
    assert report["created"] == 1
    errors = {e["uid"]: e["message"] for e in report["errors"]}  # type: ignore[attr-defined]
    assert errors == {
        "nul\\u0000uid": f"UID: {NUL_MESSAGE}",
        "nul-summary": f"SUMMARY: {NUL_MESSAGE}",
        "nul-description": f"DESCRIPTION: {NUL_MESSAGE}",
        "nul-location": f"LOCATION: {NUL_MESSAGE}",
    }
    assert [e["title"] for e in listed(api, cal)] == ["Good"]
    stored = db.call(
        lambda conn: (
            conn.execute(select(ical_uids_t.c.uid).where(ical_uids_t.c.calendar_id == cal.id))
            .scalars()
            .all()
        )
    )
    assert stored == ["good"]
    # The same text over REST: refused, naming the field, with the same message.
    answer = api.post(
        EVENTS,
        json={
            "title": "Bad\x00title",
            "startsAt": "2026-03-10T10:00:00Z",
            "endsAt": "2026-03-10T11:00:00Z",
            "calendarId": cal.id,
        },
        headers=cal.headers,
    )
    assert answer.status_code == 400
    assert answer.json()["errors"] == [{"field": "title", "message": NUL_MESSAGE}]


def test_other_control_characters_come_in_as_rest_takes_them(
    api: httpx.Client, factory: Factory
) -> None:
    cal = calendar_in(factory, "UTC")
    report = _import(
        api,
        cal,
        _file(
            _one(
                "bell",
                "DTSTART:20260310T100000Z",
                "DTEND:20260310T110000Z",
                "SUMMARY:Bell\x07 rings",
                "DESCRIPTION:tab\there",
            ),
        ),
    )
    assert report["created"] == 1 and report["errors"] == []
    (event,) = listed(api, cal)
    assert event["title"] == "Bell\x07 rings" and event["description"] == "tab\there"
    answer = api.post(
        EVENTS,
        json={
            "title": "Bell\x07 rings",
            "startsAt": "2026-03-11T10:00:00Z",
            "endsAt": "2026-03-11T11:00:00Z",
            "calendarId": cal.id,
        },
        headers=cal.headers,
    )
    assert answer.status_code == 201, answer.text
