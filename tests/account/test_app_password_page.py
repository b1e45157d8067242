"""*App password* on the settings pages' API keys: the key a calendar app signs in with."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import httpx
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.account.conftest import Settings, browser_sign_in
from tests.support import Owner


def test_an_app_password_made_in_the_page_signs_a_calendar_app_in(
    settings: Settings, api: httpx.Client
) -> None:
    created = settings.post(
        "/keys",
        {
            "name": "iPhone",
            "permission": "write",
            "expires": "90d",
            "calendar": "",
            "approval": "none",
            "app_password": "yes",
        },
    )
    assert created.status_code == 201
    assert "It is an app password" in created.text
    match = re.search(r'id="secret" class="secret" value="(calsk_[0-9A-Za-z]+)"', created.text)
    assert match
    listing = settings.get("/keys").text
    assert "App passwords" in listing and ">App password</span>" in listing
    auth = (settings.owner.email, match.group(1))
    answer = api.request("PROPFIND", "/caldav/", headers={"Depth": "0"}, auth=auth)
    assert answer.status_code == 207


class _Forms(HTMLParser):
    """The page's forms, each as a browser would submit it untouched: every field's name and
    default value (checked boxes and radios, selected options), and its controls' labels."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self._select: str | None = None
        self._label: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append({"action": a.get("action"), "fields": {}, "boxes": [], "text": ""})
        if not self.forms:
            return
        form = self.forms[-1]
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio"):
                form["boxes"].append(a)
                if "checked" in a:
                    form["fields"][a["name"]] = a.get("value", "on")
            elif kind != "submit":
                form["fields"][a["name"]] = a.get("value", "")
        elif tag == "select":
            self._select = a.get("name")
        elif tag == "option" and self._select is not None:
            if "selected" in a or self._select not in form["fields"]:
                form["fields"][self._select] = a.get("value", "")
        elif tag == "label":
            self._label = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "label" and self._label is not None and self.forms:
            self.forms[-1]["text"] += " ".join(self._label) + "\n"
            self._label = None

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self._label.append(data.strip())


def test_an_app_password_made_with_the_forms_defaults_may_edit_events_from_the_phone(
    settings: Settings, api: httpx.Client
) -> None:
    """The form that makes an app password asks what the app may do, and what a calendar app
    needs is what it gives by default: made untouched (but for the device's name), the phone's
    edits go through."""
    parsed = _Forms()
    parsed.feed(settings.get("/keys").text)
    [form] = [f for f in parsed.forms if any(b["name"] == "app_password" for b in f["boxes"])] or [
        f for f in parsed.forms if f["fields"].get("app_password")
    ]
    permission = [b for b in form["boxes"] if b["name"] == "permission"]
    assert permission, "the form must ask what the app may do"
    assert "Read and write events" in form["text"]
    fields = {**form["fields"], "app_password": "yes"}  # ticked, where it is a box
    fields["name"] = "iPhone"
    fields.pop("csrf_token", None)
    created = settings.post("/keys", fields)
    assert created.status_code == 201, created.text
    match = re.search(r'id="secret" class="secret" value="(calsk_[0-9A-Za-z]+)"', created.text)
    assert match
    auth = (settings.owner.email, match.group(1))
    calendar = f"/caldav/calendars/{settings.owner.id}/{settings.owner.default_calendar_id}/"
    ics = (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//phone//EN\r\nBEGIN:VEVENT\r\n"
        "UID:phone-1\r\nDTSTAMP:20270301T120000Z\r\nDTSTART:20270302T100000Z\r\n"
        "DTEND:20270302T103000Z\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    put = api.put(
        calendar + "phone-1.ics",
        content=ics,
        headers={"Content-Type": "text/calendar; charset=utf-8"},
        auth=auth,
    )
    assert put.status_code == 201, put.text


def test_an_app_password_form_refused_comes_back_with_its_values_the_key_form_blank(
    settings: Settings,
) -> None:
    refused = settings.post(
        "/keys",
        {"name": " ", "permission": "read", "expires": "90d", "calendar": "", "approval": "none",
         "app_password": "yes"},
    )  # fmt: skip
    assert refused.status_code == 400
    parsed = _Forms()
    parsed.feed(refused.text)
    [app] = [f for f in parsed.forms if f["fields"].get("app_password") == "yes"]
    [key] = [f for f in parsed.forms if f is not app and "permission" in f["fields"]]
    assert (app["fields"]["permission"], app["fields"]["expires"]) == ("read", "90d")
    assert (key["fields"]["permission"], key["fields"]["expires"]) == ("read", "30d")
    app_name = re.search(r'<input type="text" id="app_name"[^>]*>', refused.text)
    key_name = re.search(r'<input type="text" id="name"[^>]*>', refused.text)
    assert app_name and 'aria-invalid="true"' in app_name.group()
    assert key_name and "aria-invalid" not in key_name.group()


def test_in_the_browser_an_app_password_is_read_and_write_unless_the_owner_chooses_otherwise(
    page: Any, owner: Owner
) -> None:
    browser_sign_in(page, owner)
    form = page.locator("form", has=page.get_by_role("button", name="Create app password"))
    expect(form.get_by_role("group", name="What the app may do")).to_be_visible()
    expect(form.get_by_label("Read and write events")).to_be_checked()
    expect(form.get_by_label("Only show events")).not_to_be_checked()
    found = Axe().run(page).response["violations"]
    assert [(v["id"], [n["html"][:120] for n in v["nodes"]]) for v in found] == []
    form.get_by_label("Device or app").fill("iPhone")
    form.get_by_role("button", name="Create app password").click()
    expect(page.get_by_text("It is an app password")).to_be_visible()
    page.get_by_role("link", name="I have copied it").click()
    row = page.get_by_role("row", name=re.compile("^iPhone"))
    expect(row).to_contain_text("Read & write")
    expect(row).to_contain_text("App password")
