"""Who may reach what: no session, no page; no CSRF token, no change; another owner's ids, 404."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.routing import Route

from calendar_service.access import keys
from calendar_service.account import account_routes
from tests.account.conftest import Settings, signed_in
from tests.support import Factory, RunningServer, bearer

EVENTS = "/api/v1/calendar/events"
PUBLIC = {("GET", "/settings/sign-in"), ("POST", "/settings/sign-in")}


def _routes() -> list[tuple[str, str]]:
    """Every (method, path) the settings app serves, with a made-up id in each placeholder."""
    found = []
    for route in account_routes():
        if isinstance(route, Route):
            for method in sorted((route.methods or set()) - {"HEAD"}):
                path = re.sub(r"\{\w+\}", "abc_123", "/settings" + route.path)
                found.append((method, path))
    return found


PROTECTED = [route for route in _routes() if route not in PUBLIC]
FORMS = [path for method, path in PROTECTED if method == "POST"]


def test_the_routes_checked_here_are_every_page_and_form() -> None:
    paths = {path for _, path in PROTECTED}
    assert {
        "/settings/keys",
        "/settings/keys/abc_123/calls",
        "/settings/keys/abc_123/calls.csv",
        "/settings/keys/abc_123/revoke",
        "/settings/calendars",
        "/settings/events/abc_123/edit",
        "/settings/sign-out",
    } <= paths
    assert len(FORMS) >= 6


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_every_settings_route_sends_a_stranger_to_sign_in(
    api: httpx.Client, method: str, path: str
) -> None:
    answer = api.request(method, path, data={"csrf_token": "guess"} if method == "POST" else None)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/settings/sign-in")


@pytest.mark.parametrize("path", FORMS)
def test_every_form_post_without_the_csrf_token_is_refused(settings: Settings, path: str) -> None:
    answer = settings.client.post(path, data={"name": "x"})
    assert answer.status_code == 403
    assert "Form expired" in answer.text


def test_a_key_is_not_created_with_a_missing_foreign_or_cross_site_token(
    settings: Settings, server: RunningServer, factory: Factory
) -> None:
    other = signed_in(server, factory.owner())
    form = {"name": "Forged", "permission": "write", "expires": "30d", "calendar": ""}
    attempts = [
        settings.client.post("/settings/keys", data=form),
        settings.client.post("/settings/keys", data={**form, "csrf_token": other.csrf}),
        settings.client.post(
            "/settings/keys",
            data={**form, "csrf_token": settings.csrf},
            headers={"Sec-Fetch-Site": "cross-site"},
        ),
    ]
    other.client.close()
    assert [a.status_code for a in attempts] == [403, 403, 403]
    assert "Forged" not in settings.get("/keys").text
    # The same form with this session's token works.
    assert settings.post("/keys", form).status_code == 201


def test_one_owner_cannot_reach_anothers_keys_history_or_events_by_changing_ids(
    settings: Settings, factory: Factory, api: httpx.Client
) -> None:
    victim = factory.owner()
    victim_calendar = factory.calendar(victim, name="Victim's private calendar")
    key_id, secret = factory.key(victim, name="Victim's key")
    created = api.post(
        EVENTS,
        json={
            "title": "Victim's secret meeting",
            "startsAt": "2031-01-01T09:00:00Z",
            "endsAt": "2031-01-01T10:00:00Z",
        },
        headers=bearer(secret),
    )
    event_id = created.json()["id"]

    for path in (
        f"/keys/{key_id}/calls",
        f"/keys/{key_id}/calls.csv",
        f"/keys/{key_id}/revoke",
        f"/events/{event_id}/edit",
        f"/events/{event_id}/delete",
    ):
        answer = settings.get(path)
        assert answer.status_code == 404, path
        assert "Victim" not in answer.text
    for path, data in (
        (f"/keys/{key_id}/revoke", {}),
        (f"/events/{event_id}", {"title": "Hijacked", "start_date": "2031-01-01"}),
        (f"/events/{event_id}/delete", {}),
    ):
        assert settings.post(path, data).status_code == 404, path

    # Nothing changed, and nothing of the victim's shows on the intruder's own pages.
    state = factory.db.call(keys.get_key, user_id=victim.id, key_id=key_id)
    assert state["revoked_at"] is None
    event = api.get(f"{EVENTS}/{event_id}", headers=bearer(secret)).json()
    assert event["title"] == "Victim's secret meeting"
    for page in ("/keys", "/calendars"):
        assert "Victim" not in settings.get(page).text

    # Nor can they aim a new key or a new event at the victim's calendar.
    key_form = {"name": "Spy", "permission": "read", "expires": "30d", "calendar": victim_calendar}
    refused_key = settings.post("/keys", key_form)
    assert refused_key.status_code == 400
    assert "no calendar" in refused_key.text
    event_form = {
        "calendar": victim_calendar,
        "title": "Planted",
        "start_date": "2031-01-02",
        "start_time": "09:00",
        "end_date": "2031-01-02",
        "end_time": "10:00",
    }
    refused_event = settings.post("/events", event_form)
    assert refused_event.status_code == 400
    assert "no calendar" in refused_event.text


def test_pages_forbid_framing_outside_assets_referrers_and_caching(settings: Settings) -> None:
    for path in ("/keys", "/calendars", "/sign-in"):
        answer = settings.get(path)
        csp = answer.headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
        assert "frame-ancestors 'none'" in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["cache-control"] == "no-store"
        assert answer.headers["x-content-type-options"] == "nosniff"
        # Every asset the page loads is the service's own.
        assert not re.search(r'(src|href)="(https?:)?//', answer.text)
        assert "<script>" not in answer.text and " style=" not in answer.text


def test_the_static_files_are_public_and_cacheable(api: httpx.Client) -> None:
    for name, kind in (("style.css", "text/css"), ("copy.js", "javascript"), ("icon.svg", "svg")):
        answer = api.get(f"/settings/static/{name}")
        assert answer.status_code == 200
        assert kind in answer.headers["content-type"]
        assert answer.headers["cache-control"] == "no-cache"


def test_an_unknown_settings_page_is_a_404_page(settings: Settings) -> None:
    answer = settings.get("/no-such-page")
    assert answer.status_code == 404
    assert "There is no settings page at this address." in answer.text
