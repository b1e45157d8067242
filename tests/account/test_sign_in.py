"""Signing in and out: the session cookie, the sign-in form's CSRF token, throttling."""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from calendar_service.access import owner_sessions, signin
from calendar_service.access import owners as users
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import Settings, csrf_from, post_sign_in, sign_in, signed_in
from tests.conftest import make_config
from tests.support import Factory, Owner, RunningServer, make_tls, own_server

PEPPER = "test-pepper"


def _cookie_attributes(response: httpx.Response, name: str) -> set[str]:
    """``{"httponly", "samesite=lax", "path=/settings", ...}`` of the cookie ``name``."""
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{name}="):
            return {part.strip().lower() for part in header.split(";")[1:]}
    raise AssertionError(f"no {name} cookie set")


def test_signing_in_sets_an_http_only_same_site_lax_cookie_scoped_to_settings(
    server: RunningServer, owner: Owner
) -> None:
    with httpx.Client(base_url=server.url) as client:
        answer = sign_in(client, owner.email, owner.password)
        assert answer.status_code == 303
        assert answer.headers["location"] == "/settings/keys"
        attributes = _cookie_attributes(answer, "calendar_session")
        assert {"httponly", "samesite=lax", "path=/settings"} <= attributes
        assert "secure" not in attributes  # plain HTTP here; see the HTTPS test
        assert client.get("/settings/keys").status_code == 200


@pytest.fixture
def https_server(
    config: Config, db: Database, tmp_path: Path
) -> Iterator[tuple[str, ssl.SSLContext]]:
    tls = make_tls(tmp_path)
    certfile, keyfile, context = tls.certfile, tls.keyfile, tls.client_context()
    with own_server(config, ssl_certfile=str(certfile), ssl_keyfile=str(keyfile)) as running:
        yield running.url, context


def test_the_session_cookie_is_secure_under_https(
    https_server: tuple[str, ssl.SSLContext], owner: Owner
) -> None:
    url, context = https_server
    with httpx.Client(base_url=url, verify=context) as client:
        form = client.get("/settings/sign-in")
        assert "secure" in _cookie_attributes(form, "calendar_sign_in")
        answer = sign_in(client, owner.email, owner.password)
        assert answer.status_code == 303
        assert "secure" in _cookie_attributes(answer, "calendar_session")


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(
    server: RunningServer, owner: Owner
) -> None:
    with httpx.Client(base_url=server.url) as client:
        wrong = sign_in(client, owner.email, "not the password")
        unknown = sign_in(client, "nobody-" + owner.email, "not the password")
    for answer in (wrong, unknown):
        assert answer.status_code == 400
        assert "Wrong email or password." in answer.text
        assert "calendar_session=" not in answer.headers.get("set-cookie", "")


def test_the_sign_in_form_refuses_a_post_without_its_own_token(
    server: RunningServer, owner: Owner
) -> None:
    credentials = {"email": owner.email, "password": owner.password}
    with httpx.Client(base_url=server.url) as client:
        no_token = client.post("/settings/sign-in", data=credentials)
        assert no_token.status_code == 403
        assert "did not come from this site" in no_token.text
        # A token from a page, but no cookie to match it: a login-CSRF attempt from elsewhere.
        token = csrf_from(client.get("/settings/sign-in").text)
        client.cookies.clear()
        forged = client.post("/settings/sign-in", data={**credentials, "csrf_token": token})
        assert forged.status_code == 403
        assert client.get("/settings/keys").status_code == 303


def test_repeated_failed_sign_ins_for_an_email_are_throttled_with_when_to_retry(
    server: RunningServer, factory: Factory
) -> None:
    owner = factory.owner()
    with httpx.Client(base_url=server.url) as client:
        for _ in range(signin.EMAIL_LIMIT):
            assert sign_in(client, owner.email, "guess").status_code == 400
        # Now even the right password is refused until the window has passed.
        locked = sign_in(client, owner.email, owner.password)
    assert locked.status_code == 429
    assert 800 <= int(locked.headers["retry-after"]) <= 900
    assert re.search(
        r"Too many failed sign-ins for this email address\. Try again in 15 minutes "
        r"\(after \d\d:\d\d UTC\)\.",
        locked.text,
    )
    assert "calendar_session=" not in locked.headers.get("set-cookie", "")


def test_signing_out_ends_the_session_even_for_a_copied_cookie(settings: Settings) -> None:
    copied = dict(settings.client.cookies)
    answer = settings.post("/sign-out")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/settings/sign-in?notice=signed-out"
    assert settings.get("/keys").status_code == 303
    with httpx.Client(base_url=str(settings.client.base_url), cookies=copied) as thief:
        assert thief.get("/settings/keys").status_code == 303


def test_a_new_password_signs_every_browser_out(
    server: RunningServer, owner: Owner, db: Database
) -> None:
    first, second = signed_in(server, owner), signed_in(server, owner)
    db.call(users.set_password, email=owner.email, password="a brand new password")
    for session in (first, second):
        assert session.get("/keys").status_code == 303
        session.client.close()
    owner.password = "a brand new password"
    again = signed_in(server, owner)
    assert again.get("/keys").status_code == 200
    again.client.close()


def test_a_tampered_session_cookie_is_refused(settings: Settings) -> None:
    value = settings.client.cookies["calendar_session"]
    settings.client.cookies.clear()
    settings.client.cookies.set("calendar_session", value[:-2] + "xx", path="/settings")
    assert settings.get("/keys").status_code == 303


@pytest.mark.parametrize(
    ("asked", "landed"),
    [
        ("/settings/calendars", "/settings/calendars"),
        ("https://evil.example/settings/keys", "/settings/keys"),
        ("//evil.example/settings/keys", "/settings/keys"),
        ("/settings//evil.example", "/settings/keys"),
        ("/api/v1/calendar/events", "/settings/keys"),
    ],
)
def test_sign_in_returns_only_to_a_settings_page(
    server: RunningServer, owner: Owner, asked: str, landed: str
) -> None:
    with httpx.Client(base_url=server.url) as client:
        form = client.get("/settings/sign-in", params={"next": asked})
        answer = post_sign_in(client, form, owner.email, owner.password, next=asked)
    assert answer.status_code == 303
    assert answer.headers["location"] == landed


def test_a_page_asked_for_before_signing_in_is_where_sign_in_leads(
    server: RunningServer, owner: Owner
) -> None:
    with httpx.Client(base_url=server.url, follow_redirects=True) as client:
        form = client.get("/settings/calendars")
        assert str(form.url).endswith("/settings/sign-in?next=/settings/calendars")
        kept = re.search(r'name="next" value="([^"]+)"', form.text)
        assert kept, "the sign-in form does not keep the page asked for"
        answer = post_sign_in(client, form, owner.email, owner.password, next=kept.group(1))
    assert str(answer.url).endswith("/settings/calendars")


def test_without_a_configured_secret_one_is_generated_once_and_shared_by_every_process(
    database_url: str, db: Database, factory: Factory
) -> None:
    first = db.call(owner_sessions.session_signing_secret, now=utcnow())
    assert first == db.call(owner_sessions.session_signing_secret, now=utcnow())
    assert len(first) >= 64
    owner = factory.owner()
    config = make_config(database_url, session_secret=None)
    # Two processes: one Database each.
    with own_server(config) as server_a, own_server(config) as server_b:
        with httpx.Client(base_url=server_a.url) as client:
            assert sign_in(client, owner.email, owner.password).status_code == 303
            cookies = dict(client.cookies)
        with httpx.Client(base_url=server_b.url, cookies=cookies) as other_process:
            assert other_process.get("/settings/keys").status_code == 200
