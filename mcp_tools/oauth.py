"""OAuth 2.1 for remote MCP: the SDK's authorization server with our storage.

The protocol is the MCP SDK's (``mcp.server.auth``): its handlers for RFC 8414 metadata,
authorization (code + PKCE S256 only), the token endpoint, RFC 7591 registration and RFC 7009
revocation, and RFC 9728 protected resource metadata. What is ours:

- ``CalendarAuthProvider``, the SDK's provider protocol over ``calendar_service.access.oauth``
  (hashes only; a grant is an API key row of kind ``app``); authorization requests go to the owner's
  consent page (``/settings/connect/<id>``), which answers the client with ``code``, ``state``
  and ``iss`` (RFC 9207);
- ``HashedClientAuthenticator``: the SDK's client authentication, comparing the SHA-256 of the
  presented client secret with the stored one (the SDK's compares the secret itself);
- ``ResourceTokenHandler``: the SDK's token endpoint, refusing a ``resource`` other than
  ``/mcp`` (RFC 8707 ``invalid_target``), as ``authorize`` does;
- Client ID Metadata Documents: a ``client_id`` that is an https URL is fetched (through the
  function the app passes, which goes through the webhooks' SSRF guard) and cached an hour.

Access tokens are checked at ``/mcp`` by ``mcp_tools.auth.KeyAuth`` (audience included).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import (
    RevocationErrorResponse,
    RevocationHandler,
    RevocationRequest,
)
from mcp.server.auth.handlers.token import TokenErrorResponse, TokenHandler
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.routes import (
    AUTHORIZATION_PATH,
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    build_metadata,
    build_resource_metadata_url,
    cors_middleware,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyHttpUrl, AnyUrl, ConfigDict, TypeAdapter, ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from calendar_service.access import oauth
from calendar_service.access.keys import (
    FREEBUSY_SCOPE,
    READ_SCOPE,
    REVOKED_BY_APP,
    WRITE_SCOPE,
    hash_secret,
)
from calendar_service.asgi.context import Services, call_context
from calendar_service.operations.gateway import revoke_by_app
from calendar_service.platform.timeutil import utcnow

log = logging.getLogger(__name__)

SCOPES = [READ_SCOPE, WRITE_SCOPE, FREEBUSY_SCOPE]
CONSENT_PATH = "/settings/connect"
DOCUMENT_LIFETIME = timedelta(hours=1)  # how long a fetched client metadata document is kept
MAX_BODY = 64 * 1024
MAX_STATE = 1024

FetchDocument = Callable[[str], Awaitable[bytes]]
"""Fetch a Client ID Metadata Document (the body, or raise); given by the app."""


class Code(AuthorizationCode):
    authorization_id: str


class Refresh(RefreshToken):
    token_hash: str
    key_id: str


class Access(AccessToken):
    key_id: str


def _held(info: oauth.TokenInfo) -> dict[str, Any]:
    """What the SDK's token objects (``Access``, ``Refresh``) take of a token we keep."""
    return {
        "client_id": info.client_id,
        "scopes": info.scopes,
        "expires_at": int(info.expires_at.timestamp()),
        "resource": info.resource,
        "key_id": info.key_id,
    }


def is_document_client_id(client_id: str) -> bool:
    """A Client ID Metadata Document's id: an https URL with a path (draft-ietf-oauth-client-
    id-metadata-document)."""
    parts = urlsplit(client_id)
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_NEVER = ("javascript", "data", "file", "vbscript", "blob", "about")


