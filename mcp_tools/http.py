"""The remote transport: streamable HTTP at ``/mcp``, in the same app and process as REST.

The transport is stateless and answers in JSON (no session, no server-sent events): every request
stands alone, so any server process behind a load balancer can answer it, which is how the
service scales past one machine; and nothing outlives a request for a revoked key to keep using.
The tools ask nothing of the client mid-call, so they lose nothing by it. The host app's lifespan
must enter ``McpHttp.run()`` (Starlette does not run a mounted app's lifespan).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from calendar_service import __version__
from calendar_service.asgi.context import MAX_BODY, Services, read_body
from calendar_service.asgi.middleware import HttpMiddleware
from calendar_service.asgi.responses import error_response
from calendar_service.platform.errors import PayloadTooLarge
from calendar_service.platform.logs import root_logger_kept
from mcp_tools.auth import KeyAuth, http_caller, http_permission, origin_of
from mcp_tools.server import Backend, build_server
from mcp_tools.strict_json import refused_duplicate_keys

MCP_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


@dataclass(frozen=True, slots=True)
class McpHttp:
    endpoint: ASGIApp  # an ASGI app instance: as a Route endpoint it takes every method
    session_manager: StreamableHTTPSessionManager

    def run(self) -> AbstractAsyncContextManager[None]:
        """Enter once, in the host app's lifespan."""
        return self.session_manager.run()


class WholeBody(HttpMiddleware):
    """Reads the request's body (at most 1 MiB) before the SDK's transport sees it.

    A client that hangs up halfway raises ``ClientDisconnect`` here, in our code, and the app's
    boundary (``calendar_service.asgi.boundary``) lets it go with a debug line; inside the SDK
    it was logged as an error with its traceback, once per aborted request. Too large a body is
    the REST API's 413 (problem details); a POST whose JSON repeats a key is refused as a parse
    error (``strict_json``), since the SDK's decoder would keep the last one."""

    def __init__(self, app: ASGIApp, *, realm: str) -> None:
        super().__init__(app)
        self.realm = realm

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            length = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
            if length.isdigit() and int(length) > MAX_BODY:
                raise PayloadTooLarge(f"The body is larger than {MAX_BODY} bytes (1 MiB).")
            body = await read_body(receive)
        except PayloadTooLarge as exc:
            await error_response(exc, realm=self.realm, instance=scope["path"])(
                scope, receive, send
            )
            return
        if scope["method"] == "POST" and await refused_duplicate_keys(body, send):
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()  # after the body: the disconnect, when it comes
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def mcp_http(
    services: Services,
    *,
    extra_origins: Iterable[str] = (),
    oauth_resource: str | None = None,
    resource_metadata: str | None = None,
) -> McpHttp:
    """The ``/mcp`` endpoint for ``services``: key check, then the SDK's transport. With
    ``oauth_resource`` OAuth access tokens for that resource are accepted too."""
    backend = Backend(
        db=services.db,
        limiter=services.limiter,
        caller_of=http_caller,
        permission_of=http_permission,
    )
    with root_logger_kept():  # the SDK would install its rich handler on the root logger
        server = build_server(backend, name=services.config.service_name, version=__version__)
    # Builds the session manager; the Starlette app it returns is not used. Host/Origin checks
    # are KeyAuth's (the SDK's default allows only loopback Host headers, which would refuse
    # every deployment behind a real host name).
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=MAX_BODY,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    origins = [*_loopback_aliases(origin_of(services.config.base_url)), *extra_origins]
    transport = WholeBody(StreamableHTTPASGIApp(manager), realm=services.config.service_name)
    endpoint = KeyAuth(
        transport,
        services=services,
        allowed_origins=origins,
        oauth_resource=oauth_resource,
        resource_metadata=resource_metadata,
    )
    return McpHttp(endpoint=endpoint, session_manager=manager)


def _loopback_aliases(origin: str) -> list[str]:
    """``origin``, and for a loopback address its other loopback spellings (same scheme and
    port): a browser on this machine may name it http://localhost:PORT or http://127.0.0.1:PORT."""
    parts = urlsplit(origin)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    if host not in _LOOPBACK:
        return [origin]
    port = f":{parts.port}" if parts.port else ""
    return [origin, *(f"{parts.scheme}://{name}{port}" for name in _LOOPBACK if name != host)]
