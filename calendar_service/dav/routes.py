"""CalDAV over HTTP: ``/.well-known/caldav`` and everything under ``/caldav/``.

Each request signs in with HTTP Basic (the owner's email and an app password:
``caldav.access``) in the operation's own transaction (``access.signed_in``; one that brings a
body larger than ``_PARSE_INLINE`` is let in by a sign-in first, before its body is read), then
runs its operation
(``operations.CALDAV_*``) through ``gateway.perform`` like any REST call: the key's
permission and calendar scope, its rate budget and its call history (transport ``caldav``).
What a request brings that cannot be taken (too large, not XML, not iCalendar, ``Depth:
infinity``) is refused once the key is known, so that the refusal is in its history. XML
bodies are parsed, and iCalendar read, off the event loop when they are large. Header values
are fixed texts or digests: never a caller's or a calendar's text, which goes in the
``DAV:error`` body only.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Awaitable, Callable
from typing import Any
from xml.etree.ElementTree import Element

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import Receive, Scope, Send

from calendar_service.access.keys import Principal
from calendar_service.asgi.context import (
    Services,
    call_context,
    read_body,
    service_key,
    services,
    session_secret,
)
from calendar_service.calendar import calendar_edits as calendar_changes
from calendar_service.dav import asking, documents, multistatus
from calendar_service.interop.caldav import access, objects
from calendar_service.interop.caldav.names import c, d
from calendar_service.interop.caldav.resources import ROOT, parse_path
from calendar_service.interop.ical.feeds import etag_matches
from calendar_service.interop.ical.reading import ReadFile, read_file
from calendar_service.operations import catalog as operations
from calendar_service.operations.catalog import Operation
from calendar_service.operations.gateway import Arguments, Outcome, finished, perform, permits
from calendar_service.platform import service_secrets
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import (
    AuthError,
    CalendarError,
    DavNotAllowed,
    DavRefused,
    DuplicateHeader,
    InsufficientScope,
    MissingKey,
    PayloadTooLarge,
    RateLimited,
    SignInLocked,
    WrongAppPassword,
)
from calendar_service.platform.timeutil import utcnow

WELL_KNOWN = "/.well-known/caldav"
DAV_CLASSES = "1, 3, calendar-access"
ALLOW = "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, REPORT, MKCALENDAR"
XML_MEDIA_TYPE = "application/xml; charset=utf-8"
ICS_MEDIA_TYPE = "text/calendar"
_PARSE_INLINE = 16 * 1024  # bodies up to this are parsed on the loop (microseconds)


async def _pepper(request: Request, svc: Services) -> str:
    """The session-signing secret, which keys the sign-in throttle's buckets (as the
    settings pages' sign-in does), read once per app."""
    state = request.app.state
    pepper: str | None = getattr(state, "caldav_pepper", None)
    if pepper is None:
        pepper = state.caldav_pepper = await session_secret(svc)
    return pepper


def _credentials(request: Request) -> tuple[str, str]:
    """The email and secret of ``Authorization: Basic``."""
    values = [v for k, v in request.scope["headers"] if k == b"authorization"]
    if len(values) > 1:
        raise DuplicateHeader("Authorization", len(values))
    if not values or not values[0].strip():
        raise MissingKey()
    scheme, _, encoded = values[0].decode("latin-1").strip().partition(" ")
    if scheme.lower() != "basic":
        raise WrongAppPassword()
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise WrongAppPassword() from None
    email, sep, secret = decoded.partition(":")
    if not sep or not email.strip() or not secret:
        raise WrongAppPassword()
    return email.strip(), secret


def _client_addr(request: Request) -> str | None:
    client = request.scope.get("client")
    return client[0] if client else None


async def _asked(request: Request, svc: Services) -> access.BasicSignIn:
    email, secret = _credentials(request)
    pepper = await _pepper(request, svc)
    return access.BasicSignIn(email, secret, pepper, _client_addr(request))


async def _sign_in(request: Request, svc: Services) -> Principal:
    asked = await _asked(request, svc)
    return await svc.db.run_connected(access.sign_in, asked=asked, now=utcnow())