def redirect_uri_refusal(uri: str) -> str | None:
    """Why a client may not register ``uri`` as a redirect URI (OAuth 2.1 §2.3.1, RFC 9700
    §4.1), or ``None``: https; http only on a loopback address (native apps); or an app's own
    scheme (``com.example.app:/callback``). Never a fragment or user information."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if parts.fragment or "#" in uri:
        return "has a fragment"
    if parts.username is not None or parts.password is not None:
        return "has user information"
    if scheme in _NEVER or not scheme:
        return "is not a redirect target"
    if scheme == "http" and parts.hostname not in _LOOPBACK:
        return "must be https (http only on a loopback address)"
    if scheme in ("http", "https") and not parts.hostname:
        return "has no host"
    return None


_S256_CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # RFC 7636 §4.2: BASE64URL(SHA256(verifier))


def _same_resource(given: str, resource: str) -> bool:
    return given.rstrip("/") == resource.rstrip("/")


class CalendarAuthProvider(OAuthAuthorizationServerProvider[Code, Refresh, Access]):
    """The SDK's provider protocol, stored in our tables (``calendar_service.access.oauth``)."""

    def __init__(
        self,
        services: Services,
        *,
        issuer: str,
        resource: str,
        fetch_document: FetchDocument | None,
    ) -> None:
        self.db = services.db
        self.access_lifetime = services.config.oauth_access_token_lifetime
        self.issuer = issuer
        self.resource = resource
        self.consent_url = services.config.base_url + CONSENT_PATH
        self.fetch_document = fetch_document

    # Clients -----------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if len(client_id) > 512 or not client_id.isprintable():
            return None  # no such client can exist (and PostgreSQL cannot be asked about NUL)
        stored = await self.db.run(oauth.load_client, client_id=client_id)
        stale = stored is None or stored.created_at + DOCUMENT_LIFETIME <= utcnow()
        if stale and self.fetch_document is not None and is_document_client_id(client_id):
            stored = await self._fetch_document_client(client_id) or stored
        if stored is None:
            return None
        # The stored secret's hash stands in for the secret: HashedClientAuthenticator
        # compares the presented secret's hash with it.
        return OAuthClientInformationFull.model_validate(
            {**stored.metadata, "client_id": stored.client_id, "client_secret": stored.secret_hash}
        )

    async def _fetch_document_client(self, client_id: str) -> oauth.StoredClient | None:
        assert self.fetch_document is not None
        try:
            body = await self.fetch_document(client_id)
            document = OAuthClientMetadata.model_validate_json(body)
            raw_id = OAuthClientInformationFull.model_validate_json(body).client_id
        except Exception as exc:
            log.info("client metadata document refused: %s", type(exc).__name__)
            return None
        uris = [str(uri) for uri in document.redirect_uris or []]
        if any(redirect_uri_refusal(uri) for uri in uris):
            log.info("client metadata document refused: a redirect URI")
            return None
        if raw_id != client_id or document.token_endpoint_auth_method not in (None, "none"):
            log.info("client metadata document refused: its client_id or auth method")
            return None
        metadata = document.model_dump(mode="json", exclude_none=True)
        metadata.update(token_endpoint_auth_method="none", scope=" ".join(SCOPES))  # noqa: S106
        await self.db.run(
            oauth.save_client,
            client_id=client_id,
            secret=None,
            metadata=metadata,
            source="document",
            now=utcnow(),
        )
        return await self.db.run(oauth.load_client, client_id=client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or []:
            refusal = redirect_uri_refusal(str(uri))
            if refusal:
                raise RegistrationError("invalid_redirect_uri", f"{str(uri)[:200]!r} {refusal}")
        metadata = client_info.model_dump(
            mode="json", exclude={"client_id", "client_secret"}, exclude_none=True
        )
        await self.db.run(
            oauth.save_client,
            client_id=client_info.client_id,
            secret=client_info.client_secret,
            metadata=metadata,
            source="registered",
            now=utcnow(),
        )

    # Authorization -----------------------------------------------------------------------

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        resource = params.resource or self.resource
        if not _same_resource(resource, self.resource):
            refusal = f"This server issues tokens for {self.resource}."
            raise AuthorizeError("invalid_target", refusal)
        if not _S256_CHALLENGE.match(params.code_challenge):
            refusal = "code_challenge must be the base64url SHA-256 of the verifier (43 characters)"
            raise AuthorizeError("invalid_request", refusal)
        if params.state is not None and (
            len(params.state) > 1024 or not params.state.isprintable()
        ):
            raise AuthorizeError(
                "invalid_request", "state must be printable, at most 1024 characters"
            )
        request_id = await self.db.run(
            oauth.start_authorization,
            client_id=client.client_id,
            redirect_uri=str(params.redirect_uri),
            redirect_uri_explicit=params.redirect_uri_provided_explicitly,
            state=params.state,
            code_challenge=params.code_challenge,
            resource=self.resource,
            scopes=params.scopes or [],
            now=utcnow(),
        )
        return f"{self.consent_url}/{request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> Code | None:
        if not authorization_code.startswith(oauth.CODE_PREFIX):
            return None
        issued = await self.db.run(oauth.load_code, code=authorization_code, now=utcnow())
        if issued is None or issued.client_id != client.client_id:
            return None
        return Code(
            code=authorization_code,
            scopes=issued.scopes,
            expires_at=issued.expires_at.timestamp(),
            client_id=issued.client_id,
            code_challenge=issued.code_challenge,
            redirect_uri=AnyUrl(issued.redirect_uri),
            redirect_uri_provided_explicitly=issued.redirect_uri_explicit,
            resource=issued.resource,
            subject=issued.user_id,
            authorization_id=issued.authorization_id,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Code
    ) -> OAuthToken:
        tokens = await self.db.run(
            oauth.exchange_code,
            authorization_id=authorization_code.authorization_id,
            access_lifetime=self.access_lifetime,
            now=utcnow(),
        )
        if tokens is None:
            raise TokenError("invalid_grant", "authorization code was already used")
        return _token_response(tokens)

    # Tokens ------------------------------------------------------------------------------

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> Refresh | None:
        if not refresh_token.startswith(oauth.REFRESH_PREFIX):
            return None
        info = await self.db.run(
            oauth.load_token, token=refresh_token, kind="refresh", now=utcnow()
        )
        if info is None or info.client_id != client.client_id:
            return None
        return Refresh(token=refresh_token, token_hash=info.token_hash, **_held(info))

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Refresh, scopes: list[str]
    ) -> OAuthToken:
        tokens = await self.db.run(
            oauth.rotate_refresh,
            token_hash=refresh_token.token_hash,
            scopes=scopes,
            access_lifetime=self.access_lifetime,
            now=utcnow(),
        )
        if tokens is None:
            raise TokenError("invalid_grant", "refresh token was already used")
        return _token_response(tokens)

    async def load_access_token(self, token: str) -> Access | None:
        if not oauth.is_access_token(token):
            return None
        info = await self.db.run(oauth.load_token, token=token, kind="access", now=utcnow())
        if info is None:
            return None
        return Access(token=token, **_held(info))

    async def revoke_token(self, token: Access | Refresh) -> None:
        """RFC 7009: revoking either token ends the grant, and so both (and every other)."""
        await self.db.run(oauth.revoke_grant, key_id=token.key_id, now=utcnow(), by=REVOKED_BY_APP)

    async def revoke_by_app(self, token: Access | Refresh, request: Request) -> None:
        """``revoke_token`` as the app's own request to ``/revoke``, recorded in the grant's
        history: its owner sees when the app disconnected."""
        ctx = call_context(request, oauth.REVOKE_OPERATION, "mcp")
        await self.db.run_connected(revoke_by_app, key_id=token.key_id, ctx=ctx)


