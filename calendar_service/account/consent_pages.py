"""The consent page of OAuth for remote MCP: the owner allows (or denies) an app.

An app that asked ``/authorize`` (``mcp_tools.oauth``) is sent here with the id of its request.
The owner signs in (the existing session: the sign-in page brings them back), sees which app
asks and where it will be sent back to, and chooses what they choose for a key: permission, one
calendar or all, expiry. Allowing issues a single-use code and sends the browser back to the
app's registered redirect URI with ``code``, ``state`` and ``iss`` (RFC 9207); denying sends
``error=access_denied``. The form carries the session's CSRF token like every settings form.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import keys, oauth
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import CSP, account, field_errors, form, owner_page, render
from calendar_service.calendar import calendars
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utcnow

_FORM_FIELDS = {"expiresAt": "expires", "calendarId": "calendar"}


def _load(conn: Connection, *, request_id: str, user_id: str, now: datetime) -> dict[str, Any]:
    pending = oauth.pending_request(conn, request_id=request_id, now=now)
    owned = calendars.list_owner_calendars(conn, user_id=user_id)
    return {"pending": pending, "calendars": [calendars.calendar_public(c) for c in owned]}


def _show(
    request: Request,
    data: dict[str, Any],
    *,
    values: dict[str, str] | None = None,
    refused: ValidationFailed | None = None,
) -> Response:
    page = render(
        request,
        "consent.html",
        {
            **data,
            "expiry_choices": keys.LIFETIME_CHOICES,
            "values": values
            or {"permission": keys.READ, "expires": "30d", "calendar": "", "approval": "none"},
            "errors": {} if refused is None else field_errors(refused, _FORM_FIELDS),
        },
        status_code=200 if refused is None else 400,
    )
    # The answer to this form redirects to the app: its origin must be an allowed form target
    # (CSP form-action applies to the redirect), and only it.
    target = _csp_source(data["pending"].redirect_uri)
    if target:
        page.headers["content-security-policy"] = CSP.replace(
            "form-action 'self'", f"form-action 'self' {target}"
        )
    return page


_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*$")
_HOST = re.compile(r"^[a-z0-9.\-]+$|^\[[0-9a-f:.]+\]$")


def _csp_source(uri: str) -> str | None:
    """The CSP source for a redirect URI: ``scheme://host[:port]``, or ``scheme:`` for an app's
    own scheme; ``None`` (the form may then only go here, failing closed) for anything that
    would not make a clean source."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if not _SCHEME.match(scheme):
        return None
    if scheme not in ("http", "https"):
        return f"{scheme}:"
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    if parts.username is not None or not _HOST.match(host):
        return None
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def _issuer(request: Request) -> str:
    return account(request).services.config.base_url.rstrip("/")


@owner_page
async def consent_page(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await account(request).services.db.run(
        _load, request_id=request.path_params["request_id"], user_id=owner.user_id, now=utcnow()
    )
    return _show(request, data)


@owner_page
async def answer(request: Request, owner: OwnerSessionInfo) -> Response:
    db = account(request).services.db
    request_id = request.path_params["request_id"]
    data = await form(request)
    values = {
        name: str(data.get(name, ""))
        for name in ("permission", "expires", "expires_on", "calendar", "approval", "may_invite")
    }
    now = utcnow()
    if data.get("decision") != "allow":
        issuer = _issuer(request)
        target = await db.run(
            oauth.deny, request_id=request_id, user_id=owner.user_id, issuer=issuer, now=now
        )
        return RedirectResponse(target, 303)
    try:
        target = await db.run(
            oauth.approve,
            request_id=request_id,
            user_id=owner.user_id,
            permission=values["permission"],
            calendar_id=values["calendar"] or None,
            grant_expires_at=keys.chosen_expiry(
                choice=values["expires"], on_date=values["expires_on"], now=now
            ),
            issuer=_issuer(request),
            now=now,
            approval=values["approval"] or keys.APPROVAL_NONE,
            may_invite=values["may_invite"] == "yes",
        )
    except ValidationFailed as exc:
        loaded = await db.run(_load, request_id=request_id, user_id=owner.user_id, now=now)
        return _show(request, loaded, values=values, refused=exc)
    return RedirectResponse(target, 303)


def routes() -> list[BaseRoute]:
    return [
        Route("/connect/{request_id}", consent_page, methods=["GET"]),
        Route("/connect/{request_id}", answer, methods=["POST"]),
    ]
