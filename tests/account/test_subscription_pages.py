"""The webhook page in real headless Chromium: the owner sees every subscription of their keys
(which key, its deliveries) and deletes one; and gives their own webhook time triggers."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import expect

from calendar_service.delivery import webhook_settings as webhook_config
from calendar_service.platform.db import Database
from tests.account.conftest import Settings, browser_sign_in, receiver, screenshot
from tests.support import Factory, Owner, bearer, wait_for
from tests.webhooks.support import set_webhook

SUBSCRIPTIONS = "/api/v1/webhooks/subscriptions"
EVENT = {"title": "Review", "startsAt": "2026-03-02T09:00:00Z", "endsAt": "2026-03-02T10:00:00Z"}


def test_the_owner_sees_a_keys_subscription_with_its_deliveries_and_deletes_it(
    page: Any, owner: Owner, factory: Factory, api: httpx.Client, db: Database
) -> None:
    _, key = factory.key(owner, name="Zapier")
    with receiver() as (url, received):
        made = api.post(
            SUBSCRIPTIONS,
            json={"url": url, "events": ["calendar.event.created"]},
            headers=bearer(key),
        ).json()
        api.post("/api/v1/calendar/events", json=EVENT, headers=bearer(key))
        wait_for(lambda: received[:1], what="the subscription's delivery")
        browser_sign_in(page, owner, start="/settings/webhook")
        row = page.get_by_role("row").filter(has_text="Zapier")
        expect(row).to_contain_text(url)
        expect(row).to_contain_text("created")
        wait_for(
            lambda: db.call(
                webhook_config.list_deliveries,
                user_id=owner.id,
                endpoint_id=made["id"],
                status="succeeded",
            ),
            what="the delivery recorded",
        )
        page.reload()
        expect(page.get_by_role("row").filter(has_text="Zapier")).to_contain_text("1 succeeded")
        screenshot(page, "30-webhook-subscriptions")

        page.get_by_role("link", name="Deliveries of the subscription of Zapier").click()
        expect(page.get_by_role("heading", name="Subscription of “Zapier”")).to_be_visible()
        expect(page.get_by_role("row").filter(has_text="calendar.event.created")).to_be_visible()
        screenshot(page, "31-webhook-subscription")
        page.get_by_role("button", name="Delete the subscription").click()
        expect(page.get_by_role("status")).to_contain_text("The subscription is deleted")
        expect(page.get_by_text("No key has subscribed.")).to_be_visible()
    assert api.get(SUBSCRIPTIONS, headers=bearer(key)).json() == {"subscriptions": []}


def test_the_owner_gives_their_webhook_time_triggers_on_the_page(
    page: Any, owner: Owner, db: Database
) -> None:
    set_webhook(db, owner, "http://127.0.0.1:9/hook")
    browser_sign_in(page, owner, start="/settings/webhook")
    page.get_by_label("Minutes before each event starts").fill("60, 15")
    page.get_by_label("Also when each event ends").check()
    page.get_by_role("button", name="Save time triggers").click()
    expect(page.get_by_role("status")).to_contain_text("Time triggers saved")
    expect(page.get_by_label("Minutes before each event starts")).to_have_value("15, 60")
    endpoint = db.call(webhook_config.get_endpoint, user_id=owner.id)
    assert endpoint["minutesBefore"] == [15, 60] and endpoint["ended"] is True
    screenshot(page, "32-webhook-time-triggers")


def test_bad_minutes_before_on_the_page_is_a_400_naming_the_problem(
    settings: Settings, db: Database
) -> None:
    set_webhook(db, settings.owner, "http://127.0.0.1:9/hook")
    for typed, words in (("60, 60", "twice"), ("10081", "10080"), ("soon", "whole numbers")):
        answer = settings.post("/webhook/triggers", {"minutes_before": typed})
        assert answer.status_code == 400, typed
        assert 'id="minutes_before-error"' in answer.text and words in answer.text
    assert db.call(webhook_config.get_endpoint, user_id=settings.owner.id)["minutesBefore"] is None
