"""A scheduling link's public page, mounted at ``/book`` (no sign-in: the token in the path is
the link's only secret).

    /book/{token}                     GET the free slots of a week in the guest's zone, POST book
    /book/manage/{token}              GET the booking (the confirmation), its reschedule form
    /book/manage/{token}/reschedule   POST another slot
    /book/manage/{token}/cancel       POST cancel

Works without JavaScript: the zone is a form field (a script fills in the browser's zone
when the URL names none). The POSTs carry a double-submit token (a random cookie, ``SameSite``
strict, and the same value in the form, compared in constant time) and are refused when the
browser says they come from another site; every request spends the link's and the client
address's budget (``asgi.guests``). The core decides everything else (``calendar.booking``),
the writes through ``gateway.perform`` as the link's key's.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo, available_timezones

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from calendar_service.account.web import (
    cross_site,
    form,
    pages_app,
    render,
    tokens_match,
)
from calendar_service.asgi.context import Services, services
from calendar_service.asgi.guests import guest_write, mail_policy, spend_budget
from calendar_service.calendar import booking
from calendar_service.operations import catalog as operations
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import CalendarError, SlotTaken, ValidationFailed
from calendar_service.platform.timeutil import is_valid_zone, utcnow

CSRF_COOKIE = "book_csrf"
DAYS_SHOWN = 7
_ZONES: list[str] = []


def zones() -> list[str]:
    """Every IANA zone, sorted (read once)."""
    if not _ZONES:
        _ZONES.extend(sorted(z for z in available_timezones() if "/" in z or z == "UTC"))
    return _ZONES


async def _done(value: Any) -> Any:
    if isinstance(value, Later):
        return await asyncio.to_thread(value.finish)
    return value


def _csrf(request: Request) -> str:
    """The browser's double-submit token (made on its first visit)."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) != 43:
        token = getattr(request.state, "book_csrf", None) or secrets.token_urlsafe(32)
    request.state.book_csrf = token
    return token


def _with_cookie(request: Request, response: Response) -> Response:
    response.set_cookie(
        CSRF_COOKIE,
        _csrf(request),
        path="/book",
        httponly=True,
        samesite="strict",
        secure=services(request).config.base_url.startswith("https://"),
        max_age=86400,
    )
    return response


async def _checked_form(request: Request) -> dict[str, str]:
    data = await form(request)
    given = data.get("csrf_token")
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if cross_site(request) or not cookie or not tokens_match(cookie, given):  # type: ignore[arg-type]
        raise _FormExpired()
    return {k: v for k, v in data.items() if isinstance(v, str)}


class _FormExpired(Exception):
    pass


def _zone_of(request: Request, asked: str | None) -> str | None:
    return asked if asked and is_valid_zone(asked) else None


def _week_start(asked: str | None, tz_name: str) -> date:
    today = datetime.now(ZoneInfo(tz_name) if tz_name != "UTC" else UTC).date()
    if asked:
        try:
            return max(date.fromisoformat(asked), today)
        except ValueError:
            pass
    return today


