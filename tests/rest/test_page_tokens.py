"""Page tokens are opaque and signed: one the server did not make, or made for another query or
key, is a 400 naming pageToken, and nothing in it reaches the date code."""

from __future__ import annotations

import base64
import hashlib
import json

import httpx
import pytest

from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer


@pytest.fixture
def secret(factory: Factory) -> str:
    return factory.key(factory.owner())[1]


def _first_token(api: httpx.Client, secret: str, **params: str) -> str:
    for hour in range(3):
        start = f"2026-05-01T0{hour}:00:00Z"
        body = event_body(title=f"e{hour}", startsAt=start, endsAt=start)
        assert api.post(EVENTS, json=body, headers=bearer(secret)).status_code == 201
    page = api.get(EVENTS, params={"limit": "1", **params}, headers=bearer(secret))
    assert page.status_code == 200, page.text
    return str(page.json()["nextPageToken"])


def _refused(api: httpx.Client, secret: str, token: str, **params: str) -> None:
    response = api.get(EVENTS, params={"pageToken": token, **params}, headers=bearer(secret))
    assert response.status_code == 400, response.text
    assert [e["field"] for e in response.json()["errors"]] == ["pageToken"]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def test_a_page_token_leads_to_the_next_page(api: httpx.Client, secret: str) -> None:
    token = _first_token(api, secret)
    page = api.get(EVENTS, params={"limit": "1", "pageToken": token}, headers=bearer(secret))
    assert page.status_code == 200, page.text
    assert [e["title"] for e in page.json()["events"]] == ["e1"]


@pytest.mark.parametrize(
    "instant",
    ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "2026-05-01T01:30:00Z", "soon"],
)
def test_a_token_re_encoded_with_another_instant_is_refused(
    api: httpx.Client, secret: str, instant: str
) -> None:
    """The old tokens were base64 JSON with an unkeyed fingerprint: anyone could rewrite the
    instant and keep the fingerprint."""
    token = _first_token(api, secret)
    raw = _unb64(token)
    try:
        data = json.loads(raw)
    except ValueError:  # a signed token is not JSON: forge one in the old shape
        data = {"i": "ev_x", "f": "0" * 16}
    data["s"] = instant
    _refused(api, secret, _b64(json.dumps(data).encode()))


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00Z", "2026-05-01T00:00:00Z"])
def test_a_token_forged_from_public_facts_is_refused(
    api: httpx.Client, factory: Factory, instant: str
) -> None:
    """The old fingerprint was the SHA-256 of the key id and the window: known to the caller."""
    key_id, secret = factory.key(factory.owner())
    _first_token(api, secret)
    print_ = hashlib.sha256(f"{key_id}|None|None".encode()).hexdigest()[:16]
    forged = _b64(json.dumps({"s": instant, "i": "", "f": print_}).encode())
    _refused(api, secret, forged)


def test_a_token_with_a_changed_byte_or_cut_short_is_refused(
    api: httpx.Client, secret: str
) -> None:
    raw = _unb64(_first_token(api, secret))
    for position in (0, len(raw) // 2, len(raw) - 1):
        changed = bytearray(raw)
        changed[position] ^= 0x01
        _refused(api, secret, _b64(bytes(changed)))
    _refused(api, secret, _b64(raw[:-1]))
    _refused(api, secret, _b64(raw[1:]))
    for text in ("", "!!!", "=", "a", "a" * 5000):
        if text:
            _refused(api, secret, text)


def test_a_token_only_works_for_the_key_and_window_that_made_it(
    api: httpx.Client, secret: str, factory: Factory
) -> None:
    window = {"timeMin": "2026-01-01T00:00:00Z"}
    token = _first_token(api, secret, **window)
    _refused(api, secret, token)
    _refused(api, secret, token, timeMin="2026-01-01T00:00:00.000001Z")
    _refused(api, secret, token, **window, timeMax="2027-01-01T00:00:00Z")
    other = factory.key(factory.owner())[1]
    _refused(api, other, token, **window)
    same_instant = api.get(
        EVENTS,
        params={"pageToken": token, "timeMin": "2026-01-01T01:00:00+01:00", "limit": "1"},
        headers=bearer(secret),
    )
    assert same_instant.status_code == 200, same_instant.text
    assert [e["title"] for e in same_instant.json()["events"]] == ["e1"]
