"""The settings pages refuse NUL characters in forms, path ids and query parameters with a 400
naming the field, the same on SQLite and PostgreSQL (which cannot store them)."""

from __future__ import annotations

import httpx
import pytest

from calendar_service.access import keys
from calendar_service.calendar import calendars
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, csrf_from, text_of
from tests.support import Factory, Owner, RunningServer

NUL = "\x00"
NUL_MESSAGE = "must not contain NUL characters (U+0000)"


def _refused(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 400, answer.text
    assert f"{field}: {NUL_MESSAGE}" in text_of(answer.text)


@pytest.mark.parametrize("field", ["email", "password"])
def test_a_sign_in_with_a_nul_character_is_refused_and_the_owner_can_still_sign_in(
    server: RunningServer, owner: Owner, field: str
) -> None:
    with httpx.Client(base_url=server.url) as client:
        token = csrf_from(client.get("/settings/sign-in").text)
        credentials = {"email": owner.email, "password": owner.password, field: f"a{NUL}"}
        answer = client.post("/settings/sign-in", data={**credentials, "csrf_token": token})
        _refused(answer, field)
        token = csrf_from(client.get("/settings/sign-in").text)
        signed_in = client.post(
            "/settings/sign-in",
            data={"email": owner.email, "password": owner.password, "csrf_token": token},
        )
    assert signed_in.status_code == 303


def test_forms_with_a_nul_character_are_refused_and_change_nothing(
    settings: Settings, factory: Factory
) -> None:
    owner = settings.owner
    _refused(settings.post("/calendars", {"name": f"Tra{NUL}vel", "time_zone": "UTC"}), "name")
    _refused(
        settings.post(
            "/keys",
            {"name": f"bot{NUL}", "permission": "read", "expires": "30d", "expires_on": ""},
        ),
        "name",
    )
    event = {
        "calendar": owner.default_calendar_id,
        "title": f"Stand{NUL}up",
        "start_date": "2031-06-02",
        "start_time": "09:00",
        "end_date": "2031-06-02",
        "end_time": "09:15",
    }
    _refused(settings.post("/events", event), "title")
    _refused(settings.post("/webhook", {"url": f"https://example.com/{NUL}"}), "url")
    now = utcnow()
    assert [c.name for c in factory.db.call(calendars.list_owner_calendars, user_id=owner.id)] == [
        "Личное"
    ]
    assert factory.db.call(keys.list_keys, user_id=owner.id, now=now) == []
    assert "Standup" not in text_of(settings.get("/calendars").text)


@pytest.mark.parametrize(
    "path",
    [
        "/keys/key_x%00/revoke",
        "/keys/key_x%00/calls",
        "/keys/key_x%00/calls.csv",
        "/webhook/deliveries/dlv%00",
        "/events/ev_x%00/edit",
        "/events/ev_x%00/delete",
        "/keys?notice=%00",
        "/events/new?calendar=cal%00",
    ],
)
def test_a_settings_address_with_a_nul_character_is_refused(settings: Settings, path: str) -> None:
    assert settings.get(path).status_code == 400


@pytest.mark.parametrize(
    "path",
    ["/keys/key_x%00/revoke", "/events/ev_x%00/delete", "/webhook/deliveries/d%00/redeliver"],
)
def test_a_settings_form_posted_to_an_id_with_a_nul_character_is_refused(
    settings: Settings, path: str
) -> None:
    assert settings.post(path).status_code == 400
