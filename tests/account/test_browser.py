"""The settings pages in real headless Chromium against the running server.

Each test also saves screenshots under artifacts/screenshots/ (kept out of git).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import timedelta
from typing import Any

import httpx
from playwright.sync_api import expect
from standardwebhooks.webhooks import Webhook as StandardWebhook

from calendar_service.access.call_history import CallRecord, record_call
from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.config import Config
from calendar_service.platform.models import DEFAULT_CALENDAR_NAME as DEFAULT_NAME
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import browser_sign_in, nav, receiver, screenshot
from tests.support import Factory, Owner, RunningServer, bearer, wait_for

EVENTS = "/api/v1/calendar/events"


def test_an_owner_creates_a_key_uses_it_sees_the_call_and_revokes_it(
    page: Any, owner: Owner, api: httpx.Client
) -> None:
    page.goto("/settings/keys")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    screenshot(page, "01-sign-in")
    browser_sign_in(page, owner)
    expect(page.get_by_text("You have no API keys yet")).to_be_visible()

    page.get_by_label("Name").fill("CRM sync")
    page.get_by_label("Read & write").check()
    page.get_by_label("Expires after").select_option("90d")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_role("heading", name="Key “CRM sync” created")).to_be_visible()
    expect(page.get_by_text("it is shown only this once")).to_be_visible()
    secret = page.get_by_label("Secret").input_value()
    assert secret.startswith("calsk_")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_text("Copied to the clipboard.")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    screenshot(page, "02-key-created")

    listed = api.get(EVENTS, headers={**bearer(secret), "User-Agent": "crm-sync/2.1"})
    assert listed.status_code == 200, listed.text

    page.get_by_role("link", name="I have copied it").click()
    row = page.get_by_role("row", name="CRM sync")
    expect(row).to_contain_text("Read & write")
    expect(row).to_contain_text("Active")
    expect(row.get_by_text("Never")).to_have_count(0)  # last use is shown
    assert secret not in page.content()  # the secret is never shown again
    screenshot(page, "03-keys")

    row.get_by_role("link", name="History").click()
    calls = page.get_by_role("table").last
    expect(calls).to_contain_text("listCalendarEvents")
    expect(calls).to_contain_text("GET /api/v1/calendar/events")
    expect(calls).to_contain_text("crm-sync/2.1")
    expect(page.get_by_text("Last 30 days, UTC: 1 succeeded, 0 failed.")).to_be_visible()

    nav(page, "API keys").click()
    page.get_by_role("row", name="CRM sync").get_by_role("link", name="Revoke").click()
    expect(page.get_by_role("heading", name="Revoke “CRM sync”?")).to_be_visible()
    screenshot(page, "05-revoke-confirmation")
    page.get_by_role("button", name="Revoke key").click()
    expect(page.get_by_role("status")).to_contain_text("The key is revoked")
    expect(page.get_by_role("row", name="CRM sync")).to_contain_text("Revoked")

    refused = api.get(EVENTS, headers=bearer(secret))
    assert refused.status_code == 401
    assert refused.json()["code"] == "revoked_api_key"
    page.get_by_role("row", name="CRM sync").get_by_role("link", name="History").click()
    expect(page.get_by_role("table").last.get_by_text("401")).to_be_visible()


def test_the_history_page_charts_filters_and_pages_a_busy_key(
    page: Any, owner: Owner, factory: Factory
) -> None:
    key_id, _ = factory.key(owner, name="Assistant", permission="read")
    now = utcnow()

    def seed(conn: Any) -> None:  # oldest first, as calls arrive
        for day in range(13, -1, -1):
            for n in range(3 + (day * 7) % 9):
                status = 401 if n % 5 == 4 else (500 if (day + n) % 11 == 0 else 200)
                record_call(
                    conn,
                    CallRecord(
                        key_id=key_id,
                        at=now - timedelta(days=day, minutes=60 - n),
                        transport="mcp" if n % 3 == 0 else "rest",
                        operation="listCalendarEvents" if n % 2 else "createCalendarEvent",
                        method="POST" if n % 3 == 0 else "GET",
                        path="/mcp" if n % 3 == 0 else EVENTS,
                        status=status,
                        latency_ms=3.5 + n,
                        client_addr="203.0.113.7",
                        user_agent="assistant/1.0",
                        request_id=f"req_{day}_{n}",
                    ),
                )

    factory.db.call(seed)
    browser_sign_in(page, owner, start=f"/settings/keys/{key_id}/calls")
    chart = page.get_by_role("img", name="Calls per day for Assistant")
    expect(chart).to_be_visible()
    assert chart.locator("rect.failed").count() > 0
    page.set_viewport_size({"width": 1280, "height": 1500})
    screenshot(page, "04-history", full_page=False)
    page.set_viewport_size({"width": 1280, "height": 860})

    page.get_by_label("Status").select_option("4xx")
    page.get_by_label("Transport").select_option("rest")
    page.get_by_role("button", name="Filter").click()
    statuses = page.locator("table.calls .badge").all_inner_texts()
    assert statuses and set(statuses) == {"401"}
    expect(page.locator("table.calls")).not_to_contain_text("MCP")

    page.get_by_label("Status").select_option("")
    page.get_by_label("Transport").select_option("")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table.calls tbody tr")).to_have_count(50)
    page.get_by_role("link", name="Older calls →").click()
    expect(page.get_by_role("link", name="← Newest calls")).to_be_visible()
    assert page.locator("table.calls tbody tr").count() > 0

    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    lines = download.value.path().read_text().splitlines()
    assert lines[0].startswith("at,transport,operation,method,path,status")
    assert len(lines) > 51

    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("link", name="← Newest calls").click()
    screenshot(page, "09-history-phone", full_page=False)


def test_an_owner_creates_edits_and_deletes_an_event_that_the_api_sees(
    page: Any, owner: Owner, factory: Factory, api: httpx.Client
) -> None:
    calendar_id = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    _, secret = factory.key(owner, permission="read")
    browser_sign_in(page, owner, start="/settings/calendars")

    page.get_by_label("Name").fill("Family")
    page.get_by_label("Time zone").fill("America/New_York")
    page.get_by_role("button", name="Create calendar").click()
    expect(page.get_by_role("status")).to_have_text("Calendar created.")
    expect(page.get_by_role("heading", name="Family")).to_be_visible()

    page.get_by_role("link", name="New event in Work").click()
    page.get_by_label("Title").fill("Quarterly planning")
    page.locator("#start_date").fill("2031-03-04")
    page.locator("#start_time").fill("09:30")
    page.locator("#end_date").fill("2031-03-04")
    page.locator("#end_time").fill("11:00")
    page.get_by_label("Location (optional)").fill("Room 4")
    screenshot(page, "07-event-form")
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_role("status")).to_have_text("Event created.")
    work = page.locator("section.calendar", has=page.get_by_role("heading", name="Work"))
    expect(work).to_contain_text("Quarterly planning")
    expect(work).to_contain_text("Tue 4 Mar 2031, 09:30")

    listed = api.get(EVENTS, params={"timeMin": "2031-03-01T00:00:00Z"}, headers=bearer(secret))
    [event] = [e for e in listed.json()["events"] if e["calendarId"] == calendar_id]
    assert event["title"] == "Quarterly planning"
    assert event["startsAt"] == "2031-03-04T09:30:00+01:00"
    assert event["endsAt"] == "2031-03-04T11:00:00+01:00"
    assert event["location"] == "Room 4"

    page.get_by_role("link", name="New event in Family").click()
    page.get_by_label("Title").fill("School trip")
    page.get_by_label("All day").check()
    page.locator("#start_date").fill("2031-05-12")
    page.locator("#end_date").fill("2031-05-13")
    page.get_by_role("button", name="Create event").click()
    expect(page.get_by_text("Mon 12 May 2031 – Tue 13 May 2031")).to_be_visible()
    screenshot(page, "06-calendars")

    page.get_by_role("link", name="Edit Quarterly planning").click()
    page.get_by_label("Title").fill("Quarterly planning (moved)")
    page.locator("#start_time").fill("14:00")
    page.locator("#end_time").fill("15:30")
    page.get_by_role("button", name="Save event").click()
    expect(page.get_by_role("status")).to_have_text("Event saved.")
    moved = api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).json()
    assert moved["title"] == "Quarterly planning (moved)"
    assert moved["startsAt"] == "2031-03-04T14:00:00+01:00"

    page.get_by_role("link", name="Delete Quarterly planning (moved)").click()
    screenshot(page, "08-event-delete")
    page.get_by_role("button", name="Delete event").click()
    expect(page.get_by_role("status")).to_have_text("Event deleted.")
    assert api.get(f"{EVENTS}/{event['id']}", headers=bearer(secret)).status_code == 404


def test_the_keys_page_is_readable_on_a_phone(page: Any, owner: Owner, factory: Factory) -> None:
    factory.key(owner, name="Zapier flow", permission="write")
    other = factory.calendar(owner, name="Work")
    factory.key(owner, name="Assistant (Work only)", permission="read", calendar_id=other)
    page.set_viewport_size({"width": 390, "height": 844})
    browser_sign_in(page, owner)
    expect(page.get_by_role("rowheader", name="Zapier flow")).to_be_visible()
    # No horizontal scrolling: everything fits the phone's width.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "10-keys-phone")


def test_an_owner_sets_a_webhook_and_sees_a_test_delivery_arrive_and_listed(
    page: Any, owner: Owner, factory: Factory, config: Config
) -> None:
    with receiver() as (url, received):
        browser_sign_in(page, owner, start="/settings/webhook")
        expect(page.get_by_text("No webhook is set")).to_be_visible()
        page.get_by_label("Webhook URL").fill(url)
        page.get_by_role("button", name="Set webhook").click()
        expect(page.get_by_role("heading", name="Webhook set")).to_be_visible()
        secret = page.get_by_label("Signing secret").input_value()
        assert secret.startswith("whsec_")
        screenshot(page, "11-webhook-secret")

        page.get_by_role("link", name="I have copied it").click()
        page.get_by_role("button", name="Send a test event").click()
        expect(page.get_by_role("status")).to_contain_text("Test event queued")
        headers, body = wait_for(lambda: received[:1], what="the test delivery")[0]
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        assert headers[config.signature_header] == f"v1={digest}"
        StandardWebhook(secret).verify(body, headers)  # an independent verifier agrees
        message = json.loads(body)

        def listed_as_delivered() -> bool:
            page.reload()
            row = page.locator("table.deliveries tbody tr").first
            return "Succeeded" in row.inner_text()

        wait_for(listed_as_delivered, what="the delivery to show as succeeded")
        row = page.locator("table.deliveries tbody tr").first
        expect(row).to_contain_text(message["type"])
        expect(row.locator("td[data-label='Last response']")).to_contain_text("204")
        expect(row.locator("td[data-label='Attempts']")).to_have_text("1")
        screenshot(page, "12-webhook")

        row.get_by_role("button", name=re.compile("^Re-send")).click()
        expect(page.get_by_role("status")).to_contain_text("queued to be sent again")
        wait_for(lambda: len(received) >= 2, what="the re-sent delivery")
        assert received[1][0]["webhook-id"] == message["id"]

        def attempts_listed() -> bool:
            page.goto(f"/settings/webhook/deliveries/{message['id']}")
            return page.locator("table tbody tr").count() == 2

        wait_for(attempts_listed, what="both attempts on the delivery's page")
        expect(page.get_by_role("heading", name=message["type"])).to_be_visible()
        expect(page.locator("pre")).to_contain_text(message["id"])
        screenshot(page, "15-webhook-delivery")

        # A change made in the calendars page reaches the receiver too.
        nav(page, "Calendars").click()
        page.get_by_role("link", name=re.compile("^New event")).first.click()
        page.get_by_label("Title").fill("Sent by webhook")
        # A date ahead, so the event is listed whatever the hour of the run (the form's default
        # is today 09:00-10:00, listed only until 10:00): its "Edit Sent by webhook" link then
        # shares the word "webhook" with the navigation's link.
        page.locator("#start_date").fill("2031-03-04")
        page.locator("#end_date").fill("2031-03-04")
        page.get_by_role("button", name="Create event").click()
        expect(page.get_by_role("status")).to_have_text("Event created.")
        expect(page.get_by_role("link", name="Edit Sent by webhook")).to_be_visible()
        created = wait_for(
            lambda: [json.loads(b) for _, b in received if b"calendar.event.created" in b],
            what="the calendar.event.created delivery",
        )
        assert created[0]["data"]["event"]["title"] == "Sent by webhook"

        factory.db.call(
            webhook_config.disable_endpoint,
            user_id=owner.id,
            reason="the receiver answered 410 Gone",
            now=utcnow(),
        )
        nav(page, "Webhook").click()
        expect(page.get_by_role("alert")).to_contain_text("This webhook is disabled")
        screenshot(page, "13-webhook-disabled")
        page.get_by_role("button", name="Enable the webhook").click()
        expect(page.get_by_role("status")).to_contain_text("enabled again")
        expect(page.get_by_role("button", name="Send a test event")).to_be_visible()


def test_a_webhook_url_the_ssrf_rules_refuse_is_explained_in_the_page(
    browser: Any, strict_server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    context = browser.new_context(
        base_url=strict_server.url, viewport={"width": 1280, "height": 860}
    )
    try:
        tab = context.new_page()
        browser_sign_in(tab, owner, start="/settings/webhook")
        tab.get_by_label("Webhook URL").fill("https://169.254.169.254/latest/meta-data")
        tab.get_by_role("button", name="Set webhook").click()
        expect(tab.locator("#url-error")).to_contain_text("a link-local address")
        expect(tab.get_by_label("Webhook URL")).to_have_attribute("aria-invalid", "true")
        screenshot(tab, "14-webhook-refused")
    finally:
        context.close()


def test_an_owner_renames_re_zones_and_deletes_a_calendar_and_the_api_follows(
    page: Any, owner: Owner, factory: Factory, api: httpx.Client
) -> None:
    calendar_id = factory.calendar(owner, name="Work", time_zone="Europe/Berlin")
    _, secret = factory.key(owner, calendar_id=calendar_id)
    made = api.post(
        EVENTS,
        json={
            "title": "Review",
            "startsAt": "2031-03-04T09:30:00",
            "endsAt": "2031-03-04T10:00:00",
        },
        headers=bearer(secret),
    )
    assert made.status_code == 201, made.text
    browser_sign_in(page, owner, start="/settings/calendars")
    expect(page.get_by_role("link", name=f"Delete calendar {DEFAULT_NAME}")).to_have_count(0)

    page.get_by_role("link", name="Edit calendar Work").click()
    page.get_by_label("Name").fill("Office")
    page.get_by_label("Time zone").fill("America/New_York")
    screenshot(page, "09-calendar-edit")
    page.get_by_role("button", name="Save calendar").click()
    expect(page.get_by_role("status")).to_have_text("Calendar saved.")
    office = page.locator("section.calendar", has=page.get_by_role("heading", name="Office"))
    expect(office).to_contain_text("America/New_York")
    expect(office).to_contain_text("Tue 4 Mar 2031, 03:30")  # the same instant, shown there
    event = api.get(f"{EVENTS}/{made.json()['id']}", headers=bearer(secret)).json()
    assert (event["calendar"], event["startsAt"]) == ("Office", "2031-03-04T03:30:00-05:00")

    page.get_by_role("link", name="Delete calendar Office").click()
    expect(page.get_by_role("heading", name="Delete the calendar “Office”?")).to_be_visible()
    expect(page.get_by_text("1 event (a repeating event counts once)")).to_be_visible()
    screenshot(page, "10-calendar-delete")
    page.get_by_role("button", name="Delete calendar").click()
    expect(page.get_by_role("status")).to_contain_text("Calendar deleted")
    expect(page.get_by_role("heading", name="Office")).to_have_count(0)
    refused = api.get(EVENTS, headers=bearer(secret))
    assert (refused.status_code, refused.json()["code"]) == (401, "revoked_api_key")