def _days(slots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slots grouped by local day, in order."""
    days: list[dict[str, Any]] = []
    for slot in slots:
        moment = datetime.fromisoformat(slot["startsAt"].replace("Z", "+00:00"))
        label = f"{moment:%A} {moment.day} {moment:%B %Y}"
        if not days or days[-1]["label"] != label:
            days.append({"label": label, "id": f"day-{moment:%Y%m%d}", "slots": []})
        days[-1]["slots"].append({**slot, "clock": f"{moment:%H:%M}"})
    return days


async def _slots_page(
    request: Request,
    token: str,
    *,
    manage: bool,
    status: int = 200,
    error: str | None = None,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    """The week's slots (the booking form, or the reschedule form of a booking)."""
    values = values or {}
    db = services(request).db
    now = utcnow()
    asked = _zone_of(request, values.get("timeZone") or request.query_params.get("timeZone"))
    if manage:
        current = await db.run(booking.booking_public, manage_token=token, now=now)
        facts = {"title": current["title"], "description": None}
        facts["durationMinutes"] = current["durationMinutes"]
        home_zone = current["timeZone"]
    else:
        current = None
        facts = await db.run(booking.link_facts, token=token, now=now)
        home_zone = None
    tz_name = asked or home_zone or "UTC"
    start = _week_start(values.get("from") or request.query_params.get("from"), tz_name)
    end = start + timedelta(days=DAYS_SHOWN)
    window = booking.SlotWindow(start.isoformat(), end.isoformat(), asked)
    if manage:
        found = await db.run(booking.managed_slots, manage_token=token, now=now, window=window)
    else:
        found = await db.run(booking.link_slots, token=token, now=now, window=window)
    found = await _done(found)
    if asked is None:
        tz_name = found["timeZone"]
    if current is not None:
        local = ZoneInfo(tz_name) if tz_name != "UTC" else UTC
        starts = datetime.fromisoformat(current["startsAt"]).astimezone(local)
        ends = datetime.fromisoformat(current["endsAt"]).astimezone(local)
        current["when"] = f"{starts:%A} {starts.day} {starts:%B %Y}, {starts:%H:%M} to {ends:%H:%M}"
    here = request.url.path
    earlier = (start - timedelta(days=DAYS_SHOWN)).isoformat()
    nav = {
        "earlier": None
        if start <= _week_start(None, tz_name)
        else f"{here}?{urlencode({'timeZone': tz_name, 'from': earlier})}",
        "later": f"{here}?{urlencode({'timeZone': tz_name, 'from': end.isoformat()})}",
    }
    response = render(
        request,
        "book.html",
        {
            "facts": facts,
            "current": current,
            "manage": manage,
            "days": _days(found["slots"]),
            "time_zone": tz_name,
            "zone_given": asked is not None,
            "zones": zones(),
            "week": {"start": start, "end": end - timedelta(days=1)},
            "from": start.isoformat(),
            "nav": nav,
            "book_csrf": _csrf(request),
            "error": error,
            "errors": errors or {},
            "values": values,
            "action": here if not manage else f"{here}/reschedule",
            "request_path": here,
            "booked": request.query_params.get("booked") == "1",
            "moved": request.query_params.get("moved") == "1",
        },
        status_code=status,
    )
    return _with_cookie(request, response)


def _field_errors(exc: ValidationFailed) -> dict[str, str]:
    names = {"startsAt": "slot", "name": "name", "email": "email"}
    return {names.get(e["field"], "slot"): e["message"] for e in exc.errors}


async def _gone_or_error(request: Request, exc: CalendarError) -> Response:
    return _with_cookie(
        request,
        render(
            request,
            "book_error.html",
            {"status": exc.status, "title": exc.title, "message": exc.message},
            status_code=exc.status,
        ),
    )


async def link_page(request: Request) -> Response:
    token = request.path_params["token"]
    try:
        await spend_budget(request, token)
        return await _slots_page(request, token, manage=False)
    except CalendarError as exc:
        return await _gone_or_error(request, exc)


async def _slot_form(request: Request, *, manage: bool) -> Response:
    """A slot picked on the page: booked (``manage``: the booking moved to it), then the
    confirmation page; a stale form, a bad field or a time taken meanwhile: the page again,
    saying so, with the fresh slots."""
    token = request.path_params["token"]
    values: dict[str, str] = {}
    try:
        await spend_budget(request, token)
        values = await _checked_form(request)
        base = services(request).config.base_url
        mail = await mail_policy(request)
        body = {"startsAt": values.get("slot") or None}
        if manage:
            op, path, key = operations.RESCHEDULE_BOOKING, "/book/manage/{token}/reschedule", {}
        else:
            body.update(name=values.get("name", ""), email=values.get("email", ""))
            op, path, key = operations.BOOK, "/book/{token}", {"base_url": base}

        def args() -> dict[str, Any]:
            named = {"manage_token" if manage else "token": token}
            return {**named, **key, "body": body, "now": utcnow(), "mail": mail}

        outcome = await guest_write(request, op, token=token, manage=manage, path=path, args=args)
    except _FormExpired:
        expired = "This form expired or did not come from this page. Pick your time again."
        return await _slots_page(
            request, token, manage=manage, status=403, values=values, error=expired
        )
    except ValidationFailed as exc:
        fix = "Please pick a new time." if manage else "Please correct the fields marked below."
        return await _slots_page(
            request,
            token,
            manage=manage,
            status=400,
            values=values,
            error=fix,
            errors=_field_errors(exc),
        )
    except SlotTaken as exc:
        return await _slots_page(
            request, token, manage=manage, status=409, values=values, error=exc.message
        )
    except CalendarError as exc:
        return await _gone_or_error(request, exc)
    if manage:
        done, where = "moved", token
    else:
        done, where = "booked", outcome.value["booking"]["manageUrl"].rsplit("/", 1)[1]
    zone_name = values.get("timeZone", "")
    query = f"?{done}=1&timeZone={quote(zone_name)}" if is_valid_zone(zone_name) else f"?{done}=1"
    return RedirectResponse(f"/book/manage/{where}{query}", 303)


async def book_slot(request: Request) -> Response:
    return await _slot_form(request, manage=False)


async def manage_page(request: Request) -> Response:
    token = request.path_params["token"]
    try:
        await spend_budget(request, token)
        return await _slots_page(request, token, manage=True)
    except CalendarError as exc:
        return await _gone_or_error(request, exc)


async def reschedule(request: Request) -> Response:
    return await _slot_form(request, manage=True)


async def cancel(request: Request) -> Response:
    token = request.path_params["token"]
    try:
        await spend_budget(request, token)
        await _checked_form(request)
        mail = await mail_policy(request)

        def args() -> dict[str, Any]:
            return {"manage_token": token, "now": utcnow(), "mail": mail}

        await guest_write(
            request,
            operations.CANCEL_BOOKING,
            token=token,
            manage=True,
            path="/book/manage/{token}/cancel",
            args=args,
        )
    except _FormExpired:
        return await _slots_page(
            request,
            token,
            manage=True,
            status=403,
            error="This form expired or did not come from this page. Try again.",
        )
    except CalendarError as exc:
        return await _gone_or_error(request, exc)
    return _with_cookie(
        request, render(request, "book_cancelled.html", {"status": 200}, status_code=200)
    )


def booking_routes() -> list[BaseRoute]:
    return [
        Route("/manage/{token}", manage_page, methods=["GET"]),
        Route("/manage/{token}/reschedule", reschedule, methods=["POST"]),
        Route("/manage/{token}/cancel", cancel, methods=["POST"]),
        Route("/{token}", link_page, methods=["GET"]),
        Route("/{token}", book_slot, methods=["POST"]),
    ]


def create_booking_app(services: Services) -> Starlette:
    """The scheduling links' page as an ASGI app, to be mounted at ``/book``."""
    app = pages_app(booking_routes(), services)
    app.state.services = services  # what ``asgi.guests`` reads, as on the REST app
    return app
