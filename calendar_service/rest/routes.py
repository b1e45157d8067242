"""``/api/v1/calendar/events``: thin handlers over the core, through ``gateway.perform``."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service import events, service_secrets
from calendar_service.asgi.context import (
    bearer_token,
    call_context,
    key_in_url,
    read_json_body,
    record_refusal,
    services,
)
from calendar_service.asgi.responses import JSONResponse
from calendar_service.errors import CalendarError, KeyInUrl, ValidationFailed
from calendar_service.gateway import Operation, Outcome, perform
from calendar_service.inputs import NUL, nul_errors, parse_json_body
from calendar_service.keys import Principal
from calendar_service.timeutil import utcnow

EVENTS_PATH = "/api/v1/calendar/events"


async def _perform(request: Request, operation: str, op: Operation[Any]) -> Outcome[Any]:
    svc = services(request)
    leaked = key_in_url(request)
    if leaked is not None:
        return await _refuse_key_in_url(request, operation, *leaked)
    refused = _nul_in_url(request)
    if refused is not None:  # refused once the key is known, so the call is in its history

        def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
            raise refused

    return await svc.db.run_grouped(
        perform,
        secret=bearer_token(request),
        ctx=call_context(request, operation),
        op=op,
        limiter=svc.limiter,
    )


_PATH_FIELDS = {"event_id": "eventId"}


def _nul_in_url(request: Request) -> ValidationFailed | None:
    """A 400 for path ids and query parameters with NUL in them (see ``inputs``): such an id
    can never exist, and PostgreSQL could not even be asked about it."""
    query = request.scope["query_string"]
    if b"%00" not in query and NUL not in request.scope["path"]:
        return None
    path = {_PATH_FIELDS.get(k, k): v for k, v in request.path_params.items()}
    errors = nul_errors(path) + nul_errors(request.query_params.multi_items())
    return ValidationFailed(errors) if errors else None


async def _refuse_key_in_url(
    request: Request, operation: str, parameter: str, value: str
) -> Outcome[Any]:
    """400 for a key in the URL. If it is a real key (in the header or the URL), the refused
    call goes into that key's history, so its owner can see the key may have leaked."""
    await record_refusal(
        request,
        services(request),
        KeyInUrl(parameter),
        operation=operation,
        transport="rest",
        fallback_secret=value,
    )


def _respond(outcome: Outcome[Any], **extra_headers: str) -> Response:
    headers = outcome.rate.headers() if outcome.rate else {}
    headers["Cache-Control"] = "no-store"
    headers.update(extra_headers)
    if outcome.status == 204:
        return Response(status_code=204, headers=headers)
    if isinstance(outcome.value, bytes):  # encoded JSON
        return Response(outcome.value, outcome.status, headers, JSONResponse.media_type)
    return JSONResponse(outcome.value, status_code=outcome.status, headers=headers)


async def _page_token_key(request: Request) -> bytes:
    """The page-token key, read (or made) once per app: ``service_secrets.page_token_key``."""
    state = request.app.state
    key: bytes | None = getattr(state, "page_token_key", None)
    if key is None:
        key = await services(request).db.run(service_secrets.page_token_key, now=utcnow())
        state.page_token_key = key
    return key


async def list_calendar_events(request: Request) -> Response:
    params = request.query_params
    token_key = await _page_token_key(request)

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        # Encoded here, while the list is fresh in the cache: only the bytes wait for the
        # group commit (db.Database.run_grouped), not some 600 objects.
        return 200, orjson.dumps(
            events.list_events(
                conn,
                principal=principal,
                time_min=params.get("timeMin"),
                time_max=params.get("timeMax"),
                limit=params.get("limit"),
                page_token=params.get("pageToken"),
                token_key=token_key,
            )
        )

    return _respond(await _perform(request, "listCalendarEvents", op))


async def create_calendar_event(request: Request) -> Response:
    idem_key = request.headers.get("idempotency-key")
    # The body is read (and refused if too large or not JSON) before the key is checked; a
    # body error for a key that exists is still recorded, through the operation below.
    try:
        raw: bytes | Exception = await read_json_body(request)
    except CalendarError as exc:  # recorded with the key below
        raw = exc
    replayed = False

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        nonlocal replayed
        if isinstance(raw, Exception):
            raise raw
        principal.require_write()
        event, replayed = events.create_event_from_input(
            conn,
            principal=principal,
            body=parse_json_body(raw),
            now=utcnow(),
            idempotency_key=idem_key,
        )
        return 201, event

    outcome = await _perform(request, "createCalendarEvent", op)
    base = services(request).config.base_url
    headers = {"Location": f"{base}{EVENTS_PATH}/{outcome.value['id']}"}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return _respond(outcome, **headers)


async def get_calendar_event(request: Request) -> Response:
    event_id = request.path_params["event_id"]

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        return 200, events.get_event(conn, principal=principal, event_id=event_id)

    return _respond(await _perform(request, "getCalendarEvent", op))


async def update_calendar_event(request: Request) -> Response:
    event_id = request.path_params["event_id"]
    try:
        raw: bytes | Exception = await read_json_body(request)
    except CalendarError as exc:
        raw = exc

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        if isinstance(raw, Exception):
            raise raw
        principal.require_write()
        return 200, events.update_event_from_input(
            conn, principal=principal, event_id=event_id, body=parse_json_body(raw), now=utcnow()
        )

    return _respond(await _perform(request, "updateCalendarEvent", op))


async def delete_calendar_event(request: Request) -> Response:
    event_id = request.path_params["event_id"]

    def op(conn: Connection, principal: Principal) -> tuple[int, Any]:
        events.delete_event(conn, principal=principal, event_id=event_id, now=utcnow())
        return 204, None

    return _respond(await _perform(request, "deleteCalendarEvent", op))


def routes() -> list[BaseRoute]:
    return [
        Route(EVENTS_PATH, list_calendar_events, methods=["GET"]),
        Route(EVENTS_PATH, create_calendar_event, methods=["POST"]),
        Route(EVENTS_PATH + "/{event_id}", get_calendar_event, methods=["GET"]),
        Route(EVENTS_PATH + "/{event_id}", update_calendar_event, methods=["PATCH"]),
        Route(EVENTS_PATH + "/{event_id}", delete_calendar_event, methods=["DELETE"]),
    ]
