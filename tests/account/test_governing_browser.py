"""Governing what agents did, in real headless Chromium: a misbehaving key revoked and its work
undone in two clicks from the keys page; a change that waits approved on *Pending*; a change
undone on *Activity*, and its filters (key, calendar, days) at each width, axe clean.
Screenshots go to artifacts/screenshots/governing-*.png."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import browser_sign_in, nav, screenshot
from tests.rest.conftest import create_event
from tests.support import Factory, Owner, RunningServer, bearer

EVENTS = "/api/v1/calendar/events"


def _tab(browser: Any, server: RunningServer, width: int) -> Any:
    context = browser.new_context(
        base_url=server.url,
        viewport={"width": width, "height": 900},
        device_scale_factor=1,
        locale="en-GB",
        timezone_id="UTC",
    )
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    return tab


@pytest.mark.parametrize("width", [390, 1280], ids=["390px", "1280px"])
def test_revoking_a_misbehaving_key_and_undoing_its_work_is_two_clicks(
    browser: Any,
    server: RunningServer,
    api: httpx.Client,
    factory: Factory,
    owner: Owner,
    width: int,
) -> None:
    _, helper = factory.key(owner, name="Good assistant")
    _, rogue = factory.key(owner, name="Rogue agent")
    meeting = create_event(api, helper, title="Board meeting")
    api.delete(f"{EVENTS}/{meeting['id']}", headers=bearer(rogue))
    spam = create_event(api, rogue, title="Buy cheap watches")
    tab = _tab(browser, server, width)
    try:
        browser_sign_in(tab, owner)
        tab.get_by_role("link", name="Undo work of Rogue agent").click()  # click 1
        expect(tab.get_by_role("heading", name="Undo the work of “Rogue agent”?")).to_be_visible()
        expect(tab.get_by_text("Will be undone: 2 changes")).to_be_visible()
        expect(tab.get_by_text("Buy cheap watches")).to_be_visible()
        expect(tab.get_by_text("Board meeting")).to_be_visible()
        expect(tab.get_by_role("checkbox", name=re.compile("Revoke the key too"))).to_be_checked()
        screenshot(tab, f"governing-undo-confirm-{width}")
        tab.get_by_role("button", name="Revoke and undo").click()  # click 2
        expect(
            tab.get_by_role("heading", name="The work of “Rogue agent” is undone")
        ).to_be_visible()
        expect(tab.get_by_role("status")).to_contain_text("2 changes undone")
        expect(tab.get_by_role("status")).to_contain_text("The key is revoked")
        screenshot(tab, f"governing-undone-{width}")
    finally:
        tab.context.close()
    assert api.get(EVENTS, headers=bearer(rogue)).status_code == 401
    assert api.get(f"{EVENTS}/{meeting['id']}", headers=bearer(helper)).status_code == 200
    assert api.get(f"{EVENTS}/{spam['id']}", headers=bearer(helper)).status_code == 404


def test_the_owner_approves_on_pending_and_undoes_on_activity(
    page: Any, api: httpx.Client, factory: Factory, owner: Owner
) -> None:
    _, careful = factory.key(owner, name="Careful agent", approval="destructive")
    event = create_event(api, careful, title="Quarterly review", location="Room 4")
    waits = api.patch(
        f"{EVENTS}/{event['id']}", json={"location": "Room 9"}, headers=bearer(careful)
    )
    assert waits.status_code == 202
    browser_sign_in(page, owner)
    nav(page, "Pending").click()
    card = page.locator("main").get_by_role("listitem").filter(has_text="Quarterly review")
    expect(card).to_contain_text("Careful agent")
    expect(card.get_by_role("cell", name="Room 4")).to_be_visible()
    expect(card.get_by_role("cell", name="Room 9")).to_be_visible()
    screenshot(page, "governing-pending")
    card.get_by_role("button", name=re.compile("^Approve")).click()
    expect(page.get_by_role("status")).to_contain_text("Approved")
    assert api.get(f"{EVENTS}/{event['id']}", headers=bearer(careful)).json()["location"] == (
        "Room 9"
    )

    nav(page, "Activity").click()
    latest = page.locator("main").get_by_role("listitem").first
    expect(latest).to_contain_text("Quarterly review")
    expect(latest).to_contain_text("approved by you")
    latest.locator("summary").click()
    expect(latest.get_by_role("cell", name="Room 4")).to_be_visible()
    screenshot(page, "governing-activity")
    latest.get_by_role("button", name=re.compile("^Undo")).click()
    expect(page.get_by_role("status")).to_contain_text("Undone")
    assert api.get(f"{EVENTS}/{event['id']}", headers=bearer(careful)).json()["location"] == (
        "Room 4"
    )
    changes = page.locator("main").get_by_role("listitem")
    changes.first.get_by_role("link", name="History of this event").click()
    expect(page.get_by_role("heading", name="History of an event")).to_be_visible()
    expect(changes).to_have_count(3)  # created, the approved change, its undo


@pytest.mark.parametrize("width", [390, 1024, 1280], ids=["390px", "1024px", "1280px"])
def test_the_activity_page_filters_by_key_calendar_and_days(
    browser: Any,
    server: RunningServer,
    api: httpx.Client,
    factory: Factory,
    owner: Owner,
    width: int,
) -> None:
    work = factory.calendar(owner, name="Work")
    _, booker = factory.key(owner, name="Booking bot")
    _, planner = factory.key(owner, name="Planner")
    create_event(api, booker, title="Dentist")
    create_event(api, booker, title="Standup", calendarId=work)
    create_event(api, planner, title="Gym")
    today = utcnow().date()
    tab = _tab(browser, server, width)
    try:
        browser_sign_in(tab, owner, start="/settings/activity")
        changes = tab.locator("main").get_by_role("listitem")
        expect(changes).to_have_count(3)
        tab.get_by_label("Made by").select_option(label="Booking bot")
        tab.get_by_label("Calendar").select_option(label="Work")
        tab.get_by_label("From", exact=True).fill(today.isoformat())
        tab.get_by_label("To", exact=True).fill(today.isoformat())
        tab.get_by_role("button", name="Filter").click()
        expect(changes).to_have_count(1)
        expect(changes.first).to_contain_text("Standup")
        expect(tab.get_by_label("To", exact=True)).to_have_value(today.isoformat())
        found = Axe().run(tab).response["violations"]
        assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
        screenshot(tab, f"governing-activity-filtered-{width}")
        yesterday = (today - timedelta(days=1)).isoformat()
        tab.get_by_label("To", exact=True).fill(yesterday)
        tab.get_by_role("button", name="Filter").click()
        expect(tab.get_by_text("No changes match these filters")).to_be_visible()
        tab.get_by_role("link", name="Clear").click()
        expect(changes).to_have_count(3)
    finally:
        tab.context.close()
