"""The pieces of invitations that need no database: attendees as sent, what a change tells
whom, the message made of it (parsed back with ``email`` and ``icalendar``), signed links
(docs/invitations.md)."""

from __future__ import annotations

import email
import email.policy
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import pytest
from icalendar import Calendar

from calendar_service.calendar.attendees import check_attendees
from calendar_service.delivery.mail.messages import build
from calendar_service.delivery.mail.replies import when_words
from calendar_service.journal.invitations import plan
from calendar_service.journal.reply_links import make_token, read_token, reply_links
from calendar_service.platform.emails import mail_address
from calendar_service.platform.errors import FieldError

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
ORGANIZER = {"email": "owner@example.com", "name": "owner@example.com"}


def event(**extra: Any) -> dict[str, Any]:
    return {
        "id": "ev_1",
        "title": "Planning",
        "startsAt": "2027-03-02T10:00:00+01:00",
        "endsAt": "2027-03-02T10:30:00+01:00",
        "allDay": False,
        "description": None,
        "location": None,
        "transparency": "opaque",
        "organizer": ORGANIZER,
        "attendees": [{"email": "ana@example.org", "responseStatus": "needsAction"}],
        "sequence": 0,
        **extra,
    }


def test_attendees_are_checked_normalized_and_keep_their_answers() -> None:
    errors: list[FieldError] = []
    found = check_attendees(
        [{"email": "Ana@Пример.РФ", "name": " Ana "}, {"email": "bob@example.com"}],
        errors,
        previous=[{"email": "bob@example.com", "responseStatus": "accepted"}],
    )
    assert errors == []
    assert found == [
        {"email": "Ana@пример.рф", "name": "Ana", "responseStatus": "needsAction"},
        {"email": "bob@example.com", "responseStatus": "accepted"},
    ]
    assert mail_address("Ana@пример.рф") == "Ana@xn--e1afmkfd.xn--p1ai"


@pytest.mark.parametrize(
    "attendee",
    [
        {"email": "no-at-sign"},
        {"email": "a@b.c\r\nBcc: x@y.z"},
        {"email": "a@example.com", "name": "line\nbreak"},
        {"email": "a@example.com", "responseStatus": "yes"},
        {"email": "a@example.com", "optional": "true"},
    ],
)
def test_a_bad_attendee_is_refused_by_field(attendee: dict[str, Any]) -> None:
    errors: list[FieldError] = []
    assert check_attendees([attendee], errors) is None
    assert errors and errors[0]["field"].startswith("attendees.0")


def test_what_each_change_tells_whom() -> None:
    created = plan({"id": "chg_1", "kind": "created", "before": None, "after": event()})
    assert [(m, [r["email"] for r in rs]) for m, _, rs in created] == [
        ("REQUEST", ["ana@example.org"])
    ]
    titled = plan(
        {"id": "c", "kind": "updated", "before": event(), "after": event(title="Renamed")}
    )
    assert titled == []
    bob = {"email": "bob@example.org", "responseStatus": "needsAction"}
    swapped = plan(
        {
            "id": "c",
            "kind": "updated",
            "before": event(),
            "after": event(
                attendees=[bob, {**ORGANIZER, "responseStatus": "accepted"}], sequence=1
            ),
        }
    )
    assert [(m, [r["email"] for r in rs]) for m, _, rs in swapped] == [
        ("CANCEL", ["ana@example.org"]),
        ("REQUEST", ["bob@example.org"]),  # never the organizer
    ]
    deleted = plan({"id": "c", "kind": "deleted", "before": event(), "after": None})
    assert [m for m, _, _ in deleted] == ["CANCEL"]


HOSTILE = [
    "Board\r\nBcc: victim@example.com",
    "Личное — встреча",
    "<b>bold</b> & <script>alert(1)</script>",
    "x" * 300,
]


@pytest.mark.parametrize("title", HOSTILE)
def test_a_message_keeps_hostile_text_out_of_headers_and_markup(title: str) -> None:
    payload = {
        "method": "REQUEST",
        "event": event(title=title, description=title, location=title),
        "sequence": 0,
        "recipient": {"email": "ana@example.org", "name": title[:100].replace("\n", " ")},
        "links": reply_links(
            base_url="https://cal.example",
            key=b"k" * 32,
            event_id="ev_1",
            email="ana@example.org",
            sequence=0,
        ),
    }
    raw = build(
        payload, message_id="mail_1", mail_from="calendar@example.com", service_name="cal",
        now=NOW,
    ).as_bytes()  # fmt: skip
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(parsed, EmailMessage)
    assert not parsed.defects
    assert parsed.get_all("Bcc") is None
    assert [a.addr_spec for a in parsed["To"].addresses] == ["ana@example.org"]
    subject = str(parsed["Subject"])
    assert "\n" not in subject and "\r" not in subject and len(subject) <= 200
    alternative, attachment = parsed.iter_parts()
    _plain, html_part, calendar_part = alternative.iter_parts()
    html_text = html_part.get_content()
    assert "<script>" not in html_text and "<b>" not in html_text
    cal = Calendar.from_ical(calendar_part.get_content())
    (vevent,) = cal.walk("VEVENT")
    assert str(vevent["SUMMARY"]) == title.replace("\r\n", "\n")
    assert str(cal["METHOD"]) == "REQUEST"
    assert calendar_part.get_param("method") == "REQUEST"
    assert Calendar.from_ical(attachment.get_payload(decode=True)).to_ical() == cal.to_ical()