async def _perform(
    request: Request,
    svc: Services,
    op: Operation,
    args: Arguments,
    *,
    refused: CalendarError | None = None,
    then: Callable[[Any], Any] | None = None,
) -> Outcome[Any]:
    """``op`` through ``gateway.perform``, signed in within the same transaction
    (``access.signed_in``), or the long way (``_sign_in``) when that lets the request not in.
    A request let in before (a large body is read only once signed in) is signed in again
    here: the key's state, its permission and the write are one transaction, so a key revoked
    while its body was read writes nothing. ``then``: the front's step after the work the
    operation left for later (a ``Later``), on the same thread."""
    options: dict[str, Any] = {
        "ctx": call_context(request, op.name, "caldav"),
        "op": op,
        "args": args,
        "refused": refused,
        "limiter": svc.limiter,
        "proposal_ttl": svc.config.proposal_ttl,
    }
    asked = await _asked(request, svc)
    try:
        outcome: Outcome[Any] = await svc.db.run_grouped(
            access.signed_in,
            asked=asked,
            now=utcnow(),
            then=functools.partial(_performed, options=options),
        )
        return await _finished(outcome, then)
    except access.SignInNeeded:
        principal = await _sign_in(request, svc)  # refused there, or let in after all
    outcome = await svc.db.run_grouped(_performed, principal, options=options)
    return await _finished(outcome, then)


async def _finished(outcome: Outcome[Any], then: Callable[[Any], Any] | None) -> Outcome[Any]:
    if then is not None and isinstance(outcome.value, Later):
        outcome.value = outcome.value.then(then)
    return await finished(outcome)


def _performed(conn: Any, principal: Principal, *, options: dict[str, Any]) -> Outcome[Any]:
    return perform(conn, principal=principal, **options)


def _headers(outcome: Outcome[Any], **more: str) -> dict[str, str]:
    headers = {"Cache-Control": "no-store"}
    if outcome.rate is not None:
        headers.update((k.decode(), v.decode()) for k, v in outcome.rate.raw_headers())
    headers.update(more)
    return headers


async def _xml_body(request: Request) -> tuple[Element | None, CalendarError | None]:
    """The request's XML document, or why it is refused (recorded with the key)."""
    try:
        raw = await read_body(request.receive, limit=documents.MAX_BODY)
    except PayloadTooLarge:
        return None, PayloadTooLarge(
            f"The XML body is larger than {documents.MAX_BODY // 1024} KiB: ask for less."
        )
    try:
        if len(raw) > _PARSE_INLINE:
            return await run_in_threadpool(documents.parse, raw), None
        return documents.parse(raw), None
    except CalendarError as exc:
        return None, exc


def _reading(
    read: tuple[Element | None, CalendarError | None], asks: Callable[[Element | None], Any]
) -> dict[str, Any]:
    """The core's ``asked`` and ``problem`` arguments: what the document ``read`` asks, read
    by ``asks`` (``asking``), or why it cannot be answered. A body that could not be read
    at all is refused before (the ``refused`` of ``gateway.perform``)."""
    body, refused = read
    if refused is not None:
        return {"asked": None, "problem": None}
    try:
        return {"asked": asks(body), "problem": None}
    except CalendarError as exc:
        return {"asked": None, "problem": exc}


async def _multistatus(
    request: Request,
    svc: Services,
    principal: Principal | None,
    op: Operation,
    read: tuple[Element | None, CalendarError | None],
    asks: Callable[[Element | None], Any],
    **args: Any,
) -> Response:
    """``op`` on the request's path with what its XML body asks (``read``: the body, or why
    it is refused; ``asks`` reads it), answered with the core's multistatus, written here
    (``multistatus``)."""
    args = {"path": request.scope["path"], **_reading(read, asks), **args}
    outcome = await _perform(request, svc, op, args, refused=read[1], then=multistatus.body)
    written = outcome.value
    if not isinstance(written, bytes):  # answered within the transaction: written here
        # at once when every response is written already (``Kept``), else off the loop
        written = multistatus.written(outcome.value, kept_only=True)
        if written is None:
            written = await run_in_threadpool(multistatus.body, outcome.value)
    return Response(written, 207, _headers(outcome), media_type=XML_MEDIA_TYPE)


async def propfind(request: Request, svc: Services, principal: Principal | None) -> Response:
    body, refused = await _xml_body(request)
    depth = (request.headers.get("depth") or "infinity").strip().lower()
    if depth not in ("0", "1") and refused is None:
        refused = DavRefused(
            "PROPFIND takes Depth 0 or 1 (infinity is refused, as RFC 4918 allows).",
            d("propfind-finite-depth"),
        )
    token_key = await service_key(request, service_secrets.page_token_key)
    return await _multistatus(
        request,
        svc,
        principal,
        operations.CALDAV_PROPFIND,
        (body, refused),
        asking.propfind,
        depth=depth,
        token_key=token_key,
    )


