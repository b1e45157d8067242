"""The settings pages' plumbing: templates, cookies, the signed-in owner, CSRF, headers, errors.

Every page handler is wrapped by ``owner_page``: no session, no page (a redirect to sign-in);
and every POST must carry the session's CSRF synchronizer token. Handlers then call core
functions scoped by ``owner.user_id`` first, so another owner's id in a URL is a 404.
``FormPage`` (a list above a form that adds one), ``owner_view`` (one object the path names)
and ``owner_action`` (a change to it, then back to its list) are the handlers pages share.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from itsdangerous import BadSignature, TimestampSigner
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from calendar_service.access import owner_sessions
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.asgi.boundary import ErrorBoundary
from calendar_service.asgi.context import Services, request_id, session_secret
from calendar_service.asgi.methods import allow_header
from calendar_service.asgi.middleware import HttpMiddleware
from calendar_service.platform.errors import CalendarError, NotFound, ValidationFailed
from calendar_service.platform.inputs import NUL, nul_errors
from calendar_service.platform.timeutil import utcnow

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "calendar_session"
SIGN_IN_COOKIE = "calendar_sign_in"  # the CSRF token of the sign-in form, before a session
MAX_FORM = 64 * 1024

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

_CSP = b"content-security-policy"
_NEXT = re.compile(r"^/[A-Za-z0-9_\-./]*$")


# ---------------------------------------------------------------------------------------------
# The sub-app's state


@dataclass(slots=True)
class Account:
    """What every settings handler needs, kept on the sub-app's state."""

    services: Services
    env: Environment
    _secret: str | None = field(default=None)

    async def secret(self) -> str:
        """``CALENDAR_SESSION_SECRET``, or the one generated once and kept in the database."""
        if self._secret is None:
            self._secret = await session_secret(self.services)
        return self._secret

    async def signer(self, purpose: str) -> TimestampSigner:
        return TimestampSigner(await self.secret(), salt=f"calendar-service.settings.{purpose}")


def account(request: Request) -> Account:
    return request.app.state.account


def root(request: Request) -> str:
    """Where the settings pages are mounted (``/settings``)."""
    return str(request.scope.get("root_path", ""))


def is_https(request: Request) -> bool:
    base = account(request).services.config.base_url
    return request.url.scheme == "https" or base.startswith("https://")


# ---------------------------------------------------------------------------------------------
# Templates


def _utc(value: str | datetime | None) -> str:
    """``2026-03-02 09:30 UTC`` from an RFC 3339 string or an aware datetime."""
    if value is None:
        return "—"
    moment = (
        datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    )
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _local(value: str) -> str:
    """``Mon 2 Mar 2026, 09:30`` in the offset the value carries (the calendar's zone)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return f"{moment:%a} {moment.day} {moment:%b %Y, %H:%M}"


def _day(value: str) -> str:
    """``Mon 2 Mar 2026`` from a date or a date-time."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return f"{moment:%a} {moment.day} {moment:%b %Y}"


def _clock(value: str) -> str:
    return f"{datetime.fromisoformat(value.replace('Z', '+00:00')):%H:%M}"


def make_env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["utc"] = _utc
    env.filters["local"] = _local
    env.filters["day"] = _day
    env.filters["clock"] = _clock
    return env


def render(
    request: Request,
    template: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
    owner: OwnerSessionInfo | None = None,
) -> HTMLResponse:
    owner = owner or getattr(request.state, "owner", None)
    values: dict[str, Any] = {
        "root": root(request),
        "owner": owner,
        "csrf_token": owner.csrf_token if owner else "",
        "section": "",
        "notice": None,
        "request_id": request_id(request),
        "base_url": account(request).services.config.base_url,
    }
    values.update(context or {})
    html = account(request).env.get_template(template).render(**values)
    return HTMLResponse(html, status_code=status_code)


