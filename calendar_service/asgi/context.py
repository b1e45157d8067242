"""Per-request plumbing: request ids, the bearer token, client facts, body limits."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NoReturn
from urllib.parse import unquote

from starlette.requests import ClientDisconnect, Request
from starlette.types import Message, Receive, Scope, Send

from calendar_service.access import owner_sessions
from calendar_service.access.ratelimit import RateLimiter
from calendar_service.asgi.middleware import HttpMiddleware
from calendar_service.governance.undo_runner import UndoJobs
from calendar_service.operations.gateway import CallContext, refuse
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.errors import (
    CalendarError,
    DuplicateHeader,
    MalformedKey,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from calendar_service.platform.ids import new_id
from calendar_service.platform.timeutil import utcnow

MAX_BODY = 1024 * 1024
KEY_PARAMETERS = ("api_key", "access_token", "key", "token", "apikey", "api-key")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


@dataclass(slots=True)
class Services:
    """What the fronts need, built once by ``create_app``."""

    config: Config
    db: Database
    limiter: RateLimiter
    # CalDAV discovery for the settings pages (``webhooks.connections.discover_calendars``,
    # given by ``create_app``): ``(url, username, password) -> [(collection URL, name)]``.
    discover_caldav: Callable[[str, str, str], Awaitable[list[tuple[str, str]]]] | None = None
    # This process's runner of undo jobs (the settings pages' *Undo work*), run by the lifespan.
    undo_jobs: UndoJobs = field(init=False)
    # Scheduling links' public page and API: a budget per link and per client address.
    guest_limiter: RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.undo_jobs = UndoJobs(self.db)
        self.guest_limiter = RateLimiter(*self.config.booking_rate_limit)


def services(request: Request) -> Services:
    # By item, not attribute: Starlette's State answers attributes through __getattr__, after
    # the ordinary lookup has failed (an AttributeError formatted and dropped, each read).
    services: Services = request.app.state["services"]
    return services


async def service_key(request: Request, make: Callable[..., bytes]) -> bytes:
    """A key the service keeps for itself (``make``: ``service_secrets.page_token_key`` or
    ``reply_link_key``), read (or made) once per app and kept on its state by ``make``'s
    name."""
    state = request.app.state
    try:
        key: bytes = state[make.__name__]  # by item: see ``services``
    except KeyError:
        key = await services(request).db.run(make, now=utcnow())
        state[make.__name__] = key
    return key


async def session_secret(svc: Services) -> str:
    """``CALENDAR_SESSION_SECRET``, or the one generated once and kept in the database
    (``owner_sessions.session_signing_secret``): what signs the settings pages' sessions and
    keys the sign-in throttle's buckets. Callers keep it once read."""
    secret = svc.config.session_secret
    if not secret:
        secret = await svc.db.run(owner_sessions.session_signing_secret, now=utcnow())
    return secret


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
                if NOSNIFF[0] not in dict(headers):  # built in C: no Python loop per header
                    headers.append(NOSNIFF)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)


def request_id(request: Request) -> str:
    return str(request.scope.get("state", {}).get("request_id", ""))


class Query:
    """A request's query parameters, read as Starlette's ``request.query_params`` reads them
    (``urllib.parse.parse_qsl`` keeping blank values: ``+`` is a space, ``%XX`` escapes are
    UTF-8), without building its ``QueryParams``: that cost the list some 75,000 instructions
    a request (its constructor probes its argument with ``hasattr``, each a caught
    ``AttributeError``, and copies the pairs twice); this, a fifth of it, most of which is
    ``urllib.parse.unquote`` for the values that have escapes.

    ``items``: every (name, value) in order; ``last``: each name's last value (what
    ``QueryParams.get`` gives)."""

    __slots__ = ("items", "last")

    def __init__(self, raw: bytes) -> None:
        items: list[tuple[str, str]] = []
        if raw:
            for part in raw.decode("latin-1").split("&"):
                if part:
                    name, _, value = part.partition("=")
                    items.append((_unquoted(name), _unquoted(value)))
        self.items = items
        self.last = dict(items)

    def getlist(self, name: str) -> list[str]:
        """Every value of ``name``, in order."""
        return [value for key, value in self.items if key == name]


def _unquoted(text: str) -> str:
    if "+" in text:
        text = text.replace("+", " ")
    return unquote(text) if "%" in text else text


_KEY_NAMES = frozenset(KEY_PARAMETERS)


def key_in_url(request: Request, query: Query | None = None) -> tuple[str, str] | None:
    """The (parameter, value) of a credential put in the query string, if any (``query``:
    the request's, if read already)."""
    if not request.scope["query_string"]:
        return None
    params = (query or Query(request.scope["query_string"])).last
    if _KEY_NAMES.isdisjoint(params):
        return None
    name = next(name for name in KEY_PARAMETERS if name in params)
    return name, params[name]


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of the header ``name`` (lower case, as ASGI gives names), as
    Starlette's ``request.headers.get`` reads it, without building its ``Headers``."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def bearer_token(request: Request) -> str | None:
    """The key of ``Authorization: Bearer <key>``; ``None`` without the header.

    Two ``Authorization`` headers are refused (400 ``duplicate_header``) rather than one of
    them picked: a proxy and a client that disagree about the credential must not be settled
    by header order."""
    values = [v.decode("latin-1") for k, v in request.scope["headers"] if k == b"authorization"]
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
    # From the ASGI scope: not request.url (a parse), request.client or request.headers
    # (objects built for one value each).
    scope = request.scope
    client = scope.get("client")
    state = scope.get("state", {})
    return CallContext(
        transport=transport,
        operation=operation,
        method=scope["method"],
        path=scope["path"],
        client_addr=client[0] if client else None,
        user_agent=header(scope, b"user-agent"),
        request_id=state.get("request_id"),
        started=state["started"] if "started" in state else time.perf_counter(),
    )


async def read_json_body(request: Request) -> bytes:
    """The raw body, refusing non-JSON media types and anything over 1 MiB.

    A client that hangs up before the whole body arrived raises Starlette's
    ``ClientDisconnect``: nothing is done or recorded for it (``web.boundary``)."""
    content_type = header(request.scope, b"content-type") or ""
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(
            f"Send the body as JSON with 'Content-Type: application/json' (got {media!r})."
        )
    length = header(request.scope, b"content-length")
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
