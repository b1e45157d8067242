"""*Rules* (docs/rules.md): the owner edits each rule for agents on one form, a bad rule comes
back with its error beside the field, the keys they do not bind are listed, a key is made
exempt on the keys page, and *Pending* names the rules a waiting write breaks. Over HTTP; the
page at three widths, axe clean, is in test_layout.py, a real browser edit below."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from playwright.sync_api import expect

from calendar_service.access import keys
from calendar_service.calendar.rules import set_rules, stored_rules
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, browser_sign_in, screenshot, text_of
from tests.rest.conftest import EVENTS
from tests.support import Factory, Owner, bearer

FORM = {
    "hours_set": "yes",
    "hours_mon": "09:00-12:00, 13:00-17:00",
    "hours_fri": "09:00-13:00",
    "bufferMinutes": "15",
    "maxMeetingsPerDay": "4",
    "maxMeetingMinutesPerDay": "",
    "minNoticeMinutes": "120",
    "maxDaysAhead": "60",
    "maxDurationMinutes": "90",
    "focus_minutes": "120",
    "focus_start": "13:00",
    "focus_end": "17:00",
    "off_wed": "yes",
    "onViolation": "ask",
}
SAVED = {
    "workingHours": {
        "mon": [{"start": "09:00", "end": "12:00"}, {"start": "13:00", "end": "17:00"}],
        "fri": [{"start": "09:00", "end": "13:00"}],
    },
    "bufferMinutes": 15,
    "maxMeetingsPerDay": 4,
    "focus": {"minutes": 120, "start": "13:00", "end": "17:00"},
    "noMeetingDays": ["wed"],
    "minNoticeMinutes": 120,
    "maxDaysAhead": 60,
    "maxDurationMinutes": 90,
    "onViolation": "ask",
}


def test_the_owner_sets_every_rule_on_one_form_and_sees_them_again(
    settings: Settings, factory: Factory
) -> None:
    saved = settings.post("/rules", FORM)
    assert saved.status_code == 303, saved.text
    assert saved.headers["location"] == "/settings/rules?notice=saved"
    assert factory.db.call(stored_rules, user_id=settings.owner.id) == SAVED
    page = settings.get("/rules?notice=saved").text
    assert 'value="09:00-12:00, 13:00-17:00"' in page and 'value="120"' in page
    assert "events already there stand" in text_of(page)
    cleared = settings.post("/rules", {"onViolation": "refuse"})
    assert cleared.status_code == 303
    assert factory.db.call(stored_rules, user_id=settings.owner.id) == {"onViolation": "refuse"}


def test_a_bad_rule_comes_back_with_its_error_beside_the_field_and_nothing_saved(
    settings: Settings, factory: Factory
) -> None:
    bad = {**FORM, "hours_mon": "17:00-09:00", "bufferMinutes": "-5", "focus_minutes": "600"}
    refused = settings.post("/rules", bad)
    assert refused.status_code == 400
    for field in ("hours_mon", "bufferMinutes", "focus_minutes"):
        assert f'id="{field}-error"' in refused.text, field
    assert 'value="17:00-09:00"' in refused.text  # what was typed
    assert factory.db.call(stored_rules, user_id=settings.owner.id) == {"onViolation": "refuse"}


def test_exempt_keys_are_listed_and_a_key_is_made_exempt_on_the_keys_page(
    settings: Settings, factory: Factory
) -> None:
    form = {"name": "My script", "permission": "write", "expires": "30d", "calendar": ""}
    made = settings.post("/keys", {**form, "rules": "exempt"})
    assert made.status_code == 201, made.text
    factory.key(settings.owner, name="Phone", app_password=True)
    factory.key(settings.owner, name="Assistant")
    listed = factory.db.call(keys.list_keys, user_id=settings.owner.id, now=utcnow())
    assert {k["name"]: k["rules"] for k in listed} == {
        "My script": "exempt",
        "Phone": "bound",
        "Assistant": "bound",
    }
    assert "Not bound by rules" in text_of(settings.get("/keys").text)
    text = text_of(settings.get("/rules").text)
    assert "My script (made exempt)" in text and "Phone (app password)" in text
    assert "Assistant" not in text


def test_pending_names_the_rules_a_waiting_write_breaks(
    settings: Settings, api: httpx.Client, factory: Factory
) -> None:
    owner = settings.owner
    factory.db.call(
        set_rules,
        user_id=owner.id,
        value={"maxDurationMinutes": 30, "onViolation": "ask"},
        now=utcnow(),
    )
    _, secret = factory.key(owner, name="Planner")
    start = (utcnow() + timedelta(days=3)).replace(microsecond=0)
    body = {
        "title": "Long workshop",
        "startsAt": start.isoformat(),
        "endsAt": (start + timedelta(hours=3)).isoformat(),
    }
    assert api.post(EVENTS, json=body, headers=bearer(secret)).status_code == 202
    text = text_of(settings.get("/pending").text)
    assert "Against your rules for agents" in text
    assert "It lasts 180 minutes; the owner allows meetings of at most 30." in text


def test_the_owner_edits_the_rules_in_a_real_browser(page: Any, owner: Owner) -> None:
    browser_sign_in(page, owner, start="/settings/rules")
    page.get_by_label("Book meetings only within these hours").check()
    page.get_by_label("Monday").first.fill("09:00-17:00")
    page.get_by_label("Minutes free before and after each meeting").fill("10")
    page.get_by_label("Friday").last.check()
    page.get_by_label("Ask me").check()
    page.get_by_role("button", name="Save the rules").click()
    expect(page.get_by_role("status")).to_contain_text("Saved")
    expect(page.get_by_label("Monday").first).to_have_value("09:00-17:00")
    expect(page.get_by_label("Friday").last).to_be_checked()
    screenshot(page, "rules-saved")
