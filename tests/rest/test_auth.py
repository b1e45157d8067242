"""Every 401 reason, the RFC 6750 challenge, and keys refused in the URL."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


def _problem(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code
    assert body["status"] == status
    assert body["type"].endswith(code)
    assert body["detail"]
    return body


def test_a_request_without_a_key_gets_401_with_a_bare_bearer_challenge(api: httpx.Client) -> None:
    response = api.get(EVENTS)
    _problem(response, 401, "missing_api_key")
    assert response.headers["www-authenticate"] == 'Bearer realm="calendar"'


@pytest.mark.parametrize(
    ("header", "why"),
    [
        ("Basic dXNlcjpwYXNz", "Bearer"),
        ("Bearer not-a-key", "calsk_"),
        ("Bearer calsk_short", "letters and digits"),
        ("Bearer calsk_" + "A" * 46, "checksum"),
        ("Bearer calsk_" + "-" * 46, "letters and digits"),  # a key's length: looked up first
    ],
)
def test_a_malformed_key_is_refused_as_invalid_token(
    api: httpx.Client, header: str, why: str
) -> None:
    response = api.get(EVENTS, headers={"Authorization": header})
    body = _problem(response, 401, "malformed_api_key")
    assert why in str(body["detail"])
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_a_well_formed_key_that_does_not_exist_is_unknown(api: httpx.Client) -> None:
    response = api.get(EVENTS, headers=bearer(keys.generate_secret()))
    _problem(response, 401, "unknown_api_key")
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_a_mistyped_key_is_refused_by_its_checksum(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    typo = secret[:-8] + ("a" if secret[-8] != "a" else "b") + secret[-7:]
    _problem(api.get(EVENTS, headers=bearer(typo)), 401, "malformed_api_key")


def test_an_expired_key_is_refused_and_the_call_recorded(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    db.call(
        lambda conn: conn.execute(
            keys.keys_t.update()
            .where(keys.keys_t.c.id == key_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )
    response = api.get(EVENTS, headers=bearer(secret))
    _problem(response, 401, "expired_api_key")
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["status"], c["operation"]) for c in calls] == [(401, "listCalendarEvents")]


def test_a_revoked_key_is_refused_from_the_next_request_on(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    assert api.get(EVENTS, headers=bearer(secret)).status_code == 200
    db.call(keys.revoke_key, user_id=owner.id, key_id=key_id, now=utcnow())
    response = api.get(EVENTS, headers=bearer(secret))
    _problem(response, 401, "revoked_api_key")
    statuses = [c["status"] for c in db.call(history.list_calls, key_id=key_id)]
    assert statuses == [401, 200]


def test_a_read_only_key_cannot_create_events(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner, permission="read")
    response = api.post(EVENTS, json=event_body(), headers=bearer(secret))
    body = _problem(response, 401, "insufficient_scope")
    assert "calendar:write" in str(body["detail"])
    challenge = response.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="calendar:write"' in challenge
    listed = api.get(EVENTS, headers=bearer(secret)).json()
    assert listed["events"] == []
    assert db.call(history.list_calls, key_id=key_id)[1]["status"] == 401


def test_a_read_only_key_cannot_change_or_delete_events(
    api: httpx.Client, factory: Factory
) -> None:
    owner = factory.owner()
    _, writer = factory.key(owner)
    _, reader = factory.key(owner, permission="read")
    event = api.post(EVENTS, json=event_body(), headers=bearer(writer)).json()
    url = f"{EVENTS}/{event['id']}"
    assert api.get(url, headers=bearer(reader)).status_code == 200
    _problem(api.patch(url, json={"title": "x"}, headers=bearer(reader)), 401, "insufficient_scope")
    _problem(api.delete(url, headers=bearer(reader)), 401, "insufficient_scope")
    assert api.get(url, headers=bearer(reader)).json()["title"] == "Planning"


@pytest.mark.parametrize("name", ["api_key", "access_token", "key", "token"])
def test_a_key_in_the_query_string_is_refused_with_a_pointer_to_the_header(
    api: httpx.Client, factory: Factory, db: Database, name: str
) -> None:
    owner = factory.owner()
    key_id, secret = factory.key(owner)
    response = api.get(EVENTS, params={name: secret}, headers=bearer(secret))
    body = _problem(response, 400, "api_key_in_url")
    assert "Authorization: Bearer" in str(body["detail"])
    assert secret not in response.text
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["status"], c["path"]) for c in calls] == [(400, EVENTS)]


def test_a_key_only_in_the_url_is_refused_and_shows_in_its_history_as_leaked(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    key_id, secret = factory.key(factory.owner())
    response = api.get(EVENTS, params={"api_key": secret})
    _problem(response, 400, "api_key_in_url")
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["status"], c["path"]) for c in calls] == [(400, EVENTS)]


def test_errors_carry_a_request_id_and_echo_a_sane_caller_request_id(api: httpx.Client) -> None:
    response = api.get(EVENTS, headers={"Request-Id": "abc-123"})
    assert response.headers["request-id"] == "abc-123"
    generated = api.get(EVENTS, headers={"Request-Id": "bad id with spaces"})
    assert generated.headers["request-id"].startswith("req_")
