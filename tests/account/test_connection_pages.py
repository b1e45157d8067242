"""The *Connected calendars* page in a real browser at 390, 1024 and 1280 px: an owner adds an
``.ics`` address (served on 127.0.0.1 by the test), sees it read (status, events, last sync,
the address masked), syncs it now, sees a failing one's reason, removes it; adds a CalDAV
account (Radicale on 127.0.0.1), picks its calendars after discovery, changes what agents may
learn; axe finds nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.account.conftest import browser_sign_in, nav, screenshot
from tests.connections.sources import PASSWORD, USER, ics_server, radicale_server
from tests.connections.test_polling import calendar, day, vevent
from tests.support import Factory, Owner, RunningServer


def _tab(browser: Any, server: RunningServer, width: int) -> Any:
    context = browser.new_context(
        base_url=server.url, viewport={"width": width, "height": 900}, locale="en-GB",
        timezone_id="UTC",
    )  # fmt: skip
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    return tab


@pytest.mark.parametrize("width", [390, 1024, 1280], ids=["390px", "1024px", "1280px"])
def test_an_owner_connects_an_ics_address_sees_it_read_syncs_and_removes_it(
    browser: Any, server: RunningServer, factory: Factory, owner: Owner, width: int
) -> None:
    start = day(2).replace(hour=10)
    body = calendar(vevent("a", start, start + timedelta(hours=1)), vevent("b", day(3), day(3)))
    tab = _tab(browser, server, width)
    with ics_server(body.encode()) as source:
        try:
            browser_sign_in(tab, owner)
            nav(tab, "Connected").click()
            expect(tab.get_by_text("You have connected no calendar yet")).to_be_visible()
            tab.get_by_label("Address", exact=True).fill("https://calendar.invalid/cal.ics")
            tab.get_by_role("button", name="Connect").click()
            expect(tab.get_by_text("does not resolve to any address")).to_be_visible()
            tab.get_by_label("Address", exact=True).fill(source.url)
            tab.get_by_label("Name", exact=True).fill("Work Google")
            tab.get_by_role("button", name="Connect").click()
            expect(tab.get_by_role("status").filter(has_text="Connected:")).to_be_visible()
            row = tab.get_by_role("row").filter(has_text="Work Google")
            for _ in range(100):  # read by the server's worker: reload until it shows
                if "Ok" in row.inner_text():
                    break
                tab.reload()
            expect(row).to_contain_text("Ok")
            expect(row.get_by_role("cell").nth(4)).to_have_text("2")  # events
            assert "abc123secret" not in tab.content()
            found = Axe().run(tab).response["violations"]
            assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
            screenshot(tab, f"connections-{width}")
            source.status = 404
            row.get_by_role("button", name="Sync now").click()
            expect(tab.get_by_role("status").filter(has_text="read again")).to_be_visible()
            for _ in range(100):
                if "Failing" in row.inner_text():
                    break
                tab.reload()
            expect(row).to_contain_text("HTTP 404")
            row.get_by_role("button", name="Remove").click()
            expect(tab.get_by_role("status").filter(has_text="Removed")).to_be_visible()
            expect(tab.get_by_text("You have connected no calendar yet")).to_be_visible()
        finally:
            tab.context.close()


@pytest.mark.parametrize("width", [390, 1024, 1280], ids=["390px", "1024px", "1280px"])
def test_an_owner_adds_a_caldav_account_picks_its_calendars_and_changes_their_visibility(
    browser: Any,
    server: RunningServer,
    factory: Factory,
    owner: Owner,
    width: int,
    tmp_path: Path,
) -> None:
    start = day(2).replace(hour=10)
    tab = _tab(browser, server, width)
    with radicale_server(tmp_path) as radicale:
        radicale.put("a.ics", calendar(vevent("a", start, start + timedelta(hours=1))))
        try:
            browser_sign_in(tab, owner)
            nav(tab, "Connected").click()
            card = tab.get_by_role("region", name="Add a CalDAV account")
            card.get_by_label("Server address").fill(radicale.url)
            card.get_by_label("Username").fill(USER)
            card.get_by_label("App password").fill("wrong")
            card.get_by_role("button", name="Find calendars").click()
            expect(tab.get_by_text("HTTP 401")).to_be_visible()
            assert tab.get_by_label("App password").input_value() == ""  # never sent back
            card.get_by_label("App password").fill(PASSWORD)
            card.get_by_label("Details, read-only").check()
            card.get_by_role("button", name="Find calendars").click()
            pick = tab.get_by_role("region", name="Pick the calendars to connect")
            expect(pick.get_by_label("Work")).to_be_checked()
            assert PASSWORD not in tab.content()  # carried sealed, never in the clear
            found = Axe().run(tab).response["violations"]
            assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
            pick.get_by_role("button", name="Connect these calendars").click()
            expect(tab.get_by_role("status").filter(has_text="Connected:")).to_be_visible()
            row = tab.get_by_role("row").filter(has_text="Work")
            expect(row).to_contain_text("CalDAV")
            for _ in range(100):  # read by the server's worker: reload until it shows
                if "Ok" in row.inner_text():
                    break
                tab.reload()
            expect(row).to_contain_text("Ok")
            choice = row.get_by_label("What agents may learn of Work")
            expect(choice).to_have_value("details")
            found = Axe().run(tab).response["violations"]
            assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
            screenshot(tab, f"connections-caldav-{width}")
            choice.select_option("busy")
            row.get_by_role("button", name="Change").click()
            expect(tab.get_by_role("status").filter(has_text="Changed")).to_be_visible()
            expect(row.get_by_label("What agents may learn of Work")).to_have_value("busy")
            row.get_by_role("button", name="Remove").click()
            expect(tab.get_by_text("You have connected no calendar yet")).to_be_visible()
        finally:
            tab.context.close()
