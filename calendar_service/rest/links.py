"""Scheduling links over REST: the key's links (``/api/v1/calendar/schedulingLinks``, through
``gateway.perform`` as every operation) and the public booking API a link's page is built on
(``/api/v1/book/{token}``: no key; the token is the link's secret)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.ratelimit import RateState
from calendar_service.asgi.context import Query, services
from calendar_service.asgi.guests import guest_write, mail_policy, spend_budget
from calendar_service.asgi.responses import Encoded
from calendar_service.calendar import booking
from calendar_service.operations import catalog as operations
from calendar_service.platform.deferred import Later
from calendar_service.platform.errors import FieldError, UnknownParameter
from calendar_service.platform.inputs import parse_json_body
from calendar_service.platform.timeutil import utcnow
from calendar_service.rest.routes import _body, _on_item, _perform, _respond

LINKS_PATH = "/api/v1/calendar/schedulingLinks"
BOOK_API = "/api/v1/book"
SLOT_PARAMETERS = ("timeMin", "timeMax", "timeZone")
_NO_STORE = [(b"cache-control", b"no-store")]


async def create_scheduling_link(request: Request) -> Response:
    raw, refused = await _body(request)
    base = services(request).config.base_url

    def args() -> dict[str, Any]:
        return {"body": parse_json_body(raw), "now": utcnow(), "base_url": base}

    outcome = await _perform(request, operations.CREATE_LINK, args, refused=refused)
    return _respond(outcome, outcome.value)


async def list_scheduling_links(request: Request) -> Response:
    outcome = await _perform(request, operations.LIST_LINKS, lambda: {"now": utcnow()})
    return _respond(outcome, outcome.value)


async def delete_scheduling_link(request: Request) -> Response:
    return await _on_item(request, operations.DELETE_LINK, "link_id", answer=False)


def _json(value: Any, status: int = 200, rate: RateState | None = None) -> Response:
    headers = list(_NO_STORE) if rate is None else [*_NO_STORE, *rate.raw_headers()]
    return Encoded(orjson.dumps(value), status, headers)


async def done(value: Any) -> Any:
    """A core answer, with the work it left for after the transaction done off the loop."""
    if isinstance(value, Later):
        return await asyncio.to_thread(value.finish)
    return value


def _query(request: Request, known: tuple[str, ...]) -> Query:
    """The query parameters, any other than ``known`` refused (400 ``unknown_parameter``)."""
    query = Query(request.scope["query_string"])
    unknown = sorted(set(query.last) - set(known))
    if unknown:
        takes = ", ".join(known) if known else "none"
        advice = f"is not a parameter of this operation, which takes {takes}"
        raise UnknownParameter([FieldError(name[:100], advice) for name in unknown])
    return query


async def _guest(request: Request, known: tuple[str, ...] = ()) -> tuple[str, RateState, Query]:
    """A guest's call: the link's (or booking's) token in the path, its budget spent, its query
    checked (``known``: the parameters it takes)."""
    token = request.path_params["token"]
    rate = await spend_budget(request, token)
    return token, rate, _query(request, known)


async def _guest_body(request: Request) -> bytes:
    """A guest's body, refused (413, 415) as any body is."""
    raw, refused = await _body(request)
    if refused is not None:
        raise refused
    return raw


async def link_slots(request: Request) -> Response:
    token, rate, query = await _guest(request, SLOT_PARAMETERS)
    found = await services(request).db.run(
        booking.link_slots,
        token=token,
        now=utcnow(),
        window=booking.SlotWindow(
            query.last.get("timeMin"), query.last.get("timeMax"), query.last.get("timeZone")
        ),
    )
    return _json(await done(found), rate=rate)


async def book(request: Request) -> Response:
    token, rate, _ = await _guest(request)
    body = parse_json_body(await _guest_body(request))
    booking.check_booking(body)  # a bad body is a 400 whatever became of the link
    base = services(request).config.base_url
    mail = await mail_policy(request)

    def args() -> dict[str, Any]:
        return {"token": token, "body": body, "now": utcnow(), "base_url": base, "mail": mail}

    outcome = await guest_write(
        request, operations.BOOK, token=token, manage=False, path=BOOK_API + "/{token}", args=args
    )
    return _json(outcome.value, 201, rate)


async def get_booking(request: Request) -> Response:
    token, rate, _ = await _guest(request)
    found = await services(request).db.run(booking.booking_public, manage_token=token, now=utcnow())
    return _json(found, rate=rate)


async def cancel_booking(request: Request) -> Response:
    token, rate, _ = await _guest(request)
    mail = await mail_policy(request)

    def args() -> dict[str, Any]:
        return {"manage_token": token, "now": utcnow(), "mail": mail}

    path = BOOK_API + "/manage/{token}/cancel"
    outcome = await guest_write(
        request, operations.CANCEL_BOOKING, token=token, manage=True, path=path, args=args
    )
    return _json(outcome.value, rate=rate)


async def reschedule_booking(request: Request) -> Response:
    token, rate, _ = await _guest(request)
    raw = await _guest_body(request)
    mail = await mail_policy(request)

    def args() -> dict[str, Any]:
        body = parse_json_body(raw)
        return {"manage_token": token, "body": body, "now": utcnow(), "mail": mail}

    path = BOOK_API + "/manage/{token}/reschedule"
    outcome = await guest_write(
        request, operations.RESCHEDULE_BOOKING, token=token, manage=True, path=path, args=args
    )
    return _json(outcome.value, rate=rate)


def routes() -> list[BaseRoute]:
    manage = BOOK_API + "/manage/{token}"
    return [
        Route(LINKS_PATH, list_scheduling_links, methods=["GET"]),
        Route(LINKS_PATH, create_scheduling_link, methods=["POST"]),
        Route(LINKS_PATH + "/{link_id}", delete_scheduling_link, methods=["DELETE"]),
        Route(manage, get_booking, methods=["GET"]),
        Route(manage + "/cancel", cancel_booking, methods=["POST"]),
        Route(manage + "/reschedule", reschedule_booking, methods=["POST"]),
        Route(BOOK_API + "/{token}/slots", link_slots, methods=["GET"]),
        Route(BOOK_API + "/{token}", book, methods=["POST"]),
    ]
