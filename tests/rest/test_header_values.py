"""Header values never carry user text: a refusal naming a calendar called "Личное", or one
with quotes and line breaks in its name, is a 401 whose challenge is a fixed text, with the
names in the body only (issue 24 C)."""

from __future__ import annotations

import re

import httpx
import pytest

from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.models import DEFAULT_CALENDAR_NAME
from tests.rest.conftest import EVENTS, event_body
from tests.rest.ical.support import ICS, IMPORT, fetch, make_feed
from tests.support import Factory, bearer

FREE_BUSY = "/api/v1/calendar/freeBusy"
WINDOW = {"timeMin": "2026-03-02T00:00:00Z", "timeMax": "2026-03-03T00:00:00Z"}
_FILE = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VEVENT\r\nUID:one@test\r\n"
    "DTSTAMP:20260301T120000Z\r\nDTSTART:20260302T090000Z\r\nDTEND:20260302T100000Z\r\n"
    "SUMMARY:One\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)
# A quoted string of RFC 9110 (qdtext: printable ASCII but '"' and '\'), as RFC 6750 asks.
_CHALLENGE = re.compile(
    r'^Bearer realm="calendar", error="insufficient_scope", '
    r'error_description="[\x20\x21\x23-\x5b\x5d-\x7e]*"(, scope="[a-z:]+")?$'
)
NAMES = [DEFAULT_CALENDAR_NAME, 'Team "A"\r\nX-Injected: yes', "Back\\slash \x7f\u2028 and more"]


def _refusals(api: httpx.Client, secret: str, other: str, other_name: str) -> list[httpx.Response]:
    """Every way a one-calendar key names a calendar it cannot reach."""
    headers = bearer(secret)
    return [
        api.post(FREE_BUSY, json={**WINDOW, "calendarIds": [other]}, headers=headers),
        api.post(EVENTS, json=event_body(calendar=other_name), headers=headers),
        api.post(EVENTS, json=event_body(calendarId=other), headers=headers),
        api.post(
            IMPORT, params={"calendar": other_name}, content=_FILE, headers={**ICS, **headers}
        ),
        api.post(IMPORT, params={"calendarId": other}, content=_FILE, headers={**ICS, **headers}),
        api.get(EVENTS, params={"calendarIds": other}, headers=headers),
        api.get(EVENTS, params={"calendarIds": other_name}, headers=headers),
    ]


@pytest.mark.parametrize("name", NAMES, ids=["cyrillic", "quotes-crlf", "backslash-del-u2028"])
def test_a_one_calendar_key_refused_another_calendar_gets_a_401_with_a_fixed_challenge(
    api: httpx.Client, factory: Factory, name: str
) -> None:
    owner = factory.owner()
    own = owner.default_calendar_id
    if name != DEFAULT_CALENDAR_NAME:
        own = factory.calendar(owner, name=name)
    other = factory.calendar(owner, name="Work")
    _, secret = factory.key(owner, calendar_id=own)
    for response in _refusals(api, secret, other, "Work"):
        assert response.status_code == 401, (response.request.url, response.text)
        problem = response.json()
        assert problem["code"] == "insufficient_scope"
        assert repr(name) in problem["detail"]  # the body names the key's calendar
        challenge = response.headers["www-authenticate"]
        assert _CHALLENGE.match(challenge), challenge
        assert "X-Injected" not in challenge and "x-injected" not in response.headers


def test_the_challenge_describes_each_reason_in_one_fixed_phrase_the_body_in_detail(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, reader = factory.key(owner, permission="read")
    malformed = [
        api.get(EVENTS, headers={"Authorization": "Bearer calsk_short"}),
        api.get(EVENTS, headers={"Authorization": "Basic dXNlcjpwYXNz"}),
    ]
    read_only = api.post(EVENTS, json=event_body(), headers=bearer(reader))

    def description(response: httpx.Response) -> str:
        assert response.status_code == 401, response.text
        found = re.search(r'error_description="([^"]*)"', response.headers["www-authenticate"])
        assert found, response.headers["www-authenticate"]
        return found.group(1)

    assert malformed[0].json()["detail"] != malformed[1].json()["detail"]
    assert description(malformed[0]) == description(malformed[1]) == "The API key is malformed."
    assert description(read_only) == "The key may not do this or reach this calendar."


def _plain_headers(response: httpx.Response) -> None:
    for name, value in response.headers.raw:
        assert all(0x20 <= b < 0x7F for b in value), (name, value)


@pytest.mark.parametrize("name", NAMES, ids=["cyrillic", "quotes-crlf", "backslash-del-u2028"])
def test_every_answer_about_a_calendar_with_such_a_name_has_plain_ascii_headers(
    api: httpx.Client, factory: Factory, db: Database, config: Config, name: str
) -> None:
    """Location, RateLimit, Cache-Control, the feed's Content-Disposition and ETag: made of
    ids, numbers and fixed texts, whatever the calendar is called."""
    owner = factory.owner()
    own = owner.default_calendar_id
    if name != DEFAULT_CALENDAR_NAME:
        own = factory.calendar(owner, name=name)
    _, secret = factory.key(owner)
    _, one = factory.key(owner, calendar_id=own)
    headers = bearer(secret)
    created = api.post(EVENTS, json=event_body(calendarId=own), headers=headers)
    assert created.status_code == 201, created.text
    assert created.json()["calendar"] == name
    by_name = api.post(EVENTS, json=event_body(calendar=name), headers=bearer(one))
    assert by_name.status_code == 201, by_name.text
    imported = api.post(
        IMPORT, params={"calendar": name}, content=_FILE, headers={**ICS, **headers}
    )
    assert imported.status_code == 200, imported.text
    listed = api.get(EVENTS, headers=bearer(one))
    assert [c["name"] for c in listed.json()["calendars"]] == [name]
    feed = fetch(make_feed(db, config, owner, own)["url"])
    assert feed.status_code == 200
    assert feed.headers["content-disposition"] == 'inline; filename="calendar.ics"'
    assert "X-WR-CALNAME:" + name.replace("\\", "\\\\").replace("\r\n", "\\n") in feed.text
    for response in (created, by_name, imported, listed, feed):
        _plain_headers(response)