def _token_response(tokens: oauth.Tokens) -> OAuthToken:
    return OAuthToken(
        access_token=tokens.access_token,
        token_type="Bearer",  # noqa: S106 - the token type, not a secret
        expires_in=tokens.expires_in,
        scope=" ".join(tokens.scopes) or None,
        refresh_token=tokens.refresh_token,
    )


class HashedClientAuthenticator(ClientAuthenticator):
    """The SDK's ``ClientAuthenticator`` for stored secret hashes: ``client_secret`` of the
    client record is the SHA-256 of the secret, so the presented secret is hashed and the two
    compared in constant time. Public clients (``none``: PKCE is their proof) send none."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form_data = await request.form()
        client_id = form_data.get("client_id")
        if not client_id or not isinstance(client_id, str):
            raise AuthenticationError("Missing client_id")
        client = await self.provider.get_client(client_id)
        if not client:
            raise AuthenticationError("Invalid client_id")
        presented: str | None = None
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic":
            header = request.headers.get("Authorization", "")
            if not header.startswith("Basic "):
                raise AuthenticationError("Missing or invalid Basic authentication")
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode()
                basic_id, _, presented = decoded.partition(":")
            except (ValueError, UnicodeDecodeError, binascii.Error):
                raise AuthenticationError("Invalid Basic authentication header") from None
            if unquote(basic_id) != client_id:
                raise AuthenticationError("Client ID mismatch in Basic auth")
            presented = unquote(presented)
        elif method == "client_secret_post":
            raw = form_data.get("client_secret")
            presented = raw if isinstance(raw, str) else None
        elif method != "none":
            raise AuthenticationError(f"Unsupported auth method: {method}")
        if method != "none":
            if not client.client_secret or not presented:
                raise AuthenticationError("Client secret is required")
            if not hmac.compare_digest(hash_secret(presented), client.client_secret):
                raise AuthenticationError("Invalid client_secret")
            expires = client.client_secret_expires_at
            if expires and expires < int(time.time()):
                raise AuthenticationError("Client secret has expired")
        return client


@dataclass
class ResourceTokenHandler(TokenHandler):
    """The SDK's token endpoint, but a ``resource`` (RFC 8707) other than ours is refused with
    ``invalid_target`` before anything is looked at or issued."""

    resource: str = ""

    async def handle(self, request: Request) -> Response:
        form = await request.form()
        given = form.get("resource")
        if isinstance(given, str) and not _same_resource(given, self.resource):
            return self.response(
                TokenErrorResponse(
                    error="invalid_target",
                    error_description=f"This server issues tokens for {self.resource}.",
                )
            )
        return await super().handle(request)


_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


class PublicClientRevocationRequest(RevocationRequest):
    client_secret: str | None = None  # the SDK's requires the field, which public clients lack


@dataclass
class RevocationEndpoint(RevocationHandler):
    """The SDK's RFC 7009 handler, but a public client (PKCE, no secret) may revoke too: the
    SDK's request model requires ``client_secret`` even when the client has none."""

    calendar_provider: CalendarAuthProvider

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.client_authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return PydanticJSONResponse(
                status_code=401,
                content=RevocationErrorResponse(
                    error="unauthorized_client", error_description=exc.message
                ),
            )
        try:
            revocation = PublicClientRevocationRequest.model_validate(dict(await request.form()))
        except ValidationError as exc:
            return PydanticJSONResponse(
                status_code=400,
                content=RevocationErrorResponse(
                    error="invalid_request", error_description=stringify_pydantic_error(exc)
                ),
            )
        token: Access | Refresh | None = await self.provider.load_access_token(revocation.token)
        if token is None:
            token = await self.provider.load_refresh_token(client, revocation.token)
        if token is not None and token.client_id == client.client_id:
            await self.calendar_provider.revoke_by_app(token, request)
        # RFC 7009 §2.2: 200 whether or not the token was valid.
        return Response(
            status_code=200, headers={"Cache-Control": "no-store", "Pragma": "no-cache"}
        )


