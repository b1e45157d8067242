"""Signing a calendar app in: HTTP Basic with the owner's email and an app password, the
sign-in page's throttle, and the key's permission, scope and history."""

from __future__ import annotations

import uuid

import httpx

from calendar_service.access import call_history as history
from calendar_service.platform.db import Database
from tests.dav.support import App, app_account, error_condition, ics, propfind, put
from tests.support import Factory


def _from_elsewhere() -> dict[str, str]:
    """A client address of its own (the test server trusts X-Forwarded-For): failures here
    never count against 127.0.0.1, which every other test signs in from."""
    return {"Depth": "0", "X-Forwarded-For": f"2001:db8::{uuid.uuid4().hex[:4]}"}


def test_an_app_password_signs_in_with_the_owners_email(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    answer = propfind(api, app, "/caldav/", "<d:current-user-principal/>")
    assert answer.status_code == 207


def test_no_credentials_is_a_401_with_a_basic_challenge(api: httpx.Client) -> None:
    answer = api.request("PROPFIND", "/caldav/", headers={"Depth": "0"})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith('Basic realm="')


def test_a_key_that_is_no_app_password_is_refused(api: httpx.Client, factory: Factory) -> None:
    owner = factory.owner()
    _, secret = factory.key(owner)  # an API key, not an app password
    answer = api.request(
        "PROPFIND", "/caldav/", headers=_from_elsewhere(), auth=(owner.email, secret)
    )
    assert answer.status_code == 401


def test_another_owners_email_is_refused(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory)
    stranger = factory.owner()
    answer = api.request(
        "PROPFIND", "/caldav/", headers=_from_elsewhere(), auth=(stranger.email, app.secret)
    )
    assert answer.status_code == 401


def test_wrong_passwords_are_throttled_as_on_the_sign_in_page(
    api: httpx.Client, factory: Factory
) -> None:
    app = app_account(factory)
    elsewhere = _from_elsewhere()
    for _ in range(5):  # signin.EMAIL_LIMIT
        wrong = api.request(
            "PROPFIND", "/caldav/", headers=elsewhere, auth=(app.owner.email, "calsk_nope")
        )
        assert wrong.status_code == 401
    locked = api.request("PROPFIND", "/caldav/", headers=elsewhere, auth=app.auth)
    assert locked.status_code == 429  # the right password too, while locked
    assert int(locked.headers["retry-after"]) > 0


def test_a_revoked_app_password_is_refused(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    from calendar_service.access import keys
    from calendar_service.platform.timeutil import utcnow

    app = app_account(factory)
    db.call(keys.revoke_key, user_id=app.owner.id, key_id=app.key_id, now=utcnow())
    answer = propfind(api, app, "/caldav/", "<d:current-user-principal/>")
    assert answer.status_code == 401


def test_a_read_only_app_password_gets_403_on_put(api: httpx.Client, factory: Factory) -> None:
    app = app_account(factory, permission="read")
    answer = put(api, app, app.calendar() + "read-only.ics", ics("read-only"))
    assert answer.status_code == 403
    assert "{DAV:}need-privileges" in error_condition(answer)


def test_calls_are_in_the_keys_history_with_transport_caldav(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    app: App = app_account(factory)
    assert propfind(api, app, app.home, "<d:displayname/>", depth="1").status_code == 207
    calls = db.call(history.list_calls, key_id=app.key_id, transport="caldav")
    assert [c["operation"] for c in calls] == ["caldavPropfind"]
    assert calls[0]["status"] == 207
    assert calls[0]["transport"] == "caldav"
