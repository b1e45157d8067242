"""*App password* on the settings pages' API keys: the key a calendar app signs in with."""

from __future__ import annotations

import re

import httpx

from tests.account.conftest import Settings


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
