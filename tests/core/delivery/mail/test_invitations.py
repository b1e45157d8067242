"""The pieces of invitations that need no database: attendees as sent, the message made of a
change (parsed back with ``email`` and ``icalendar``); what a change tells whom and the signed
links are the journal's (``tests/core/journal/test_invitations.py``; docs/invitations.md)."""

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
from calendar_service.journal.reply_links import reply_links
from calendar_service.platform.emails import mail_address
from calendar_service.platform.errors import FieldError
from tests.core.journal.test_invitations import event

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)


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
