"""OAuth 2.1 for remote MCP over HTTP: discovery, the happy path, and each refusal the issue
lists, refused as the RFCs say with nothing issued (the SDK's client drives the whole flow in
tests/account/test_connect_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from sqlalchemy import delete, select, update

from calendar_service.access import call_history as history
from calendar_service.access import keys, oauth
from calendar_service.platform.db import Database
from calendar_service.platform.models import calls_t, oauth_authorizations_t, oauth_tokens_t
from calendar_service.platform.timeutil import utcnow
from tests.account.conftest import csrf_from
from tests.mcp_tools.oauth_flow import REDIRECT_URI, Flow, query_of
from tests.support import Factory, RunningServer, bearer


@pytest.fixture
def flow(server: RunningServer, factory: Factory) -> Iterator[Flow]:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        started = Flow(server, factory.owner(), http)
        started.register()
        started.sign_in()
        yield started


def _tokens_of(db: Database, key_id: str) -> int:
    return len(
        db.call(
            lambda conn: conn.execute(
                select(oauth_tokens_t.c.token_hash).where(oauth_tokens_t.c.key_id == key_id)
            ).all()
        )
    )


REUSED = (
    "This access was revoked by the service because a used authorization code or refresh "
    "token was presented again (a copy may be in other hands): authorize again."
)


def _apps(db: Database, owner_id: str) -> list[dict[str, object]]:
    listed = db.call(keys.list_keys, user_id=owner_id, now=utcnow())
    return [k for k in listed if k["kind"] == "app"]


# ---------------------------------------------------------------------------------------------
# Discovery


def test_a_401_from_mcp_names_the_protected_resource_metadata_which_names_the_server(
    api: httpx.Client, server: RunningServer
) -> None:
    for headers in ({}, {"Authorization": "Bearer calat_unknown"}, {"Authorization": "Basic x"}):
        refused = api.post("/mcp", json={}, headers=headers)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert f'resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"' in (
            challenge
        )
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        metadata = api.get(path).json()
        assert metadata["resource"] == f"{server.url}/mcp"
        assert metadata["authorization_servers"] == [server.url]
    server_metadata = api.get("/.well-known/oauth-authorization-server").json()
    assert server_metadata["issuer"] == server.url
    assert server_metadata["code_challenge_methods_supported"] == ["S256"]
    assert server_metadata["authorization_response_iss_parameter_supported"] is True
    assert server_metadata["client_id_metadata_document_supported"] is True
    for name in ("authorization", "token", "registration", "revocation"):
        assert server_metadata[f"{name}_endpoint"].startswith(server.url + "/")


def test_a_rest_request_with_an_access_token_is_refused_the_token_is_for_mcp_only(
    flow: Flow,
) -> None:
    access = flow.tokens()["access_token"]
    refused = flow.http.get("/api/v1/calendar/events", headers=bearer(access))
    assert refused.status_code == 401


# ---------------------------------------------------------------------------------------------
# The happy path, over HTTP


def test_consent_issues_a_code_whose_tokens_reach_the_tools_as_a_connected_app(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    assert tokens["token_type"] == "Bearer"
    assert tokens["scope"] == "calendar:read calendar:write"
    assert 0 < tokens["expires_in"] <= 3600
    listed = flow.list_tools(tokens["access_token"])
    assert listed.status_code == 200, listed.text
    assert any(t["name"] == "listCalendarEvents" for t in listed.json()["result"]["tools"])
    [app] = _apps(db, flow.owner.id)
    assert (app["name"], app["permission"], app["state"]) == ("Test assistant", "write", "active")


def test_the_owner_who_denies_sends_access_denied_with_the_state_and_nothing_is_issued(
    flow: Flow, db: Database
) -> None:
    answer = flow.consent(flow.consent_url(), decision="deny")
    assert answer.status_code == 303
    back = query_of(answer.headers["location"])
    assert (back["error"], back["state"], back["iss"]) == (
        "access_denied",
        flow.state,
        flow.server.url,
    )
    assert "code" not in back
    assert _apps(db, flow.owner.id) == []


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
        ({"scope": "calendar:admin"}, "invalid_scope"),
        ({"code_challenge": "short"}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
    ids=["resource", "scope", "challenge", "plain-pkce", "response-type"],
)
def test_every_error_redirect_of_the_authorization_server_names_its_issuer(
    flow: Flow, overrides: dict[str, str], error: str
) -> None:
    """RFC 9207 §2: ``iss`` in every authorization response, errors included, so a client
    talking to several servers can tell which one answered (mix-up attacks)."""
    answer = flow.authorize(**overrides)
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(flow.redirect_uri + "?"), location
    back = query_of(location)
    assert (back["error"], back["state"], back["iss"]) == (error, flow.state, flow.server.url)


def test_iss_is_added_to_a_redirect_uri_that_has_a_query_of_its_own(
    server: RunningServer, factory: Factory
) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        started = Flow(server, factory.owner(), http, redirect_uri=f"{REDIRECT_URI}?app=1&empty=")
        started.register()
        answer = started.authorize(scope="calendar:admin")
    assert answer.status_code == 302, answer.text
    parts = urlsplit(answer.headers["location"])
    assert parse_qsl(parts.query, keep_blank_values=True) == [
        ("app", "1"),
        ("empty", ""),
        ("error", "invalid_scope"),
        ("error_description", answer_description(answer)),
        ("state", started.state),
        ("iss", server.url),
    ]


def answer_description(answer: httpx.Response) -> str:
    return query_of(answer.headers["location"])["error_description"]


def test_a_confidential_client_authenticates_with_its_secret_of_which_only_a_hash_is_kept(
    flow: Flow, db: Database
) -> None:
    flow.register(token_endpoint_auth_method="client_secret_post")
    assert flow.client_secret
    stored = db.call(oauth.load_client, client_id=flow.client_id)
    assert stored is not None and stored.secret_hash == keys.hash_secret(flow.client_secret)
    assert flow.client_secret not in str(stored.metadata)
    code = flow.code()
    secret, flow.client_secret = flow.client_secret, "wrong" + flow.client_secret
    refused = flow.exchange(code)
    assert (refused.status_code, refused.json()["error"]) == (401, "invalid_client")
    flow.client_secret = secret
    assert flow.exchange(code).status_code == 200


def test_rfc_7009_revocation_of_a_token_ends_the_grant_and_so_both_tokens(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    answer = flow.http.post(
        "/revoke", data={"client_id": flow.client_id, "token": tokens["refresh_token"]}
    )
    assert answer.status_code == 200
    assert flow.list_tools(tokens["access_token"]).status_code == 401
    assert flow.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    [app] = _apps(db, flow.owner.id)
    assert app["state"] == "revoked"


def test_an_app_that_revoked_its_own_grant_is_told_so_and_its_owner_sees_when(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    answer = flow.http.post(
        "/revoke", data={"client_id": flow.client_id, "token": tokens["access_token"]}
    )
    assert answer.status_code == 200
    refused = flow.list_tools(tokens["access_token"])
    assert (refused.status_code, refused.json()["code"]) == (401, "revoked_api_key")
    assert "revoked by the app that held it" in refused.json()["detail"]
    assert "owner" not in refused.json()["detail"]
    [app] = _apps(db, flow.owner.id)
    calls = db.call(history.list_calls, key_id=str(app["id"]))
    assert [(c["transport"], c["operation"], c["path"], c["status"]) for c in calls] == [
        ("mcp", "tools/list", "/mcp", 401),
        ("mcp", "revokeToken", "/revoke", 200),
    ]
    assert app["revokedBy"] == "app"
    # Who revoked it is kept with the grant, not read from its history: once the history is
    # gone (retention), the refusal still says so.
    db.call(lambda conn: conn.execute(delete(calls_t).where(calls_t.c.key_id == app["id"])))
    refused = flow.list_tools(tokens["access_token"])
    assert "revoked by the app that held it" in refused.json()["detail"]


def test_a_grant_its_owner_revoked_says_so_even_after_the_app_revokes_it_too(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    [app] = _apps(db, flow.owner.id)
    db.call(keys.revoke_key, user_id=flow.owner.id, key_id=str(app["id"]), now=utcnow())
    refused = flow.list_tools(tokens["access_token"])
    owners = "This access has been revoked by its owner: authorize again to reconnect."
    assert refused.json()["detail"] == owners  # the owner, and nobody else
    flow.http.post("/revoke", data={"client_id": flow.client_id, "token": tokens["access_token"]})
    refused = flow.list_tools(tokens["access_token"])
    assert (refused.status_code, refused.json()["code"]) == (401, "revoked_api_key")
    assert refused.json()["detail"] == owners
    [app] = _apps(db, flow.owner.id)
    assert app["revokedBy"] == "owner"


# ---------------------------------------------------------------------------------------------
# Refusals (issue 17, "Bad input"): each as the RFCs say, nothing issued


def test_an_unknown_client_is_refused_at_authorize_without_a_redirect_and_at_token(
    flow: Flow, db: Database
) -> None:
    refused = flow.authorize(client_id="no-such-client")
    assert refused.status_code == 400  # RFC 6749 §4.1.2.1: never redirect to an unverified URI
    assert "location" not in refused.headers
    assert refused.json()["error"] == "invalid_request"
    flow.client_id = "no-such-client"
    token = flow.exchange("calac_whatever")
    assert (token.status_code, token.json()["error"]) == (401, "invalid_client")
    assert _apps(db, flow.owner.id) == []


def test_a_redirect_uri_not_registered_exactly_is_refused_without_a_redirect(
    flow: Flow, db: Database
) -> None:
    for other in (
        "http://127.0.0.1:9/callback/",
        "http://127.0.0.1:9/callback?x=1",
        "http://127.0.0.1:9/Callback",
        "https://evil.example/callback",
    ):
        refused = flow.authorize(redirect_uri=other)
        assert refused.status_code == 400, other
        assert "location" not in refused.headers
        assert refused.json()["error"] == "invalid_request"
    # At the token endpoint: a code is only exchanged with the redirect URI it was issued for.
    code = flow.code()
    mismatched = flow.exchange(code, redirect_uri="http://127.0.0.1:9/other")
    assert (mismatched.status_code, mismatched.json()["error"]) == (400, "invalid_request")
    assert _apps(db, flow.owner.id) == []


def test_pkce_is_required_s256_only_and_a_missing_or_wrong_verifier_gets_nothing(
    flow: Flow, db: Database
) -> None:
    for missing in ({"code_challenge": ""}, {"code_challenge_method": "plain"}):
        refused = flow.authorize(**missing)
        assert refused.status_code == 302  # client and redirect URI verified: told by redirect
        back = query_of(refused.headers["location"])
        assert (back["error"], back["state"]) == ("invalid_request", flow.state)
    code = flow.code()
    without = flow.exchange(code, code_verifier="")
    assert (without.status_code, without.json()["error"]) == (400, "invalid_request")
    wrong = flow.exchange(code, code_verifier="x" * 64)
    assert (wrong.status_code, wrong.json()["error"]) == (400, "invalid_grant")
    assert _apps(db, flow.owner.id) == []


def test_a_reused_code_is_refused_and_the_tokens_issued_from_it_are_revoked(
    flow: Flow, db: Database
) -> None:
    code = flow.code()
    first = flow.exchange(code)
    assert first.status_code == 200
    tokens = first.json()
    assert flow.list_tools(tokens["access_token"]).status_code == 200
    again = flow.exchange(code)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert "access_token" not in again.json()
    refused = flow.list_tools(tokens["access_token"])
    assert refused.status_code == 401
    assert refused.json()["code"] == "revoked_api_key"
    assert refused.json()["detail"] == REUSED
    assert flow.refresh(tokens["refresh_token"]).json()["error"] == "invalid_grant"
    [app] = _apps(db, flow.owner.id)
    assert (app["state"], app["revokedBy"]) == ("revoked", "reuse")
    # The refused request is in the grant's history, as a revoked key's is.
    calls = db.call(history.list_calls, key_id=str(app["id"]))
    assert [(c["transport"], c["operation"], c["status"]) for c in calls] == [
        ("mcp", "tools/list", 401)
    ]


def test_an_expired_code_is_refused(flow: Flow, db: Database) -> None:
    code = flow.code()
    db.call(
        lambda conn: conn.execute(
            update(oauth_authorizations_t)
            .where(oauth_authorizations_t.c.code_hash == keys.hash_secret(code))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )
    refused = flow.exchange(code)
    assert (refused.status_code, refused.json()["error"]) == (400, "invalid_grant")
    assert "expired" in refused.json()["error_description"]
    assert _apps(db, flow.owner.id) == []


def test_a_refresh_token_rotates_and_one_used_twice_revokes_the_grant(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    rotated = flow.refresh(tokens["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    fresh = rotated.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert flow.list_tools(fresh["access_token"]).status_code == 200
    again = flow.refresh(tokens["refresh_token"])
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert "access_token" not in again.json()
    refused = flow.list_tools(fresh["access_token"])
    assert (refused.status_code, refused.json()["detail"]) == (401, REUSED)
    assert flow.refresh(fresh["refresh_token"]).json()["error"] == "invalid_grant"
    [app] = _apps(db, flow.owner.id)
    assert (app["state"], app["revokedBy"]) == ("revoked", "reuse")
    assert _tokens_of(db, str(app["id"])) == 4  # two pairs; none issued by the refused reuse


def test_tokens_for_another_resource_are_neither_issued_nor_accepted(
    flow: Flow, db: Database
) -> None:
    elsewhere = "https://other.example/mcp"
    refused = flow.authorize(resource=elsewhere)
    assert refused.status_code == 302
    back = query_of(refused.headers["location"])
    assert (back["error"], back["state"]) == ("invalid_target", flow.state)
    code = flow.code()
    wrong = flow.exchange(code, resource=elsewhere)
    assert (wrong.status_code, wrong.json()["error"]) == (400, "invalid_target")
    assert _apps(db, flow.owner.id) == []
    tokens = flow.exchange(code).json()
    assert flow.refresh(tokens["refresh_token"], resource=elsewhere).status_code == 400
    # A token whose audience is another resource (as one issued elsewhere) is refused at /mcp.
    db.call(
        lambda conn: conn.execute(
            update(oauth_tokens_t)
            .where(oauth_tokens_t.c.token_hash == keys.hash_secret(tokens["access_token"]))
            .values(resource=elsewhere)
        )
    )
    answer = flow.list_tools(tokens["access_token"])
    assert answer.status_code == 401
    assert answer.json()["code"] == "invalid_access_token"
    assert "another resource" in answer.json()["detail"]
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_the_consent_form_without_the_sessions_csrf_token_issues_nothing(
    flow: Flow, db: Database
) -> None:
    url = flow.consent_url()
    page = flow.http.get(url)
    assert page.status_code == 200
    form = {"permission": "write", "expires": "30d", "calendar": "", "decision": "allow"}
    for token in ({}, {"csrf_token": "forged"}):
        refused = flow.http.post(url, data={**form, **token})
        assert refused.status_code == 403
        assert "location" not in refused.headers
    cross_site = flow.http.post(
        url,
        data={**form, "csrf_token": csrf_from(page.text)},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert cross_site.status_code == 403
    assert db.call(
        lambda conn: conn.execute(
            select(oauth_authorizations_t.c.code_hash).where(
                oauth_authorizations_t.c.client_id == flow.client_id
            )
        ).all()
    ) == [(None,)]
    # Signed out, the consent page sends the owner to sign in first, and back.
    flow.http.cookies.clear()
    signed_out = flow.http.get(url)
    assert signed_out.status_code == 303
    assert signed_out.headers["location"].endswith(
        "/settings/sign-in?next=" + url.split(flow.server.url)[1]
    )


def test_an_access_token_past_its_lifetime_is_refused_with_invalid_token(
    flow: Flow, db: Database
) -> None:
    tokens = flow.tokens()
    db.call(
        lambda conn: conn.execute(
            update(oauth_tokens_t)
            .where(oauth_tokens_t.c.token_hash == keys.hash_secret(tokens["access_token"]))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    )
    answer = flow.list_tools(tokens["access_token"])
    assert answer.status_code == 401
    assert answer.json()["code"] == "invalid_access_token"
    assert flow.refresh(tokens["refresh_token"]).status_code == 200


def test_expired_requests_codes_and_tokens_are_purged_a_day_later(flow: Flow, db: Database) -> None:
    tokens = flow.tokens()
    pending = flow.consent_url().rsplit("/", 1)[1]
    later = utcnow() + timedelta(days=2)  # the access token, the code and the request are due
    db.call(oauth.purge, now=later)
    remaining = db.call(
        lambda conn: {
            "tokens": conn.execute(
                select(oauth_tokens_t.c.kind).where(oauth_tokens_t.c.client_id == flow.client_id)
            )
            .scalars()
            .all(),
            "requests": conn.execute(
                select(oauth_authorizations_t.c.id).where(
                    oauth_authorizations_t.c.client_id == flow.client_id
                )
            )
            .scalars()
            .all(),
        }
    )
    assert remaining == {"tokens": ["refresh"], "requests": []}  # the grant lasts 30 days
    assert pending not in remaining["requests"]
    assert flow.refresh(tokens["refresh_token"]).status_code == 200


@pytest.mark.parametrize(
    ("uri", "accepted"),
    [
        ("https://assistant.example/oauth/callback", True),
        ("http://localhost:4711/callback", True),
        ("http://[::1]:4711/callback", True),
        ("com.example.assistant:/callback", True),
        ("http://assistant.example/callback", False),  # plain http off loopback
        ("https://assistant.example/callback#x", False),
        ("https://user@assistant.example/callback", False),
        ("javascript:alert(1)", False),
        ("data:text/html,hi", False),
    ],
)
def test_registration_takes_only_redirect_uris_oauth_2_1_allows(
    api: httpx.Client, uri: str, accepted: bool
) -> None:
    answer = api.post("/register", json={"client_name": "x", "redirect_uris": [uri]})
    if accepted:
        assert answer.status_code == 201, answer.text
    else:
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_browser_based_clients_get_cors_on_the_oauth_endpoints_and_their_preflights(
    api: httpx.Client,
) -> None:
    origin = {"Origin": "http://localhost:6274"}
    for path in ("/token", "/register", "/revoke"):
        preflight = api.options(path, headers={**origin, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 200, (path, preflight.text)
        assert preflight.headers["access-control-allow-origin"] == "*"
    metadata = api.get("/.well-known/oauth-authorization-server", headers=origin)
    assert metadata.headers["access-control-allow-origin"] == "*"
    # Elsewhere OPTIONS is answered as before (no CORS: the settings pages and REST are not).
    other = api.options("/healthz", headers={**origin, "Access-Control-Request-Method": "GET"})
    assert other.status_code == 204
    assert "access-control-allow-origin" not in other.headers


def test_malformed_values_at_authorize_and_token_are_4xx_never_5xx(
    flow: Flow, db: Database
) -> None:
    """NUL can be in no stored value (PostgreSQL refuses it), a challenge is 43 characters."""
    for bad in (
        {"client_id": "client\x00"},
        {"state": "state\x00"},
        {"state": "s" * 1025},
        {"code_challenge": "c\x00" * 30},
        {"code_challenge": "x" * 200},
        {"code_challenge": "short"},
    ):
        answer = flow.authorize(**bad)
        assert answer.status_code in (302, 400), (bad, answer.status_code)
        if answer.status_code == 302:
            assert query_of(answer.headers["location"])["error"] == "invalid_request"
    for client_id in ("client\x00", "c" * 600):
        flow.client_id = client_id
        assert flow.exchange("calac_x").status_code == 401
        assert flow.authorize().status_code == 400
    assert _apps(db, flow.owner.id) == []


def test_a_post_to_authorize_gets_its_error_redirect_with_iss_too(flow: Flow) -> None:
    """RFC 6749 §3.1: the authorization endpoint may be sent a form; the answer is the same."""
    params = {
        "response_type": "code",
        "client_id": flow.client_id,
        "redirect_uri": flow.redirect_uri,
        "state": flow.state,
        "code_challenge": "short",
        "code_challenge_method": "S256",
    }
    answer = flow.http.post("/authorize", data=params)
    assert answer.status_code == 302, answer.text
    back = query_of(answer.headers["location"])
    assert (back["error"], back["state"], back["iss"]) == (
        "invalid_request",
        flow.state,
        flow.server.url,
    )