async def proppatch(request: Request, svc: Services, principal: Principal | None) -> Response:
    read = await _xml_body(request)
    return await _multistatus(
        request, svc, principal, operations.CALDAV_PROPPATCH, read, asking.proppatch
    )


async def report(request: Request, svc: Services, principal: Principal | None) -> Response:
    read = await _xml_body(request)
    token_key = await service_key(request, service_secrets.page_token_key)
    return await _multistatus(
        request, svc, principal, operations.CALDAV_REPORT, read, asking.report, token_key=token_key
    )


async def get(request: Request, svc: Services, principal: Principal | None) -> Response:
    outcome = await _perform(request, svc, operations.CALDAV_GET, {"path": request.scope["path"]})
    obj, text = outcome.value
    headers = _headers(outcome, ETag=obj.etag)
    headers["Last-Modified"] = obj.updated.strftime("%a, %d %b %Y %H:%M:%S GMT")
    if etag_matches(request.headers.get("if-none-match"), obj.etag):
        return Response(None, 304, headers)
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(text))
        return Response(None, 200, headers, media_type="text/calendar; charset=utf-8")
    return Response(text, 200, headers, media_type="text/calendar; charset=utf-8")


async def put(request: Request, svc: Services, principal: Principal | None) -> Response:
    """A calendar object written (``writing.put_object``) in the request's one transaction:
    a body up to ``_PARSE_INLINE`` comes before the sign-in, which is then made in that
    transaction, and is read as iCalendar there once the key may write (microseconds: on
    the loop); a larger one is read off the loop once signed in, for a key that may write."""
    path = request.scope["path"]
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    # What the body cannot be is said once the preconditions hold (``writing.put_object``).
    problem: CalendarError | None = None
    raw = b""
    try:
        raw = await read_body(request.receive, limit=objects.MAX_OBJECT)
    except PayloadTooLarge:
        problem = PayloadTooLarge(
            f"The calendar object is larger than {objects.MAX_OBJECT // 1024} KiB."
        )
    if problem is None and media != ICS_MEDIA_TYPE:
        problem = DavRefused(
            f"Send the object as '{ICS_MEDIA_TYPE}'.", c("supported-calendar-data")
        )
    if principal is None and len(raw) > _PARSE_INLINE:  # more than its Content-Length said
        principal = await _sign_in(request, svc)
    parsed: ReadFile | None = None
    if problem is None and principal is not None and permits(principal, operations.CALDAV_PUT):
        try:
            parsed = await run_in_threadpool(read_file, raw)
        except CalendarError as exc:
            problem = DavRefused(exc.message, c("valid-calendar-data"))
    if_match = request.headers.get("if-match")
    if_none_match = request.headers.get("if-none-match")

    def args() -> dict[str, Any]:
        # Called by ``gateway.perform`` once the key may write: a small body is read here.
        data, refused = parsed, problem
        if refused is None and data is None:
            try:
                data = read_file(raw)
            except CalendarError as exc:
                refused = DavRefused(exc.message, c("valid-calendar-data"))
        return {
            "path": path,
            "data": data,
            "if_match": if_match,
            "if_none_match": if_none_match,
            "now": utcnow(),
            "problem": refused,
        }

    # Created (201) or replaced (204): the answer of the PUT's one transaction.
    outcome = await _perform(request, svc, operations.CALDAV_PUT, args)
    return Response(None, outcome.status, _headers(outcome))


async def mkcalendar(request: Request, svc: Services, principal: Principal | None) -> Response:
    """RFC 4791 §5.3.1: a calendar at the path asked (``caldav.writing.make_calendar``)."""
    read = await _xml_body(request)
    asked = _reading(read, asking.mkcalendar)

    def args() -> dict[str, Any]:
        return {"path": request.scope["path"], **asked, "now": utcnow()}

    outcome = await _perform(request, svc, operations.CALDAV_MKCALENDAR, args, refused=read[1])
    return Response(None, outcome.status, _headers(outcome))


