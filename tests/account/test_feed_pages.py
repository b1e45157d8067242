"""The calendar feeds pages: a feed made in the browser serves its calendar at the address it
shows (once); revoked, that address is a 404; the fetches are in the feed's history."""

from __future__ import annotations

import re
from typing import Any

import httpx
from icalendar import Calendar

from tests.account.conftest import Settings, browser_sign_in, nav, signed_in
from tests.rest.conftest import EVENTS
from tests.rest.ical.support import fetch
from tests.support import Factory, Owner, RunningServer, bearer, delete_all


def _event_in(api: httpx.Client, factory: Factory, owner: Owner, calendar_id: str) -> None:
    _, secret = factory.key(owner)
    body = {
        "title": "Dentist",
        "calendarId": calendar_id,
        "startsAt": "2031-06-02T09:00:00Z",
        "endsAt": "2031-06-02T09:30:00Z",
    }
    assert api.post(EVENTS, json=body, headers=bearer(secret)).status_code == 201


def _summaries(body: bytes) -> list[str]:
    return [str(e["SUMMARY"]) for e in Calendar.from_ical(body).walk("VEVENT")]


def test_the_owner_makes_a_feed_in_the_browser_and_revoking_it_makes_its_url_a_404(
    page: Any, owner: Owner, factory: Factory, api: httpx.Client
) -> None:
    work = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    _event_in(api, factory, owner, work)
    browser_sign_in(page, owner)
    nav(page, "Feeds").click()
    page.get_by_label("Calendar").select_option(label="Work")
    page.get_by_role("button", name="Create feed").click()
    page.get_by_role("heading", name="Feed of “Work” created").wait_for()
    url = page.get_by_label("Feed address").input_value()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/ical/[0-9A-Za-z]{43}\.ics", url)

    served = fetch(url, **{"User-Agent": "Google-Calendar-Importer"})
    assert served.status_code == 200
    assert _summaries(served.content) == ["Dentist"]

    page.get_by_role("link", name="I have copied it — back to feeds").click()
    page.get_by_role("link", name="History of the feed of Work").click()
    page.get_by_role("cell", name="Google-Calendar-Importer").wait_for()
    page.get_by_role("link", name="Calendar feeds").click()
    page.get_by_role("link", name="Revoke the feed of Work").click()
    page.get_by_role("button", name="Revoke feed").click()
    page.get_by_role("status").filter(has_text="The feed is revoked").wait_for()
    assert page.get_by_text("Revoked", exact=True).count() == 1

    assert fetch(url).status_code == 404


def test_the_feed_pages_show_nothing_of_another_owner_and_no_url_after_creation(
    settings: Settings, factory: Factory, server: RunningServer
) -> None:
    other = factory.owner()
    created = settings.post("/feeds", {"calendar": other.default_calendar_id})
    assert created.status_code == 400
    assert "no calendar" in created.text

    made = settings.post("/feeds", {"calendar": settings.owner.default_calendar_id})
    assert made.status_code == 201
    assert made.headers["cache-control"] == "no-store"
    token = re.search(r"/ical/([0-9A-Za-z]{43})\.ics", made.text)
    assert token is not None
    listing = settings.get("/feeds")
    assert listing.status_code == 200
    assert token.group(1) not in listing.text
    assert token.group(1)[:6] in listing.text

    feed_id = re.search(r"/feeds/(feed_[0-9A-Za-z]+)/revoke", listing.text)
    assert feed_id is not None
    theirs = signed_in(server, factory.owner())
    try:
        assert theirs.get(f"/feeds/{feed_id.group(1)}").status_code == 404
        assert theirs.post(f"/feeds/{feed_id.group(1)}/revoke").status_code == 404
    finally:
        theirs.client.close()
    assert settings.get(f"/feeds/{feed_id.group(1)}").status_code == 200


def test_a_feed_of_a_deleted_calendar_stays_listed_revoked_with_its_history_and_answers_404(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    work = factory.calendar(settings.owner, name="Work")
    made = settings.post("/feeds", {"calendar": work})
    url = re.search(r"http://[^\"<]+/ical/[0-9A-Za-z]{43}\.ics", made.text)
    assert url is not None
    assert fetch(url.group(0), **{"User-Agent": "Before-Deletion"}).status_code == 200
    delete_all(factory.db, settings.owner, work)
    assert fetch(url.group(0)).status_code == 404
    listing = settings.get("/feeds").text
    assert "(deleted calendar)" in listing and "Revoked" in listing
    feed_id = re.search(r"/feeds/(feed_[0-9A-Za-z]+)\"", listing)
    assert feed_id is not None
    history = settings.get(f"/feeds/{feed_id.group(1)}")
    assert history.status_code == 200
    assert "Feed of “(deleted calendar)”" in history.text
    assert "Before-Deletion" in history.text


def test_the_default_reminder_is_set_on_the_feeds_page_and_a_bad_one_named(
    settings: Settings,
) -> None:
    refused = settings.post("/feeds/reminder", {"minutes_before": "99999"})
    assert refused.status_code == 400
    assert 'aria-invalid="true"' in refused.text and "40320" in refused.text
    saved = settings.post("/feeds/reminder", {"minutes_before": "10"})
    assert saved.status_code == 303
    page = settings.client.get(saved.headers["location"])
    assert "feeds carry the reminder" in page.text and 'value="10"' in page.text
    assert settings.post("/feeds/reminder", {"minutes_before": ""}).status_code == 303
    assert 'name="minutes_before" type="number"' in settings.get("/feeds").text
