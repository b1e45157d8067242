"""Per-request plumbing: request ids, the bearer token, client facts, body limits."""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from typing import NoReturn

from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

from calendar_service.asgi.middleware import HttpMiddleware
from calendar_service.config import Config
from calendar_service.db import Database
from calendar_service.errors import (
    CalendarError,
    DuplicateHeader,
    MalformedKey,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from calendar_service.gateway import CallContext, refuse
from calendar_service.ids import new_id
from calendar_service.ratelimit import RateLimiter

MAX_BODY = 1024 * 1024
KEY_PARAMETERS = ("api_key", "access_token", "key", "token", "apikey", "api-key")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


@dataclass(slots=True)
class Services:
    """What the fronts need, built once by ``create_app``."""

    config: Config
    db: Database
    limiter: RateLimiter


def services(request: Request) -> Services:
    return request.app.state.services


NOSNIFF = (b"x-content-type-options", b"nosniff")


class RequestIdMiddleware(HttpMiddleware):
    """Give every request an id (the caller's ``Request-Id`` if sane) and echo it back.

    Every answer also says ``X-Content-Type-Options: nosniff``: a browser must take a JSON
    body (which may hold a caller's text) for what its ``Content-Type`` says, never as HTML."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        incoming = None
        for name, value in scope["headers"]:
            if name in (b"request-id", b"x-request-id"):
                incoming = value.decode("latin-1")
                break
        request_id = incoming if incoming and _REQUEST_ID.match(incoming) else new_id("req")
        scope.setdefault("state", {})["request_id"] = request_id
        scope["state"]["started"] = time.perf_counter()
        raw_id = request_id.encode()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"request-id", raw_id))
                if not any(name == NOSNIFF[0] for name, _ in headers):
                    headers.append(NOSNIFF)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)


def request_id(request: Request) -> str:
    return str(request.scope.get("state", {}).get("request_id", ""))


def key_in_url(request: Request) -> tuple[str, str] | None:
    """The (parameter, value) of a credential put in the query string, if any."""
    if not request.scope["query_string"]:
        return None
    params = request.query_params
    if params:
        for name in KEY_PARAMETERS:
            if name in params:
                return name, params[name]
    return None


def bearer_token(request: Request) -> str | None:
    """The key of ``Authorization: Bearer <key>``; ``None`` without the header.

    Two ``Authorization`` headers are refused (400 ``duplicate_header``) rather than one of
    them picked: a proxy and a client that disagree about the credential must not be settled
    by header order."""
    values = request.headers.getlist("authorization")
    if not values:
        return None
    if len(values) > 1:
        raise DuplicateHeader("Authorization", len(values))
    header = values[0]
    if not header.strip():
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise MalformedKey("send it as 'Authorization: Bearer <API_KEY>'")
    return token.strip()


def call_context(request: Request, operation: str, transport: str = "rest") -> CallContext:
    client = request.client
    state = request.scope.get("state", {})
    return CallContext(
        transport=transport,
        operation=operation,
        method=request.method,
        path=request.scope["path"],  # not request.url: building the URL costs a parse
        client_addr=client.host if client else None,
        user_agent=request.headers.get("user-agent"),
        request_id=state.get("request_id"),
        started=state.get("started", time.perf_counter()),
    )


async def read_json_body(request: Request) -> bytes:
    """The raw body, refusing non-JSON media types and anything over 1 MiB.

    A client that hangs up before the whole body arrived raises Starlette's
    ``ClientDisconnect``: nothing is done or recorded for it (``web.boundary``)."""
    content_type = request.headers.get("content-type", "")
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(
            f"Send the body as JSON with 'Content-Type: application/json' (got {media!r})."
        )
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY:
        raise PayloadTooLarge(f"The body is larger than {MAX_BODY} bytes (1 MiB).")
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise PayloadTooLarge(f"The body is larger than {MAX_BODY} bytes (1 MiB).")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_body(receive: Receive, *, limit: int = MAX_BODY) -> bytes:
    """The whole body of an ASGI request, read from ``receive``: ``PayloadTooLarge`` past
    ``limit`` bytes, ``ClientDisconnect`` if the client hangs up first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            raise ClientDisconnect()
        body.extend(message.get("body", b""))
        if len(body) > limit:
            raise PayloadTooLarge(f"The body is larger than {limit} bytes (1 MiB).")
        if not message.get("more_body", False):
            return bytes(body)


async def record_refusal(
    request: Request,
    svc: Services,
    refusal: CalendarError,
    *,
    operation: str,
    transport: str,
    fallback_secret: str | None = None,
) -> NoReturn:
    """Record ``refusal`` in the history of the key the request presented, if that key exists
    (in the header, else ``fallback_secret``, e.g. one sent in the URL); then raise it.

    Used for requests refused before they reach an operation (a key in the URL, a revoked or
    expired key at the MCP transport), so the owner still sees them."""
    try:
        secret = bearer_token(request) or fallback_secret
    except CalendarError:
        secret = fallback_secret
    with contextlib.suppress(CalendarError):
        ctx = call_context(request, operation, transport)
        await svc.db.run_connected(refuse, secret=secret, ctx=ctx, refusal=refusal)
    raise refusal
