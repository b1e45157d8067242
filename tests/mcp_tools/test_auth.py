"""The key check at /mcp: every 401 reason with its challenge, revocation at once, Origin."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from sqlalchemy import event

from calendar_service.access import call_history as history
from calendar_service.access import keys
from calendar_service.platform.db import Database
from calendar_service.platform.timeutil import utcnow
from tests.mcp_tools.clients import INITIALIZE, JSON_RPC_HEADERS, MODES, connect, text_of
from tests.support import Factory, RunningServer, bearer

MCP = "/mcp"


def _refused(response: httpx.Response, code: str) -> str:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="calendar"')
    return challenge


def _expire(db: Database, key_id: str) -> None:
    db.call(
        lambda conn: conn.execute(
            keys.keys_t.update()
            .where(keys.keys_t.c.id == key_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )


def _revoke(db: Database, key_id: str) -> None:
    db.call(keys.revoke_key, user_id=None, key_id=key_id, now=utcnow())


def test_a_request_without_a_key_gets_401_with_a_bare_bearer_challenge_naming_the_metadata(
    api: httpx.Client, server: RunningServer
) -> None:
    """No error code (RFC 6750 §3), and where OAuth clients learn how to get a token (RFC 9728
    §5.1)."""
    response = api.post(MCP, json=INITIALIZE, headers=JSON_RPC_HEADERS)
    metadata = f"{server.url}/.well-known/oauth-protected-resource/mcp"
    assert _refused(response, "missing_api_key") == (
        f'Bearer realm="calendar", resource_metadata="{metadata}"'
    )


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        ("Basic dXNlcjpwYXNz", "malformed_api_key"),
        ("Bearer calsk_short", "malformed_api_key"),
        (f"Bearer {keys.generate_secret()}", "unknown_api_key"),
    ],
    # The unknown key is random: a fixed id keeps the collection the same in every xdist worker.
    ids=["basic-scheme", "short-key", "unknown-key"],
)
def test_a_malformed_or_unknown_key_gets_401_invalid_token(
    api: httpx.Client, authorization: str, code: str
) -> None:
    headers = {**JSON_RPC_HEADERS, "Authorization": authorization}
    challenge = _refused(api.post(MCP, json=INITIALIZE, headers=headers), code)
    assert 'error="invalid_token"' in challenge


@pytest.mark.parametrize(
    ("spoil", "code"), [(_expire, "expired_api_key"), (_revoke, "revoked_api_key")]
)
def test_an_expired_or_revoked_key_gets_401_and_the_refusal_is_recorded(
    api: httpx.Client, factory: Factory, db: Database, spoil: object, code: str
) -> None:
    key_id, secret = factory.key(factory.owner())
    spoil(db, key_id)  # type: ignore[operator]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "createCalendarEvent", "arguments": {}},
    }
    response = api.post(MCP, json=call, headers={**JSON_RPC_HEADERS, **bearer(secret)})
    assert 'error="invalid_token"' in _refused(response, code)
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["transport"], c["operation"], c["status"]) for c in calls] == [
        ("mcp", "createCalendarEvent", 401)
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_the_official_client_cannot_connect_with_a_revoked_key(
    server: RunningServer, factory: Factory, db: Database, mode: str
) -> None:
    key_id, secret = factory.key(factory.owner())
    _revoke(db, key_id)
    with pytest.raises(ExceptionGroup) as refused:
        async with connect(server.url, secret, mode=mode):
            pass
    assert refused.group_contains(MCPError)


@pytest.mark.parametrize("mode", MODES)
async def test_revoking_a_key_refuses_an_open_client_at_its_next_call(
    server: RunningServer, factory: Factory, db: Database, mode: str
) -> None:
    key_id, secret = factory.key(factory.owner())
    async with connect(server.url, secret, mode=mode) as client:
        assert not (await client.call_tool("listCalendarEvents", {})).is_error
        _revoke(db, key_id)
        with pytest.raises(MCPError):
            await client.call_tool("listCalendarEvents", {})
    statuses = [c["status"] for c in db.call(history.list_calls, key_id=key_id)]
    assert statuses == [401, 200]


def test_a_request_from_a_foreign_origin_is_refused(
    api: httpx.Client, server: RunningServer, factory: Factory
) -> None:
    _, secret = factory.key(factory.owner())
    headers = {**JSON_RPC_HEADERS, **bearer(secret)}
    foreign = api.post(MCP, json=INITIALIZE, headers={**headers, "Origin": "https://evil.example"})
    assert foreign.status_code == 403
    assert foreign.json()["code"] == "origin_not_allowed"
    own = api.post(MCP, json=INITIALIZE, headers={**headers, "Origin": server.url})
    assert own.status_code == 200, own.text
    assert own.json()["result"]["serverInfo"]["name"] == "calendar"


def test_a_key_in_the_url_is_refused_and_recorded(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    key_id, secret = factory.key(factory.owner())
    response = api.post(f"{MCP}?api_key={secret}", json=INITIALIZE, headers=JSON_RPC_HEADERS)
    assert response.status_code == 400
    assert response.json()["code"] == "api_key_in_url"
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["operation"], c["status"], c["path"]) for c in calls] == [("initialize", 400, MCP)]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_only_post_is_served_because_the_transport_is_stateless(
    api: httpx.Client, factory: Factory, method: str
) -> None:
    _, secret = factory.key(factory.owner())
    response = api.request(method, MCP, headers={**JSON_RPC_HEADERS, **bearer(secret)})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, OPTIONS"


def test_a_tool_call_over_http_reads_its_key_once_and_is_recorded(
    api: httpx.Client, factory: Factory, db: Database
) -> None:
    key_id, secret = factory.key(factory.owner())
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "listCalendarEvents", "arguments": {}},
    }
    key_reads: list[str] = []

    def watch(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "api_keys.secret_hash = " in statement:
            key_reads.append(statement)

    event.listen(db.engine, "before_cursor_execute", watch)
    try:
        response = api.post(MCP, json=call, headers={**JSON_RPC_HEADERS, **bearer(secret)})
    finally:
        event.remove(db.engine, "before_cursor_execute", watch)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["structuredContent"]["events"] == []
    assert len(key_reads) == 1
    calls = db.call(history.list_calls, key_id=key_id)
    assert [(c["operation"], c["status"]) for c in calls] == [("listCalendarEvents", 200)]


@pytest.mark.parametrize(
    ("spoil", "description"),
    [(_expire, "The API key has expired."), (_revoke, "The API key has been revoked.")],
)
def test_the_challenge_of_a_refused_key_is_a_fixed_phrase_the_details_are_in_the_body(
    api: httpx.Client, factory: Factory, db: Database, spoil: object, description: str
) -> None:
    """Header values carry no request or calendar text (issue 24 C): the expiry time and the
    like are in the body; the challenge's description is one fixed ASCII phrase per reason."""
    key_id, secret = factory.key(factory.owner())
    spoil(db, key_id)  # type: ignore[operator]
    response = api.post(MCP, json=INITIALIZE, headers={**JSON_RPC_HEADERS, **bearer(secret)})
    challenge = _refused(response, response.json()["code"])
    assert f'error_description="{description}"' in challenge
    assert challenge.isascii()


async def test_a_key_on_a_calendar_named_in_cyrillic_or_with_line_breaks_is_refused_cleanly(
    server: RunningServer, factory: Factory
) -> None:
    """The refusal that named such a calendar in a header was a 500 on REST; over MCP it is a
    tool error naming the key's calendar, and the session goes on."""
    owner = factory.owner()
    odd = factory.calendar(owner, name='Team "A"\r\nX-Injected: yes')
    for own, other in ((owner.default_calendar_id, odd), (odd, owner.default_calendar_id)):
        _, secret = factory.key(owner, calendar_id=own)
        async with connect(server.url, secret) as client:
            refused = await client.call_tool(
                "createCalendarEvent",
                {"title": "x", "startsAt": "2026-03-02T09:00Z", "calendarId": other},
            )
            busy = await client.call_tool(
                "queryFreeBusy",
                {"timeMin": "2026-03-02", "timeMax": "2026-03-03", "calendarIds": [other]},
            )
            assert not (await client.call_tool("listCalendarEvents", {})).is_error
        for result in (refused, busy):
            assert result.is_error
            assert "insufficient_scope" in text_of(result)
