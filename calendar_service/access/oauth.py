"""OAuth 2.1 storage for remote MCP: clients, authorization requests, codes, tokens, grants.

The protocol is the MCP SDK's (``mcp_tools.oauth``); this module is what it stores, with
SQLAlchemy only. What the owner grants a client on the consent page is an ``api_keys`` row of
kind ``app`` (a *grant*): its permission, calendar and expiry are checked by the keys' own code,
its calls are in its history, and revoking it (settings, or ``keys revoke``) ends every token of
it at once, since each request reads the grant again.

Every secret (client secret, code, access and refresh token) is random, shown once, and stored
as its SHA-256 only. A code is single-use: presenting it again revokes the grant made from it;
a refresh token rotates: presenting an old one again revokes the grant (RFC 9700 §4.14).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sqlalchemy import Connection, delete, insert, select, update

from calendar_service.access.keys import (
    APPROVAL_NONE,
    REVOKED_BY_REUSE,
    Principal,
    authorize,
    grant_errors,
    hash_secret,
    key_row_by_id,
    scopes_of,
)
from calendar_service.platform.errors import (
    ExpiredKey,
    InvalidAccessToken,
    NotFound,
    RevokedKey,
    ValidationFailed,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.models.columns import from_db
from calendar_service.platform.models.keys import keys_t
from calendar_service.platform.models.oauth import (
    oauth_authorizations_t,
    oauth_clients_t,
    oauth_tokens_t,
)
from calendar_service.platform.timeutil import format_utc

ACCESS_PREFIX = "calat_"
REFRESH_PREFIX = "calrt_"
CODE_PREFIX = "calac_"
REQUEST_LIFETIME = timedelta(minutes=10)  # from the client's redirect to the owner's answer
CODE_LIFETIME = timedelta(minutes=1)  # RFC 6749 §4.1.2: short; it is exchanged at once
APP_KEY_PREFIX = "app"
# The operation an app's RFC 7009 revocation is recorded as in its grant's history.
REVOKE_OPERATION = "revokeToken"
PURGE_AFTER = timedelta(days=1)  # expired requests, codes and tokens are deleted this long after


def _new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)  # 256 bits


def is_access_token(token: str) -> bool:
    return token.startswith(ACCESS_PREFIX)


# ---------------------------------------------------------------------------------------------
# Clients


@dataclass(frozen=True, slots=True)
class StoredClient:
    client_id: str
    secret_hash: str | None
    metadata: dict[str, Any]  # the RFC 7591 metadata, without the secret
    source: str  # "registered" | "document"
    created_at: datetime


def save_client(
    conn: Connection,
    *,
    client_id: str,
    secret: str | None,
    metadata: dict[str, Any],
    source: str,
    now: datetime,
) -> None:
    """Store a client (a document client again: its fresh copy replaces the old)."""
    values = {
        "secret_hash": None if secret is None else hash_secret(secret),
        "client_metadata": json.dumps(metadata, sort_keys=True),
        "source": source,
        "created_at": now,
    }
    done = conn.execute(
        update(oauth_clients_t).where(oauth_clients_t.c.client_id == client_id).values(**values)
    )
    if done.rowcount == 0:
        conn.execute(insert(oauth_clients_t).values(client_id=client_id, **values))


def load_client(conn: Connection, *, client_id: str) -> StoredClient | None:
    row = (
        conn.execute(select(oauth_clients_t).where(oauth_clients_t.c.client_id == client_id))
        .mappings()
        .first()
    )
    if row is None:
        return None
    return StoredClient(
        row["client_id"],
        row["secret_hash"],
        json.loads(row["client_metadata"]),
        row["source"],
        from_db(row["created_at"]),
    )


def client_name(client: StoredClient) -> str:
    name = client.metadata.get("client_name")
    return str(name).strip()[:200] if name and str(name).strip() else client.client_id[:200]


# ---------------------------------------------------------------------------------------------
# Authorization requests and codes


def start_authorization(
    conn: Connection,
    *,
    client_id: str,
    redirect_uri: str,
    redirect_uri_explicit: bool,
    state: str | None,
    code_challenge: str,
    resource: str,
    scopes: list[str],
    now: datetime,
) -> str:
    """Record an authorization request waiting for the owner's consent; returns its id."""
    request_id = new_id("oar")
    conn.execute(
        insert(oauth_authorizations_t).values(
            id=request_id,
            client_id=client_id,
            redirect_uri=redirect_uri,
            redirect_uri_explicit=redirect_uri_explicit,
            state=state,
            code_challenge=code_challenge,
            resource=resource,
            scopes=" ".join(scopes),
            created_at=now,
            expires_at=now + REQUEST_LIFETIME,
        )
    )
    return request_id