@dataclass(frozen=True, slots=True)
class IssuedAuthorization:
    """The SDK's authorization endpoint, with ``iss`` (RFC 9207 §2) added to the error
    responses it sends to the client's redirect URI (``invalid_scope``, ``invalid_target``,
    ``invalid_request``...): the SDK adds it to none. Its other redirect goes to the consent
    page, whose answers carry ``iss`` already (``oauth.approve``, ``oauth.deny``)."""

    handler: AuthorizationHandler
    issuer: str
    consent_url: str

    async def handle(self, request: Request) -> Response:
        response = await self.handler.handle(request)
        location = response.headers.get("location")
        if location is None or location.startswith(self.consent_url + "/"):
            return response
        # The handler read them already (Starlette keeps the form): no second read.
        params = request.query_params if request.method == "GET" else await request.form()
        named = params.get("redirect_uri")
        response.headers["location"] = oauth.with_issuer(
            location, self.issuer, redirect_uri=named if isinstance(named, str) else None
        )
        return response


def _cors(app: ASGIApp, methods: list[str]) -> ASGIApp:
    return CORSMiddleware(app=app, allow_origins="*", allow_methods=methods, allow_headers=["*"])


def _limited(handler: Callable[[Request], Awaitable[Response]]) -> ASGIApp:
    return RequestBodyLimitMiddleware(request_response(handler), MAX_BODY)


