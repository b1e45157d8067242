"""Signing in and out of the settings pages.

The sign-in form has no session yet, so its CSRF token rides in a short-lived signed cookie of
its own and must match the form's (a double-submit token): another site cannot sign a browser
in to the attacker's account. Failed attempts are throttled per email and per client address
(``calendar_service.access.signin``); the message says when to try again.
"""

from __future__ import annotations

import math
import secrets
from datetime import datetime

import anyio.to_thread
from itsdangerous import BadSignature
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import owner_sessions
from calendar_service.access import owners as users
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.access.signin import Lockout, begin_attempt, complete_attempt
from calendar_service.account.web import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    account,
    cross_site,
    current_owner,
    form,
    is_https,
    owner_page,
    render,
    root,
    safe_next,
    see_other,
    tokens_match,
)
from calendar_service.platform.timeutil import utcnow

SIGN_IN_FORM_LIFETIME = 3600


def _lockout_message(lockout: Lockout, now: datetime) -> str:
    minutes = max(1, math.ceil((lockout.retry_at - now).total_seconds() / 60))
    who = "this email address" if lockout.scope == "email" else "your network address"
    return (
        f"Too many failed sign-ins for {who}. Try again in {minutes} minute"
        f"{'s' if minutes != 1 else ''} (after {lockout.retry_at:%H:%M} UTC)."
    )


async def _sign_in_form(
    request: Request,
    *,
    status_code: int = 200,
    error: str | None = None,
    email: str = "",
    headers: dict[str, str] | None = None,
) -> Response:
    token = secrets.token_urlsafe(32)
    signer = await account(request).signer("sign-in")
    notice = {"signed-out": "You are signed out."}.get(request.query_params.get("notice", ""))
    response = render(
        request,
        "sign_in.html",
        {
            "sign_in_token": token,
            "error": error,
            "email": email,
            "next": safe_next(request, request.query_params.get("next")),
            "notice": notice,
        },
        status_code=status_code,
    )
    response.set_cookie(
        SIGN_IN_COOKIE,
        signer.sign(token).decode(),
        max_age=SIGN_IN_FORM_LIFETIME,
        path=root(request) or "/",
        secure=is_https(request),
        httponly=True,
        samesite="lax",
    )
    response.headers.update(headers or {})
    return response


async def sign_in_page(request: Request) -> Response:
    if await current_owner(request) is not None:
        return RedirectResponse(safe_next(request, request.query_params.get("next")), 303)
    return await _sign_in_form(request)


async def _sign_in_token_ok(request: Request, given: str | None) -> bool:
    raw = request.cookies.get(SIGN_IN_COOKIE)
    if not raw or cross_site(request):
        return False
    signer = await account(request).signer("sign-in")
    try:
        expected = signer.unsign(raw, max_age=SIGN_IN_FORM_LIFETIME).decode()
    except BadSignature:
        return False
    return tokens_match(expected, given)


async def sign_in(request: Request) -> Response:
    data = await form(request)
    email = str(data.get("email", "")).strip()
    password = str(data.get("password", ""))
    if not await _sign_in_token_ok(request, data.get("csrf_token")):  # type: ignore[arg-type]
        return await _sign_in_form(
            request,
            status_code=403,
            error="The sign-in form expired or did not come from this site. Please try again.",
            email=email,
        )
    if not email or not password:
        return await _sign_in_form(
            request, status_code=400, error="Enter your email and password.", email=email
        )
    acct = account(request)
    pepper = await acct.secret()
    now = utcnow()
    attempt = await acct.services.db.run(
        begin_attempt,
        pepper=pepper,
        email=email,
        client_addr=request.client.host if request.client else None,
        now=now,
    )
    if attempt.lockout is not None:
        retry = max(1, math.ceil((attempt.lockout.retry_at - now).total_seconds()))
        return await _sign_in_form(
            request,
            status_code=429,
            error=_lockout_message(attempt.lockout, now),
            email=email,
            headers={"Retry-After": str(retry)},
        )
    # Argon2id takes a good fraction of a second of CPU: never on the event loop, and never
    # inside a transaction (on SQLite that would hold the write lock meanwhile).
    ok = await anyio.to_thread.run_sync(users.verify_password, attempt.password_hash, password)
    session = None
    if ok and attempt.user_id is not None:
        session = await acct.services.db.run(
            complete_attempt, pepper=pepper, email=email, attempt=attempt, now=utcnow()
        )
    if session is None:
        return await _sign_in_form(
            request, status_code=400, error="Wrong email or password.", email=email
        )
    token, _ = session
    signer = await acct.signer("session")
    response = RedirectResponse(safe_next(request, str(data.get("next", ""))), 303)
    response.set_cookie(
        SESSION_COOKIE,
        signer.sign(token).decode(),
        max_age=int(owner_sessions.SESSION_LIFETIME.total_seconds()),
        path=root(request) or "/",
        secure=is_https(request),
        httponly=True,
        samesite="lax",
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=root(request) or "/")
    return response


@owner_page
async def sign_out(request: Request, owner: OwnerSessionInfo) -> Response:
    raw = request.cookies.get(SESSION_COOKIE, "")
    signer = await account(request).signer("session")
    token = signer.unsign(raw).decode()  # owner_page has already verified it
    await account(request).services.db.run(owner_sessions.end_session, token=token)
    response = see_other(request, "/sign-in", notice="signed-out")
    response.delete_cookie(
        SESSION_COOKIE,
        path=root(request) or "/",
        secure=is_https(request),
        httponly=True,
        samesite="lax",
    )
    return response


def routes() -> list[BaseRoute]:
    return [
        Route("/sign-in", sign_in_page, methods=["GET"]),
        Route("/sign-in", sign_in, methods=["POST"]),
        Route("/sign-out", sign_out, methods=["POST"]),
    ]