@dataclass(frozen=True, slots=True)
class PendingRequest:
    id: str
    client: StoredClient
    client_name: str
    redirect_uri: str
    redirect_host: str
    scopes: list[str]


def pending_request(conn: Connection, *, request_id: str, now: datetime) -> PendingRequest:
    """A request still waiting for consent (404 once answered, expired or unknown)."""
    row = (
        conn.execute(
            select(oauth_authorizations_t).where(oauth_authorizations_t.c.id == request_id)
        )
        .mappings()
        .first()
    )
    if row is None or row["user_id"] is not None or from_db(row["expires_at"]) <= now:
        raise NotFound(
            "This authorization request is unknown, expired or already answered: start again "
            "from the app that asked."
        )
    client = load_client(conn, client_id=row["client_id"])
    if client is None:  # pragma: no cover - clients are never deleted
        raise NotFound("The app that asked is no longer known.")
    return PendingRequest(
        row["id"],
        client,
        client_name(client),
        row["redirect_uri"],
        urlsplit(row["redirect_uri"]).netloc,
        row["scopes"].split(),
    )


def _redirect(uri: str, **params: str | None) -> str:
    """``uri`` with ``params`` added to its query (RFC 6749 §4.1.2: its own query is kept)."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(k, v) for k, v in params.items() if v is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))


_ERROR_RESPONSE = ("error", "error_description", "error_uri", "state")  # RFC 6749 §4.1.2.1


def with_issuer(location: str, issuer: str, *, redirect_uri: str | None = None) -> str:
    """An authorization response sent to a client's redirect URI (an error the authorization
    endpoint answers before the owner is asked) with ``iss`` added, as RFC 9207 §2 asks of
    every authorization response, errors included; unchanged if it has one.

    Given the ``redirect_uri`` the request named (``location`` goes to it), the answer is
    made again on it, so that its own query is kept whole as RFC 6749 §3.1.2 asks: the SDK
    that made ``location`` drops its blank values (``?app=1&tab=``)."""
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(name == "iss" for name, _ in query):
        return location
    if redirect_uri is not None:
        own = urlsplit(redirect_uri)
        if (own.scheme, own.netloc, own.path) == (parts.scheme, parts.netloc, parts.path):
            added = dict((k, v) for k, v in query if k in _ERROR_RESPONSE)
            return _redirect(redirect_uri, **added, iss=issuer)
    return _redirect(location, iss=issuer)


def _answer(conn: Connection, request_id: str, now: datetime, **values: Any) -> dict[str, Any]:
    """Mark a pending request answered (once: a second answer finds it answered)."""
    done = conn.execute(
        update(oauth_authorizations_t)
        .where(
            oauth_authorizations_t.c.id == request_id,
            oauth_authorizations_t.c.user_id.is_(None),
            oauth_authorizations_t.c.expires_at > now,
        )
        .values(**values)
    )
    if done.rowcount != 1:
        raise NotFound("This authorization request is unknown, expired or already answered.")
    row = (
        conn.execute(
            select(oauth_authorizations_t).where(oauth_authorizations_t.c.id == request_id)
        )
        .mappings()
        .one()
    )
    return dict(row)


def approve(
    conn: Connection,
    *,
    request_id: str,
    user_id: str,
    permission: str,
    calendar_id: str | None,
    grant_expires_at: datetime,
    issuer: str,
    now: datetime,
    approval: str = APPROVAL_NONE,
    may_invite: bool = False,
) -> str:
    """The owner allows the request: a code (single-use, short-lived) is issued. Returns the
    client's redirect URI with ``code``, ``state`` and ``iss`` (RFC 9207). ``approval``: which
    of the app's writes wait for the owner (``keys.APPROVALS``); ``may_invite``: whether the
    app may send email invitations."""
    errors = grant_errors(
        conn,
        user_id=user_id,
        permission=permission,
        expires_at=grant_expires_at,
        calendar_id=calendar_id,
        now=now,
        approval=approval,
    )
    if errors:
        raise ValidationFailed(errors)
    code = _new_secret(CODE_PREFIX)
    row = _answer(
        conn,
        request_id,
        now,
        user_id=user_id,
        permission=permission,
        calendar_id=calendar_id,
        grant_expires_at=grant_expires_at,
        approval=approval,
        may_invite=may_invite,
        code_hash=hash_secret(code),
        expires_at=now + CODE_LIFETIME,
    )
    return _redirect(row["redirect_uri"], code=code, state=row["state"], iss=issuer)


def deny(conn: Connection, *, request_id: str, user_id: str, issuer: str, now: datetime) -> str:
    """The owner refuses: RFC 6749 §4.1.2.1 ``access_denied`` back to the client."""
    row = _answer(conn, request_id, now, user_id=user_id, used_at=now)
    return _redirect(
        row["redirect_uri"],
        error="access_denied",
        error_description="The owner did not allow access.",
        state=row["state"],
        iss=issuer,
    )


@dataclass(frozen=True, slots=True)
class IssuedCode:
    authorization_id: str
    client_id: str
    code_challenge: str
    redirect_uri: str
    redirect_uri_explicit: bool
    resource: str
    scopes: list[str]
    expires_at: datetime
    user_id: str


def load_code(conn: Connection, *, code: str, now: datetime) -> IssuedCode | None:
    """The code's authorization, or ``None`` (unknown, or used: then the grant made from it is
    revoked, RFC 6749 §4.1.2). An expired code is returned: the SDK refuses it as expired."""
    row = (
        conn.execute(
            select(oauth_authorizations_t).where(
                oauth_authorizations_t.c.code_hash == hash_secret(code)
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    if row["used_at"] is not None:
        if row["key_id"] is not None:
            revoke_grant(conn, key_id=row["key_id"], now=now, by=REVOKED_BY_REUSE)
        return None
    return IssuedCode(
        row["id"],
        row["client_id"],
        row["code_challenge"],
        row["redirect_uri"],
        bool(row["redirect_uri_explicit"]),
        row["resource"],
        list(scopes_of(row["permission"])),
        from_db(row["expires_at"]),
        row["user_id"],
    )


@dataclass(frozen=True, slots=True)
class Tokens:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]


def _issue(
    conn: Connection,
    *,
    key_id: str,
    client_id: str,
    resource: str,
    scopes: list[str],
    grant_expires_at: datetime,
    access_lifetime: timedelta,
    now: datetime,
) -> Tokens:
    access, refresh = _new_secret(ACCESS_PREFIX), _new_secret(REFRESH_PREFIX)
    access_expires = min(now + access_lifetime, grant_expires_at)
    common = {"key_id": key_id, "client_id": client_id, "resource": resource}
    conn.execute(
        insert(oauth_tokens_t),
        [
            {
                **common,
                "token_hash": hash_secret(access),
                "kind": "access",
                "scopes": " ".join(scopes),
                "created_at": now,
                "expires_at": access_expires,
            },
            {
                **common,
                "token_hash": hash_secret(refresh),
                "kind": "refresh",
                "scopes": " ".join(scopes),
                "created_at": now,
                "expires_at": grant_expires_at,
            },
        ],
    )
    expires_in = max(1, int((access_expires - now).total_seconds()))
    return Tokens(access, refresh, expires_in, scopes)


def exchange_code(
    conn: Connection,
    *,
    authorization_id: str,
    access_lifetime: timedelta,
    now: datetime,
) -> Tokens | None:
    """Use the code once: the grant (an ``api_keys`` row of kind app) is made and its first
    tokens issued. ``None`` if it was used meanwhile (a race: the other use won)."""
    claimed = conn.execute(
        update(oauth_authorizations_t)
        .where(
            oauth_authorizations_t.c.id == authorization_id,
            oauth_authorizations_t.c.used_at.is_(None),
        )
        .values(used_at=now)
    )
    if claimed.rowcount != 1:
        return None
    row = (
        conn.execute(
            select(oauth_authorizations_t).where(oauth_authorizations_t.c.id == authorization_id)
        )
        .mappings()
        .one()
    )
    client = load_client(conn, client_id=row["client_id"])
    name = client_name(client) if client is not None else row["client_id"][:200]
    key_id = new_id("key")
    grant_expires_at = from_db(row["grant_expires_at"])
    conn.execute(
        insert(keys_t).values(
            id=key_id,
            user_id=row["user_id"],
            name=name,
            prefix=APP_KEY_PREFIX,
            # Never shown nor usable as a static key: the app reaches it through its tokens.
            secret_hash=hash_secret(_new_secret("calgrant_")),
            permission=row["permission"],
            calendar_id=row["calendar_id"],
            created_at=now,
            expires_at=grant_expires_at,
            revoked_at=None,
            kind="app",
            approval=row["approval"] or APPROVAL_NONE,
            may_invite=bool(row["may_invite"]),
        )
    )
    conn.execute(
        update(oauth_authorizations_t)
        .where(oauth_authorizations_t.c.id == authorization_id)
        .values(key_id=key_id)
    )
    return _issue(
        conn,
        key_id=key_id,
        client_id=row["client_id"],
        resource=row["resource"],
        scopes=list(scopes_of(row["permission"])),
        grant_expires_at=grant_expires_at,
        access_lifetime=access_lifetime,
        now=now,
    )


# ---------------------------------------------------------------------------------------------
# Tokens


@dataclass(frozen=True, slots=True)
class TokenInfo:
    token_hash: str
    kind: str
    key_id: str
    client_id: str
    resource: str
    scopes: list[str]
    expires_at: datetime
    used_at: datetime | None
    grant_revoked: bool
    grant_expires_at: datetime


def _token(conn: Connection, token: str) -> TokenInfo | None:
    digest = hash_secret(token)
    row = conn.execute(
        select(
            oauth_tokens_t.c.token_hash,
            oauth_tokens_t.c.kind,
            oauth_tokens_t.c.key_id,
            oauth_tokens_t.c.client_id,
            oauth_tokens_t.c.resource,
            oauth_tokens_t.c.scopes,
            oauth_tokens_t.c.expires_at,
            oauth_tokens_t.c.used_at,
            keys_t.c.revoked_at,
            keys_t.c.expires_at,
        )
        .select_from(oauth_tokens_t.join(keys_t, keys_t.c.id == oauth_tokens_t.c.key_id))
        .where(oauth_tokens_t.c.token_hash == digest)
    ).first()
    if row is None or not secrets.compare_digest(row[0], digest):
        return None
    return TokenInfo(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5].split(),
        from_db(row[6]),
        None if row[7] is None else from_db(row[7]),
        row[8] is not None,
        from_db(row[9]),
    )


def load_token(conn: Connection, *, token: str, kind: str, now: datetime) -> TokenInfo | None:
    """A live token of ``kind`` (its grant neither revoked nor expired), else ``None``. A
    refresh token presented after it was rotated revokes its grant (it was stolen, or the
    client is confused: either way the grant ends)."""
    info = _token(conn, token)
    if info is None or info.kind != kind or info.grant_revoked:
        return None
    if info.used_at is not None:
        revoke_grant(conn, key_id=info.key_id, now=now, by=REVOKED_BY_REUSE)
        return None
    if info.grant_expires_at <= now:
        return None
    return info


def rotate_refresh(
    conn: Connection,
    *,
    token_hash: str,
    scopes: list[str],
    access_lifetime: timedelta,
    now: datetime,
) -> Tokens | None:
    """Spend a refresh token for a new pair. ``None`` if it was spent meanwhile (then, as for
    any reuse, the grant is revoked)."""
    row = (
        conn.execute(select(oauth_tokens_t).where(oauth_tokens_t.c.token_hash == token_hash))
        .mappings()
        .one()
    )
    claimed = conn.execute(
        update(oauth_tokens_t)
        .where(oauth_tokens_t.c.token_hash == token_hash, oauth_tokens_t.c.used_at.is_(None))
        .values(used_at=now)
    )
    if claimed.rowcount != 1:
        revoke_grant(conn, key_id=row["key_id"], now=now, by=REVOKED_BY_REUSE)
        return None
    return _issue(
        conn,
        key_id=row["key_id"],
        client_id=row["client_id"],
        resource=row["resource"],
        scopes=scopes,
        grant_expires_at=from_db(row["expires_at"]),
        access_lifetime=access_lifetime,
        now=now,
    )


def revoke_grant(conn: Connection, *, key_id: str, now: datetime, by: str) -> None:
    """End a grant and so every token of it (a no-op for one already revoked: who revoked it
    first is kept). ``by``: who or what revokes it (``keys.REVOKED_BY_*``)."""
    conn.execute(
        update(keys_t)
        .where(keys_t.c.id == key_id, keys_t.c.kind == "app", keys_t.c.revoked_at.is_(None))
        .values(revoked_at=now, revoked_by=by)
    )


def grant_of(conn: Connection, *, token: str) -> str | None:
    """The grant (key id) a token belongs to, in any state: for recording a refused call."""
    info = _token(conn, token)
    return None if info is None else info.key_id


def authenticate_access(conn: Connection, *, token: str, resource: str, now: datetime) -> Principal:
    """The principal of an access token presented at ``resource`` (the grant's key), or raise:
    unknown, expired, for another resource (audience), or the grant revoked or expired."""
    info = _token(conn, token)
    if info is None or info.kind != "access":
        raise InvalidAccessToken("is not known to this service")
    if info.resource.rstrip("/") != resource.rstrip("/"):
        raise InvalidAccessToken("was issued for another resource")
    row = key_row_by_id(conn, key_id=info.key_id)
    if row.revoked_at is not None:
        raise RevokedKey(row.revoked_by, app=True)
    if row.expires_at <= now:
        raise ExpiredKey(format_utc(row.expires_at))
    if info.expires_at <= now:
        raise InvalidAccessToken(f"expired at {format_utc(info.expires_at)}")
    return authorize(row, now=now, app=True)


def purge(conn: Connection, *, now: datetime) -> int:
    """Delete authorization requests and codes, and tokens, expired more than a day ago (the
    maintenance job). A rotated refresh token lives as long as its grant, so its reuse is
    caught while the grant could still be used; a code presented after its row is gone is
    refused as unknown."""
    cutoff = now - PURGE_AFTER
    requests = conn.execute(
        delete(oauth_authorizations_t).where(oauth_authorizations_t.c.expires_at < cutoff)
    ).rowcount
    tokens = conn.execute(delete(oauth_tokens_t).where(oauth_tokens_t.c.expires_at < cutoff))
    return int(requests or 0) + int(tokens.rowcount or 0)