@dataclass(frozen=True, slots=True)
class OAuthServer:
    routes: list[BaseRoute]
    resource: str  # the /mcp URL: the audience of every access token
    resource_metadata_url: str  # RFC 9728, for WWW-Authenticate on /mcp's 401s

    @property
    def cors_paths(self) -> list[str]:
        """The paths that answer CORS preflights themselves (the SDK's CORS wrapper)."""
        return [
            r.path for r in self.routes if isinstance(r, Route) and "OPTIONS" in (r.methods or ())
        ]


def oauth_server(
    services: Services, *, resource_path: str, fetch_document: FetchDocument | None = None
) -> OAuthServer | None:
    """The authorization server's and the protected resource's routes, or ``None`` when the
    base URL is plain http on a non-loopback host (OAuth 2.1 requires https there)."""
    base = services.config.base_url.rstrip("/")
    try:
        issuer_url = _URL.validate_python(base)  # no "/" added: RFC 8414 compares issuers exactly
    except ValidationError:  # pragma: no cover - config checks the base URL
        return None
    if issuer_url.scheme != "https" and issuer_url.host not in ("localhost", "127.0.0.1", "[::1]"):
        log.warning("OAuth for /mcp is off: CALENDAR_BASE_URL is not https")
        return None
    resource = base + resource_path
    provider = CalendarAuthProvider(
        services, issuer=base, resource=resource, fetch_document=fetch_document
    )
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES
    )
    metadata = build_metadata(issuer_url, None, registration, RevocationOptions(enabled=True))
    metadata.authorization_response_iss_parameter_supported = True
    metadata.client_id_metadata_document_supported = fetch_document is not None
    metadata.token_endpoint_auth_methods_supported = [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]
    authenticator = HashedClientAuthenticator(provider)
    token = ResourceTokenHandler(provider, authenticator, resource=resource)
    prm = ProtectedResourceMetadata(
        resource=AnyHttpUrl(resource),
        authorization_servers=[issuer_url],
        scopes_supported=SCOPES,
        resource_name=services.config.service_name,
    )
    prm_handler = cors_middleware(ProtectedResourceMetadataHandler(prm).handle, ["GET", "OPTIONS"])
    prm_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))
    get = ["GET", "OPTIONS"]
    post = ["POST", "OPTIONS"]
    routes: list[BaseRoute] = [
        # RFC 9728 §3.1 (path-suffixed, which the SDK asks first) and the root form.
        Route(urlsplit(prm_url).path, prm_handler, methods=get),
        Route("/.well-known/oauth-protected-resource", prm_handler, methods=get),
        Route(
            "/.well-known/oauth-authorization-server",
            cors_middleware(MetadataHandler(metadata).handle, get),
            methods=get,
        ),
        Route(
            AUTHORIZATION_PATH,
            _limited(
                IssuedAuthorization(
                    AuthorizationHandler(provider), base, provider.consent_url
                ).handle
            ),
            methods=["GET", "POST"],
        ),
        Route(TOKEN_PATH, _cors(_limited(token.handle), post), methods=post),
        Route(
            REGISTRATION_PATH,
            _cors(_limited(RegistrationHandler(provider, registration).handle), post),
            methods=post,
        ),
        Route(
            REVOCATION_PATH,
            _cors(_limited(RevocationEndpoint(provider, authenticator, provider).handle), post),
            methods=post,
        ),
    ]
    return OAuthServer(routes=routes, resource=resource, resource_metadata_url=prm_url)


__all__ = [
    "SCOPES",
    "CalendarAuthProvider",
    "OAuthServer",
    "is_document_client_id",
    "oauth_server",
    "redirect_uri_refusal",
]