async def _delete_calendar(
    request: Request, svc: Services, principal: Principal | None
) -> Response:
    """A calendar's DELETE: its first step through ``gateway.perform`` (the key's checks,
    its history), then the others, each a transaction of its own, as the settings pages
    delete a calendar."""
    args = {"path": request.scope["path"], "now": utcnow()}
    outcome = await _perform(request, svc, operations.CALDAV_DELETE_CALENDAR, args)
    done = outcome.value["done"]
    while not done:
        step = await svc.db.run(
            calendar_changes.delete_calendar_step,
            user_id=outcome.principal.user_id,
            calendar_id=outcome.value["calendarId"],
            now=utcnow(),
        )
        done = step["done"]
    return Response(None, outcome.status, _headers(outcome))


async def delete(request: Request, svc: Services, principal: Principal | None) -> Response:
    path = request.scope["path"]
    try:
        kind = parse_path(path)[0]
    except CalendarError:  # answered by the operation, once signed in
        kind = None
    if kind == "calendar":
        return await _delete_calendar(request, svc, principal)
    if_match = request.headers.get("if-match")
    if_none_match = request.headers.get("if-none-match")

    def args() -> dict[str, Any]:
        return {"path": path, "if_match": if_match, "if_none_match": if_none_match, "now": utcnow()}

    outcome = await _perform(request, svc, operations.CALDAV_DELETE, args)
    return Response(None, outcome.status, _headers(outcome))


Handler = Callable[[Request, Services, Principal | None], Awaitable[Response]]
_HANDLERS: dict[str, Handler] = {
    "PROPFIND": propfind,
    "PROPPATCH": proppatch,
    "REPORT": report,
    "GET": get,
    "HEAD": get,
    "PUT": put,
    "DELETE": delete,
    "MKCALENDAR": mkcalendar,
}


def _error(exc: CalendarError, svc: Services) -> Response:
    """A ``CalendarError`` as CalDAV clients read it: its status, a ``DAV:error`` body with
    the precondition's element (if any) and the message; fixed header values only."""
    headers = {"Cache-Control": "no-store"}
    status = exc.status
    condition = href = None
    if isinstance(exc, InsufficientScope):
        status, condition = 403, d("need-privileges")
    elif isinstance(exc, AuthError):
        realm = "".join(ch for ch in svc.config.service_name if ch.isalnum() or ch in " -_.")
        headers["WWW-Authenticate"] = f'Basic realm="{realm}", charset="UTF-8"'
    elif isinstance(exc, (RateLimited, SignInLocked)):
        headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, DavRefused):
        condition, href = exc.condition, exc.href
        if isinstance(exc, DavNotAllowed):
            headers["Allow"] = ALLOW
    body = documents.error_body(condition, exc.message, href, exc.code)
    return Response(body, status, headers, media_type=XML_MEDIA_TYPE)


class CalDav:
    """The ASGI app mounted at ``/caldav``: OPTIONS answered without a key (what a client
    needs to know it is CalDAV), every other method signed in first."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        method = request.method
        if method == "OPTIONS":
            return Response(None, 200, {"DAV": DAV_CLASSES, "Allow": ALLOW})
        handler = _HANDLERS.get(method)
        if handler is None:
            return Response(None, 405, {"Allow": ALLOW, "DAV": DAV_CLASSES})
        svc = services(request)
        try:
            _credentials(request)  # no credentials, or not Basic: 401 before the body is read
            # A small body is read and parsed before the sign-in, which is then made in the
            # request's transaction; a larger one (or of no stated length) only once signed in.
            principal = None
            length = request.headers.get("content-length")
            small = "transfer-encoding" not in request.headers and (
                length is None or (length.isdigit() and int(length) <= _PARSE_INLINE)
            )
            if not small:
                principal = await _sign_in(request, svc)
            return await handler(request, svc, principal)
        except ClientDisconnect:
            raise
        except CalendarError as exc:
            return _error(exc, svc)


async def well_known(request: Request) -> Response:
    """RFC 6764 §5: the context path, for clients given only the service's address (and a
    PROPFIND of the root, which some ask instead)."""
    base = services(request).config.base_url.rstrip("/")
    return Response(None, 301, {"Location": base + ROOT, "Cache-Control": "no-store"})


def routes() -> list[BaseRoute]:
    methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PROPFIND", "REPORT"]
    return [
        Route(WELL_KNOWN, well_known, methods=methods),
        Route(WELL_KNOWN + "/", well_known, methods=methods),
        # Apps given only the host name ask its root for the principal (PROPFIND /).
        Route("/", well_known, methods=["PROPFIND"]),
        Mount(ROOT.rstrip("/"), app=CalDav()),
    ]


__all__ = ["ALLOW", "DAV_CLASSES", "WELL_KNOWN", "CalDav", "routes"]
