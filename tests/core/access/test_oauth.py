"""The OAuth core (``calendar_service.access.oauth``) on its own, without the MCP SDK: a request
answered once, a code used once (its reuse revokes the grant made from it), a refresh token rotated
(its reuse revokes the grant), an access token bound to its resource, and the purge of leftovers."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import Connection, func, select

from calendar_service.access import oauth
from calendar_service.platform.errors import InvalidAccessToken, NotFound, RevokedKey
from calendar_service.platform.models.oauth import oauth_authorizations_t, oauth_tokens_t
from calendar_service.platform.timeutil import utcnow
from tests.support import Factory, Owner

RESOURCE = "https://calendar.example/mcp"
ISSUER = "https://calendar.example"
REDIRECT = "https://app.example/callback?from=calendar"
HOUR = timedelta(hours=1)


def _request(factory: Factory, now: datetime) -> str:
    factory.db.call(
        oauth.save_client,
        client_id="client-1",
        secret=None,
        metadata={"client_name": "  Notes app  ", "redirect_uris": [REDIRECT]},
        source="registered",
        now=now,
    )
    return str(
        factory.db.call(
            oauth.start_authorization,
            client_id="client-1",
            redirect_uri=REDIRECT,
            redirect_uri_explicit=True,
            state="s1",
            code_challenge="challenge",
            resource=RESOURCE,
            scopes=["calendar.read"],
            now=now,
        )
    )


def _approved(factory: Factory, owner: Owner, now: datetime) -> tuple[str, str]:
    """A request approved by ``owner``: (its id, the code sent back to the client)."""
    request_id = _request(factory, now)
    location = factory.db.call(
        oauth.approve,
        request_id=request_id,
        user_id=owner.id,
        permission="read",
        calendar_id=None,
        grant_expires_at=now + timedelta(days=30),
        issuer=ISSUER,
        now=now,
    )
    query = parse_qs(urlsplit(location).query)
    assert location.startswith("https://app.example/callback?")
    assert query["from"] == ["calendar"] and query["state"] == ["s1"]
    assert query["iss"] == [ISSUER]
    return request_id, query["code"][0]


def _tokens(factory: Factory, owner: Owner, now: datetime) -> oauth.Tokens:
    """The tokens a client gets for the code of a request ``owner`` approved."""
    _, code = _approved(factory, owner, now)
    issued = factory.db.call(oauth.load_code, code=code, now=now)
    assert issued is not None
    tokens = factory.db.call(
        oauth.exchange_code, authorization_id=issued.authorization_id, access_lifetime=HOUR, now=now
    )
    assert tokens is not None
    return tokens


def test_a_request_is_answered_once_and_names_its_client(factory: Factory) -> None:
    owner, now = factory.owner(), utcnow()
    request_id = _request(factory, now)
    pending = factory.db.call(oauth.pending_request, request_id=request_id, now=now)
    assert (pending.client_name, pending.redirect_host) == ("Notes app", "app.example")
    location = factory.db.call(
        oauth.deny, request_id=request_id, user_id=owner.id, issuer=ISSUER, now=now
    )
    assert parse_qs(urlsplit(location).query)["error"] == ["access_denied"]
    with pytest.raises(NotFound):
        factory.db.call(oauth.pending_request, request_id=request_id, now=now)
    with pytest.raises(NotFound):
        factory.db.call(oauth.deny, request_id=request_id, user_id=owner.id, issuer=ISSUER, now=now)
    late = _request(factory, now)
    with pytest.raises(NotFound):
        factory.db.call(oauth.pending_request, request_id=late, now=now + oauth.REQUEST_LIFETIME)


def test_a_code_gives_tokens_once_and_its_reuse_revokes_the_grant(factory: Factory) -> None:
    owner, now = factory.owner(), utcnow()
    _, code = _approved(factory, owner, now)
    issued = factory.db.call(oauth.load_code, code=code, now=now)
    assert issued is not None and issued.user_id == owner.id
    assert issued.scopes == list(oauth.scopes_of("read"))
    tokens = factory.db.call(
        oauth.exchange_code, authorization_id=issued.authorization_id, access_lifetime=HOUR, now=now
    )
    assert tokens is not None and oauth.is_access_token(tokens.access_token)
    assert tokens.expires_in == 3600
    assert (
        factory.db.call(
            oauth.exchange_code,
            authorization_id=issued.authorization_id,
            access_lifetime=HOUR,
            now=now,
        )
        is None
    )
    principal = factory.db.call(
        oauth.authenticate_access, token=tokens.access_token, resource=RESOURCE + "/", now=now
    )
    assert principal.user_id == owner.id and principal.permission == "read"
    # The code presented again: refused, and the grant made from it ends.
    assert factory.db.call(oauth.load_code, code=code, now=now) is None
    with pytest.raises(RevokedKey):
        factory.db.call(
            oauth.authenticate_access, token=tokens.access_token, resource=RESOURCE, now=now
        )


def test_a_refresh_token_rotates_and_its_reuse_revokes_the_grant(factory: Factory) -> None:
    owner, now = factory.owner(), utcnow()
    first = _tokens(factory, owner, now)
    info = factory.db.call(oauth.load_token, token=first.refresh_token, kind="refresh", now=now)
    assert info is not None and info.resource == RESOURCE
    assert (
        factory.db.call(oauth.load_token, token=first.refresh_token, kind="access", now=now) is None
    )
    second = factory.db.call(
        oauth.rotate_refresh,
        token_hash=info.token_hash,
        scopes=info.scopes,
        access_lifetime=HOUR,
        now=now,
    )
    assert second is not None and second.refresh_token != first.refresh_token
    assert factory.db.call(oauth.grant_of, token=second.access_token) == info.key_id
    # The old refresh token again: the grant ends, and the new tokens with it.
    assert (
        factory.db.call(oauth.load_token, token=first.refresh_token, kind="refresh", now=now)
        is None
    )
    assert (
        factory.db.call(oauth.load_token, token=second.refresh_token, kind="refresh", now=now)
        is None
    )
    with pytest.raises(RevokedKey):
        factory.db.call(
            oauth.authenticate_access, token=second.access_token, resource=RESOURCE, now=now
        )


def test_an_access_token_serves_its_own_resource_until_it_expires(factory: Factory) -> None:
    owner, now = factory.owner(), utcnow()
    tokens = _tokens(factory, owner, now)
    with pytest.raises(InvalidAccessToken, match="another resource"):
        factory.db.call(
            oauth.authenticate_access,
            token=tokens.access_token,
            resource="https://elsewhere.example/mcp",
            now=now,
        )
    with pytest.raises(InvalidAccessToken, match="expired"):
        factory.db.call(
            oauth.authenticate_access, token=tokens.access_token, resource=RESOURCE, now=now + HOUR
        )
    with pytest.raises(InvalidAccessToken, match="not known"):
        factory.db.call(
            oauth.authenticate_access, token=tokens.refresh_token, resource=RESOURCE, now=now
        )


def _kept(conn: Connection, *, request_id: str, key_id: str) -> tuple[int, list[str]]:
    """Whether the request is still stored, and the kinds of the grant's tokens still stored."""
    requests = conn.execute(
        select(func.count()).where(oauth_authorizations_t.c.id == request_id)
    ).scalar_one()
    kinds = conn.execute(
        select(oauth_tokens_t.c.kind).where(oauth_tokens_t.c.key_id == key_id)
    ).scalars()
    return int(requests), sorted(kinds)


def test_the_purge_deletes_requests_and_tokens_a_day_past_their_expiry(factory: Factory) -> None:
    owner, now = factory.owner(), utcnow()
    request_id, _ = _approved(factory, owner, now)
    tokens = factory.db.call(
        oauth.exchange_code, authorization_id=request_id, access_lifetime=HOUR, now=now
    )
    assert tokens is not None
    key_id = factory.db.call(oauth.grant_of, token=tokens.access_token)
    assert key_id is not None
    factory.db.call(oauth.purge, now=now)
    assert factory.db.call(_kept, request_id=request_id, key_id=key_id) == (
        1,
        ["access", "refresh"],
    )
    # A day past the access token's hour (and the request's ten minutes): those two go; the
    # refresh token lives as long as its grant (30 days).
    assert factory.db.call(oauth.purge, now=now + HOUR + oauth.PURGE_AFTER + HOUR) >= 2
    assert factory.db.call(_kept, request_id=request_id, key_id=key_id) == (0, ["refresh"])
    live = factory.db.call(
        oauth.load_token, token=tokens.refresh_token, kind="refresh", now=now + HOUR
    )
    assert live is not None
