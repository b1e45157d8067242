"""The key check in front of the remote MCP transport, and how a tool call finds its key.

Every HTTP request to ``/mcp`` presents ``Authorization: Bearer <API_KEY>`` (or an OAuth access
token, ``mcp_tools.oauth``: its grant is a key, checked the same way), verified by the same
core code as REST (``gateway.authenticate``) on each request, so revoking a key takes effect at
once, open client or not. A missing or bad key gets the REST API's 401: problem details with an
RFC 6750 ``WWW-Authenticate`` challenge. A refused key that exists (revoked, expired) is recorded
in its history, as REST does. A verified request reaches the MCP transport with ``scope["user"]``
set to the key (the SDK binds sessions to it and ``get_access_token()`` returns it) and the
principal it was verified as in the request's state; a tool call made by the request performs
its operation as that principal through ``gateway.perform``, which checks the permission and
calendar scope and records the call, without reading the key a second time.

``Origin`` is validated: browsers send it, and a page on another site must not drive the tools
(DNS rebinding). Requests without ``Origin`` (every non-browser client) pass to the key check.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, NoReturn
from urllib.parse import urlsplit

import orjson
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from calendar_service.access import oauth
from calendar_service.access.keys import Principal
from calendar_service.asgi.context import (
    MAX_BODY,
    Services,
    bearer_token,
    call_context,
    key_in_url,
    record_refusal,
)
from calendar_service.asgi.responses import error_response, problem
from calendar_service.operations.gateway import CallContext, authenticate, refuse_known
from calendar_service.platform.errors import CalendarError, ExpiredKey, KeyInUrl, RevokedKey
from calendar_service.platform.ids import new_id
from calendar_service.platform.timeutil import utcnow
from mcp_tools.server import TOOLS, Caller

# The operations that are MCP tools (importCalendarEvents, for one, is REST only).
TOOL_NAMES = frozenset(spec.op.name for spec in TOOLS)
# Where KeyAuth leaves the principal it verified, in the request's state.
_PRINCIPAL = "mcp_principal"
# JSON-RPC methods a refused request may be recorded under; anything else is recorded as "mcp".
_KNOWN_METHODS = frozenset({"initialize", "server/discover", "tools/list", "tools/call", "ping"})


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, as browsers send it in ``Origin``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class KeyAuth:
    """ASGI wrapper: Origin check, the API key check, POST only, then the MCP transport."""

    allowed_methods = ("POST",)  # for OPTIONS and 405s (calendar_service.asgi.methods)

    def __init__(
        self,
        app: ASGIApp,
        *,
        services: Services,
        allowed_origins: Iterable[str],
        oauth_resource: str | None = None,
        resource_metadata: str | None = None,
    ) -> None:
        self.app = AuthContextMiddleware(app)
        self.services = services
        self.allowed_origins = frozenset(origin.lower().rstrip("/") for origin in allowed_origins)
        # With OAuth on: this endpoint's URL (every access token's audience must be it), and
        # its RFC 9728 metadata URL, named in the WWW-Authenticate of every 401.
        self.oauth_resource = oauth_resource
        self.resource_metadata = resource_metadata

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        path = request.url.path
        origin = request.headers.get("origin")
        if origin is not None and origin.lower().rstrip("/") not in self.allowed_origins:
            response = problem(
                403,
                "origin_not_allowed",
                "Origin not allowed",
                f"Requests from the web origin {origin!r} are not accepted by this MCP endpoint.",
                instance=path,
            )
            await response(scope, receive, send)
            return
        try:
            principal, secret = await self._verify(request)
        except CalendarError as exc:
            realm = self.services.config.service_name
            answer = error_response(
                exc, realm=realm, instance=path, resource_metadata=self.resource_metadata
            )
            await answer(scope, receive, send)
            return
        if request.method != "POST":
            # Stateless JSON transport: no server-sent event stream to GET, no session to
            # DELETE. 405 is the answer the MCP specification gives for both.
            response = problem(
                405,
                "method_not_allowed",
                "Method not allowed",
                f"{request.method} is not allowed on {path}: send MCP messages with POST.",
                instance=path,
                headers={"Allow": "POST, OPTIONS"},
            )
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[_PRINCIPAL] = principal  # for ``http_caller``, below
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token=secret,
                client_id=principal.key_id,
                scopes=list(principal.scopes),
                expires_at=int(principal.expires_at.timestamp()),
                subject=principal.user_id,
            )
        )
        await self.app(scope, receive, send)

    async def _verify(self, request: Request) -> tuple[Principal, str]:
        leaked = key_in_url(request)
        if leaked is not None:
            await self._record_refusal(request, KeyInUrl(leaked[0]), fallback_secret=leaked[1])
        secret = bearer_token(request)
        if secret is not None and self.oauth_resource and oauth.is_access_token(secret):
            # An OAuth access token: its grant is a key, checked as keys are, on every request.
            try:
                principal = await self.services.db.run(
                    oauth.authenticate_access,
                    token=secret,
                    resource=self.oauth_resource,
                    now=utcnow(),
                )
            except (RevokedKey, ExpiredKey) as exc:
                await self._record_grant_refusal(request, secret, exc)
                raise
            return principal, secret
        try:
            principal = await self.services.db.run(authenticate, secret=secret)
        except (RevokedKey, ExpiredKey) as exc:
            # The key exists: its owner sees the refused request in its history.
            await self._record_refusal(request, exc)
        assert secret is not None
        return principal, secret

    async def _record_grant_refusal(
        self, request: Request, token: str, refusal: CalendarError
    ) -> None:
        """The grant's owner sees the refused request in its history, as a key's would."""
        db = self.services.db
        key_id = await db.run(oauth.grant_of, token=token)
        if key_id is not None:
            ctx = call_context(request, await _operation(request), "mcp")
            await db.run_connected(refuse_known, key_id=key_id, ctx=ctx, status=refusal.status)

    async def _record_refusal(
        self, request: Request, refusal: CalendarError, fallback_secret: str | None = None
    ) -> NoReturn:
        """Record ``refusal`` in the history of the key presented (if it exists); raise it."""
        await record_refusal(
            request,
            self.services,
            refusal,
            operation=await _operation(request),
            transport="mcp",
            fallback_secret=fallback_secret,
        )


async def _operation(request: Request) -> str:
    """What a refused request asked for: the tool name, else the JSON-RPC method, else mcp.

    Only called for requests that are answered without reaching the transport, so reading the
    body here takes nothing from it."""
    if int(request.headers.get("content-length") or 0) > MAX_BODY:
        return "mcp"
    try:
        message = orjson.loads(await request.body())
    except (orjson.JSONDecodeError, RuntimeError, ClientDisconnect):
        return "mcp"
    if not isinstance(message, dict) or message.get("method") not in _KNOWN_METHODS:
        return "mcp"
    params = message.get("params")
    if message["method"] == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        if name in TOOL_NAMES:
            return str(name)
    return str(message["method"])


def http_caller(ctx: Context, operation: str) -> Caller:
    """The key ``KeyAuth`` verified for this HTTP request, as the principal it verified (so the
    tool call does not read it again), and the request's facts."""
    token = get_access_token()
    secret = token.token if token is not None else None
    request = ctx.request_context.request
    if not isinstance(request, Request):  # pragma: no cover - the HTTP transport attaches it
        started = time.perf_counter()
        call = CallContext("mcp", operation, "POST", "/mcp", None, None, new_id("req"), started)
        return Caller(secret=secret, call=call)
    principal = request.scope.get("state", {}).get(_PRINCIPAL)
    return Caller(secret=secret, call=call_context(request, operation, "mcp"), principal=principal)


def http_permission(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The permission of the key ``KeyAuth`` verified for this HTTP request (None: none)."""
    request = ctx.request
    if not isinstance(request, Request):  # pragma: no cover - the HTTP transport attaches it
        return None
    principal = request.scope.get("state", {}).get(_PRINCIPAL)
    return principal.permission if isinstance(principal, Principal) else None


__all__ = ["KeyAuth", "http_caller", "http_permission", "origin_of"]
