"""A scheduling link's page in real headless Chromium at 390, 1024 and 1280 px: the slots in
the browser's zone (detected by the page's script), a time booked with the keyboard only, the
confirmation and its cancel, axe clean at each step. Screenshots go to
artifacts/screenshots/book-*.png."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import screenshot
from tests.support import Factory, RunningServer, bearer

LINKS = "/api/v1/calendar/schedulingLinks"
NEW_YORK = ZoneInfo("America/New_York")


def _clean(tab: Any) -> None:
    found = Axe().run(tab).response["violations"]
    assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []


def _tab_to(tab: Any, test: str, most: int = 40) -> None:
    """Press Tab until the focused element passes ``test`` (a JS expression on ``el``)."""
    for _ in range(most):
        tab.keyboard.press("Tab")
        if tab.evaluate(f"(() => {{ const el = document.activeElement; return {test}; }})()"):
            return
    raise AssertionError(f"Tab never reached {test}")


@pytest.mark.parametrize("width", [390, 1024, 1280], ids=["390px", "1024px", "1280px"])
def test_a_guest_books_and_cancels_with_the_keyboard_in_their_own_zone(
    browser: Any, server: RunningServer, api: httpx.Client, factory: Factory, width: int
) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)
    day = (utcnow() + timedelta(days=2)).astimezone(UTC).date().isoformat()
    made = api.post(
        LINKS,
        json={
            "title": "Intro call",
            "durationMinutes": 30,
            "timeMin": f"{day}T14:00:00Z",
            "timeMax": f"{day}T16:00:00Z",
            "description": "Thirty minutes to get to know each other.",
        },
        headers=bearer(secret),
    )
    assert made.status_code == 201, made.text
    path = "/book/" + made.json()["url"].rsplit("/", 1)[1]
    start = datetime.fromisoformat(f"{day}T14:00:00+00:00").astimezone(NEW_YORK)
    context = browser.new_context(
        base_url=server.url,
        viewport={"width": width, "height": 900},
        device_scale_factor=1,
        locale="en-US",
        timezone_id="America/New_York",
    )
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    problems: list[str] = []
    tab.on("pageerror", lambda e: problems.append(str(e)))
    try:
        tab.goto(path)
        # The script moved the page to the browser's zone.
        expect(tab).to_have_url(re.compile(r"timeZone=America%2FNew_York"))
        expect(tab.get_by_label("Time zone")).to_have_value("America/New_York")
        expect(tab.get_by_role("heading", name="Intro call")).to_be_visible()
        first = tab.get_by_role("radio").first
        expect(first).to_have_attribute("value", start.isoformat())
        _clean(tab)
        screenshot(tab, f"book-slots-{width}")
        _tab_to(tab, "el.name === 'slot'")
        tab.keyboard.press("ArrowDown")  # the group's second time, selected
        expect(tab.get_by_role("radio").nth(1)).to_be_checked()
        _tab_to(tab, "el.id === 'name'")
        tab.keyboard.type("Dana Scully")
        tab.keyboard.press("Tab")
        tab.keyboard.type("dana@example.com")
        _tab_to(tab, "el.tagName === 'BUTTON' && el.textContent.trim() === 'Book'")
        tab.keyboard.press("Enter")
        expect(tab.get_by_role("heading", name="Your booking: Intro call")).to_be_visible()
        expect(tab.get_by_role("status")).to_contain_text("You are booked")
        second = start + timedelta(minutes=15)
        ends = second + timedelta(minutes=30)
        expect(tab.locator("dl.facts")).to_contain_text(f"{second:%H:%M} to {ends:%H:%M}")
        expect(tab.locator("dl.facts")).to_contain_text("America/New_York")
        _clean(tab)
        screenshot(tab, f"book-confirmed-{width}")
        events = api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"]
        assert [e["startsAt"] for e in events] == [f"{day}T14:15:00Z"]
        _tab_to(tab, "el.tagName === 'BUTTON' && el.textContent.trim() === 'Cancel this booking'")
        tab.keyboard.press("Enter")
        expect(tab.get_by_role("heading", name="Booking cancelled")).to_be_visible()
        _clean(tab)
        assert api.get("/api/v1/calendar/events", headers=bearer(secret)).json()["events"] == []
    finally:
        context.close()
    assert problems == []