def see_other(request: Request, path: str, **params: str) -> RedirectResponse:
    """A 303 to a settings path (after a POST: the browser then GETs it)."""
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items() if v)
    return RedirectResponse(root(request) + path + (f"?{query}" if query else ""), 303)


# ---------------------------------------------------------------------------------------------
# Forms


class CsrfRefused(Exception):
    """A POST without this session's token: a forged or stale form."""


async def form(request: Request) -> FormData:
    """The url-encoded form body (at most 64 KiB), parsed once per request.

    A client that hangs up before the whole body arrived raises Starlette's
    ``ClientDisconnect``: nothing is done for it (``web.boundary``)."""
    cached = getattr(request.state, "form", None)
    if cached is not None:
        return cached
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise HTTPException(415, "Send the form as application/x-www-form-urlencoded.")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_FORM:
        raise HTTPException(413, "The form is too large.")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_FORM:
            raise HTTPException(413, "The form is too large.")
    pairs: list[tuple[str, str | UploadFile]] = list(
        parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
    )
    data = FormData(pairs)
    if b"%00" in body or b"\x00" in body:
        refused = nul_errors(data.multi_items())
        if refused:  # no field can hold one, nor can PostgreSQL (see ``inputs``)
            raise ValidationFailed(refused)
    request.state.form = data
    return data


def refuse_nul_in_url(request: Request) -> None:
    """400 for a path id or query parameter with NUL in it: no such id can exist, and
    PostgreSQL could not be asked about it (see ``inputs``)."""
    if b"%00" in request.scope["query_string"] or NUL in request.scope["path"]:
        refused = nul_errors(request.path_params) + nul_errors(request.query_params.multi_items())
        if refused:
            raise ValidationFailed(refused)