def test_a_link_token_is_read_back_only_as_signed() -> None:
    key = b"k" * 32
    token = make_token(key=key, event_id="ev_1", email="ana@example.org", sequence=3)
    assert read_token(key, token) == ("ev_1", "ana@example.org", 3)
    assert read_token(b"x" * 32, token) is None
    payload, signature = token.split(".")
    assert read_token(key, payload[:-1] + "A." + signature) is None
    assert read_token(key, "garbage") is None


def test_a_series_invitation_repeats_in_its_zone_and_an_all_day_one_in_dates() -> None:
    timed = event(
        startsAt="2027-03-29T10:00:00+02:00",
        endsAt="2027-03-29T11:00:00+02:00",
        recurrence=["RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=5", "EXDATE:20270405T080000Z"],
        timeZone="Europe/Berlin",
    )
    payload = {
        "method": "REQUEST",
        "event": timed,
        "sequence": 2,
        "recipient": timed["attendees"][0],
    }
    message = build(
        payload, message_id="m", mail_from="calendar@example.com", service_name="cal", now=NOW
    )
    cal = Calendar.from_ical(message.get_body(("calendar",)).get_content())  # type: ignore[union-attr]
    (vevent,) = cal.walk("VEVENT")
    assert vevent["DTSTART"].params["TZID"] == "Europe/Berlin"
    assert vevent["DTSTART"].dt.hour == 10 and int(vevent["SEQUENCE"]) == 2
    assert [z["TZID"] for z in cal.walk("VTIMEZONE")] == ["Europe/Berlin"]
    assert str(vevent["RRULE"].to_ical(), "ascii") == "FREQ=WEEKLY;COUNT=5;BYDAY=MO"
    all_day = event(
        startsAt="2027-03-29T00:00:00Z",
        endsAt="2027-03-30T00:00:00Z",
        allDay=True,
        recurrence=["RRULE:FREQ=DAILY;COUNT=3", "EXDATE;VALUE=DATE:20270330"],
    )
    payload = {
        "method": "CANCEL",
        "event": all_day,
        "sequence": 1,
        "recipient": all_day["attendees"][0],
    }
    message = build(
        payload, message_id="m", mail_from="calendar@example.com", service_name="cal", now=NOW
    )
    cal = Calendar.from_ical(message.get_body(("calendar",)).get_content())  # type: ignore[union-attr]
    (vevent,) = cal.walk("VEVENT")
    assert str(cal["METHOD"]) == "CANCEL" and str(vevent["STATUS"]) == "CANCELLED"
    assert vevent["DTSTART"].dt.isoformat() == "2027-03-29"


@pytest.mark.parametrize(
    ("times", "words"),
    [
        (
            {"startsAt": "2027-03-02T11:00:00+01:00", "endsAt": "2027-03-02T11:30:00+01:00"},
            "Tuesday 2 March 2027, 11:00 to 11:30 (Europe/Berlin)",
        ),
        (
            {"startsAt": "2027-03-02T23:00:00+01:00", "endsAt": "2027-03-03T01:00:00+01:00"},
            "Tuesday 2 March 2027, 23:00 to Wednesday 3 March 2027, 01:00 (Europe/Berlin)",
        ),
        (
            {"startsAt": "2027-03-02T00:00:00+01:00", "endsAt": "2027-03-03T00:00:00+01:00",
             "allDay": True},
            "Tuesday 2 March 2027 (all day)",
        ),
        (
            {"startsAt": "2027-03-02T00:00:00+01:00", "endsAt": "2027-03-05T00:00:00+01:00",
             "allDay": True},
            "Tuesday 2 March 2027 to Thursday 4 March 2027 (all day)",
        ),
    ],
)  # fmt: skip
def test_the_reply_page_says_an_events_time_in_words_in_its_zone(
    times: dict[str, Any], words: str
) -> None:
    assert when_words(times, "Europe/Berlin") == words