def field_errors(exc: ValidationFailed, names: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{field: message}`` for showing each error beside its input; ``names`` renames the
    core's field names (as in the API) to the form's, where they differ."""
    found: dict[str, str] = {}
    for item in exc.errors:
        found.setdefault(item["field"], item["message"])
    return {names.get(k, k): v for k, v in found.items()} if names else found


@dataclass(frozen=True, slots=True)
class FormPage:
    """A page that lists what the owner has, above a form that adds one (keys, calendars).

    A GET shows the form blank; a form the core refused shows the page again (400) with what
    was typed and each error beside its input."""

    template: str
    section: str
    load: Callable[..., dict[str, Any]]  # load(conn, *, user_id, now): what the page lists
    blank: dict[str, str]  # the form's values before anything is typed
    notices: Mapping[str, str]  # ?notice= (after a redirect here) to the sentence shown
    names: Mapping[str, str] = field(default_factory=dict)  # core field name to the form's
    extra: Callable[[], dict[str, Any]] = dict  # what the page shows from outside the database

    async def show(
        self,
        request: Request,
        owner: OwnerSessionInfo,
        *,
        values: dict[str, str] | None = None,
        refused: ValidationFailed | None = None,
        context: dict[str, Any] | None = None,
    ) -> HTMLResponse:
        """``context``: more for the template (a step of a form in two steps)."""
        data = await account(request).services.db.run(
            self.load, user_id=owner.user_id, now=utcnow()
        )
        return render(
            request,
            self.template,
            {
                **data,
                **self.extra(),
                **(context or {}),
                "section": self.section,
                "values": values or self.blank,
                "errors": {} if refused is None else field_errors(refused, self.names),
                "notice": self.notices.get(request.query_params.get("notice", "")),
            },
            status_code=200 if refused is None else 400,
        )

    def route(self, path: str) -> Route:
        """The page's GET at ``path``: what the owner has, above the blank form."""

        async def page(request: Request, owner: OwnerSessionInfo) -> Response:
            return await self.show(request, owner)

        return Route(path, owner_page(page), methods=["GET"], name=f"{self.section}_page")


def tokens_match(expected: str, given: str | None) -> bool:
    return bool(given) and secrets.compare_digest(expected.encode(), str(given).encode())


def cross_site(request: Request) -> bool:
    # Defence in depth beside the token: browsers say when a request comes from another site.
    return request.headers.get("sec-fetch-site", "") == "cross-site"


# ---------------------------------------------------------------------------------------------
# The signed-in owner


async def current_owner(request: Request) -> OwnerSessionInfo | None:
    raw = request.cookies.get(SESSION_COOKIE)
    if not raw:
        return None
    signer = await account(request).signer("session")
    try:
        token = signer.unsign(raw, max_age=int(owner_sessions.SESSION_LIFETIME.total_seconds()))
    except BadSignature:
        return None
    db = account(request).services.db
    return await db.run(owner_sessions.load_session, token=token.decode(), now=utcnow())


def safe_next(request: Request, value: str | None) -> str:
    """A local settings path to return to after sign-in; anything else goes to the keys page."""
    prefix = root(request) + "/"
    if value and value.startswith(prefix) and _NEXT.match(value) and "//" not in value:
        return value
    return prefix + "keys"


def to_sign_in(request: Request) -> RedirectResponse:
    target = root(request) + "/sign-in"
    if request.method == "GET":
        target += "?next=" + quote(request.url.path, safe="/")
    return RedirectResponse(target, 303)


Handler = Callable[[Request, OwnerSessionInfo], Awaitable[Response]]


def owner_page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """Only for a signed-in owner; a POST must also carry the session's CSRF token."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        owner = await current_owner(request)
        if owner is None:
            return to_sign_in(request)
        request.state.owner = owner
        refuse_nul_in_url(request)
        if request.method == "POST":
            data = await form(request)
            if cross_site(request) or not tokens_match(
                owner.csrf_token, _text(data.get("csrf_token"))
            ):
                raise CsrfRefused()
        return await handler(request, owner)

    return endpoint


def owner_view(
    load: Callable[..., Any], *, param: str, template: str, section: str, name: str
) -> Callable[[Request], Awaitable[Response]]:
    """A GET that shows the owner's object the path's ``param`` names: what
    ``load(conn, user_id=…, <param>=…)`` gives (another owner's is a 404), as ``name`` in
    ``template``."""

    async def view(request: Request, owner: OwnerSessionInfo) -> Response:
        found = await account(request).services.db.run(
            load, user_id=owner.user_id, **{param: request.path_params[param]}
        )
        return render(request, template, {"section": section, name: found})

    return owner_page(view)


def owner_action(
    change: Callable[..., Any],
    *,
    param: str | None = None,
    fields: tuple[str, ...] = (),
    back: str,
    notice: str | Callable[[Any], str],
) -> Callable[[Request], Awaitable[Response]]:
    """A POST that applies ``change(conn, user_id=…, <param>=…, <fields>=…, now=…)`` to the
    owner's object the path's ``param`` names (another owner's is a 404), with the form's
    ``fields`` (text, empty when not sent), then goes ``back`` (a settings path, formatted
    with the path's parameters) saying ``notice`` (or what ``notice`` makes of the result):
    revoking a key or a feed, redelivering a webhook, approving a proposal."""

    async def act(request: Request, owner: OwnerSessionInfo) -> Response:
        path = request.path_params
        values = {param: path[param]} if param is not None else {}
        if fields:
            data = await form(request)
            values.update({name: str(data.get(name) or "") for name in fields})
        done = await account(request).services.db.run(
            change, user_id=owner.user_id, now=utcnow(), **values
        )
        said = notice(done) if callable(notice) else notice
        return see_other(request, back.format(**path), notice=said)

    return owner_page(act)


def owner_get(path: str, load: Callable[..., Any], *, template: str, section: str) -> Route:
    """The GET route of ``path``: ``owner_view`` of the object the path names, shown under
    its name (``{key_id}``: ``key``)."""
    param = _named(path)
    if param is None or not param.endswith("_id"):
        raise ValueError(f"{path} names no object to show")
    name = param.removesuffix("_id")
    view = owner_view(load, param=param, template=template, section=section, name=name)
    return Route(path, view, methods=["GET"])


def owner_post(
    path: str,
    change: Callable[..., Any],
    *,
    fields: tuple[str, ...] = (),
    back: str,
    notice: str | Callable[[Any], str],
) -> Route:
    """The POST route of ``path``: ``owner_action`` on the object the path names, if any."""
    act = owner_action(change, param=_named(path), fields=fields, back=back, notice=notice)
    return Route(path, act, methods=["POST"])


def _named(path: str) -> str | None:
    """The parameter of the one object ``path`` names (``/keys/{key_id}/revoke``: ``key_id``)."""
    names = re.findall(r"{(\w+)}", path)
    if len(names) > 1:
        raise ValueError(f"{path} names more than one object")
    return names[0] if names else None


# ---------------------------------------------------------------------------------------------
# Headers and errors


class SecurityHeaders(HttpMiddleware):
    """CSP allowing nothing from elsewhere, no framing, no referrer; pages are never cached."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        static = scope["path"].startswith(str(scope.get("root_path", "")) + "/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0] != b"cache-control"]
                cache = [h for h in message.get("headers", []) if h[0] == b"cache-control"]
                # A page that set its own CSP (the consent page's form-action) keeps it.
                own_csp = any(h[0] == b"content-security-policy" for h in headers)
                headers.extend(h for h in SECURITY_HEADERS if not own_csp or h[0] != _CSP)
                headers.append((b"cache-control", b"no-cache" if static else b"no-store"))
                if static and cache:
                    headers[-1] = cache[0]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _error_page(
    request: Request, status: int, title: str, message: str, details: list[str] | None = None
) -> HTMLResponse:
    owner = getattr(request.state, "owner", None)
    return render(
        request,
        "error.html",
        {"status": status, "title": title, "message": message, "details": details or []},
        status_code=status,
        owner=owner,
    )


async def calendar_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CalendarError)
    if isinstance(exc, NotFound):
        return _error_page(request, 404, "Not found", "There is nothing of yours at this address.")
    details = [f"{e['field']}: {e['message']}" for e in getattr(exc, "errors", [])]
    return _error_page(request, exc.status, exc.title, exc.message, details)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error_page(request, 404, "Not found", "There is no settings page at this address.")
    page = _error_page(request, exc.status_code, "Request refused", str(exc.detail))
    if exc.status_code == 405:
        page.headers["Allow"] = allow_header(request.app.routes, request.scope)
    return page


async def csrf_refused(request: Request, exc: Exception) -> Response:
    return _error_page(
        request,
        403,
        "Form expired",
        "This form is out of date or did not come from this site. Go back, reload the page "
        "and try again.",
    )


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """The 500 page, answered by the sub-app's ``web.boundary.ErrorBoundary`` (which logs the
    error with the request id and the traceback's frames only: never the form, the query
    string, or the exception's text, which can quote the values it held)."""
    rid = request_id(request)
    return _error_page(
        request,
        500,
        "Something went wrong",
        f"Something went wrong on our side. Quote request id {rid} if you report it.",
    )


HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    CalendarError: calendar_error,
    HTTPException: http_error,
    CsrfRefused: csrf_refused,
}


def pages_app(routes: list[BaseRoute], services: Services) -> Starlette:
    """An ASGI app of pages (the settings at ``/settings``, the scheduling links' at ``/book``):
    their security headers, error pages and templates. A Starlette app re-raises what its 500
    handler answered, which would drop the connection: the boundary answers the error page and
    keeps it (``asgi.boundary``)."""
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(ErrorBoundary, respond=unexpected_error),
        ],
        exception_handlers=HANDLERS,
    )
    app.state.account = Account(services=services, env=make_env())
    return app


def _text(value: str | UploadFile | None) -> str | None:
    """A form field's text (a file upload, which no page takes, counts as missing)."""
    return value if isinstance(value, str) else None
