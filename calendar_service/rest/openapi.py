"""The OpenAPI 3.1.0 document, generated from the same pydantic models the handlers use."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.models import (
    CalendarPublic,
    EventCreate,
    EventList,
    EventPublic,
    EventUpdate,
    Problem,
)
from calendar_service.rest.routes import EVENTS_PATH
from calendar_service.web.context import services
from calendar_service.web.responses import JSONResponse

API_VERSION = "1.0.0"
_REF = "#/components/schemas/{model}"


def _schemas() -> dict[str, Any]:
    out: dict[str, Any] = {}
    models: list[tuple[type[BaseModel], str]] = [
        (EventCreate, "validation"),
        (EventUpdate, "validation"),
        (CalendarPublic, "serialization"),
        (EventPublic, "serialization"),
        (EventList, "serialization"),
        (Problem, "serialization"),
    ]
    for model, mode in models:
        schema = model.model_json_schema(by_alias=True, ref_template=_REF, mode=mode)  # type: ignore[arg-type]
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/problem+json": {"schema": {"$ref": _REF.format(model="Problem")}}},
    }


_RATE_HEADERS = {
    name: {"schema": {"type": "string" if name == "RateLimit-Policy" else "integer"}}
    for name in ("RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
}
_REQUEST_ID_HEADER = {"Request-Id": {"schema": {"type": "string"}, "description": "Request id"}}
_COMMON = {
    "400": _problem(
        "Invalid request: `errors` lists every bad field (also: an API key in the URL)."
    ),
    "401": {
        **_problem(
            "The API key is missing, malformed, unknown, expired, revoked, or lacks the "
            "permission or calendar scope (`code` says which)."
        ),
        "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
    },
    "429": {
        **_problem("Over this key's request budget."),
        "headers": {"Retry-After": {"schema": {"type": "integer"}}, **_RATE_HEADERS},
    },
    "500": _problem("Unexpected error; quote the Request-Id header."),
}


def _ok(status: str, description: str, model: str | None, **headers: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "headers": {**_RATE_HEADERS, **_REQUEST_ID_HEADER, **headers},
    }
    if model is not None:
        response["content"] = {"application/json": {"schema": {"$ref": _REF.format(model=model)}}}
    return {status: response}


def _body(model: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": _REF.format(model=model)}}},
    }


def _responses(ok: dict[str, Any], *extra: str) -> dict[str, Any]:
    more = {
        "404": _problem("No such event among those the key can reach."),
        "409": _problem("A request with this Idempotency-Key is still in flight."),
        "413": _problem("The body is larger than 1 MiB."),
        "415": _problem("The body is not sent as application/json."),
        "422": _problem("This Idempotency-Key was used with a different body."),
    }
    return {**ok, **_COMMON, **{code: more[code] for code in extra}}


_EVENT_ID = {
    "name": "eventId",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
}


def build_openapi(base_url: str) -> dict[str, Any]:
    list_params = [
        {
            "name": "timeMin",
            "in": "query",
            "description": "Inclusive start: events ending after it are returned. RFC 3339; "
            "without an offset it is read in the key's (or the default) calendar's time zone. "
            "Omitted: unbounded.",
            "schema": {"type": "string", "format": "date-time"},
        },
        {
            "name": "timeMax",
            "in": "query",
            "description": "Exclusive end: events starting before it are returned. Omitted: "
            "unbounded.",
            "schema": {"type": "string", "format": "date-time"},
        },
        {
            "name": "limit",
            "in": "query",
            "description": "Page size.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 2500, "default": 250},
        },
        {
            "name": "pageToken",
            "in": "query",
            "description": "The nextPageToken of the previous page.",
            "schema": {"type": "string"},
        },
    ]
    idem = {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "Makes the POST safe to retry: the same key and body within 24 h "
        "return the first response.",
        "schema": {"type": "string", "maxLength": 255},
    }
    security = [{"bearerAuth": []}]
    item = EVENTS_PATH.removeprefix("/api/v1") + "/{eventId}"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Calendar API",
            "version": API_VERSION,
            "description": "List and create calendar events with a scoped API key.",
        },
        "servers": [{"url": f"{base_url}/api/v1"}],
        "security": security,
        "paths": {
            EVENTS_PATH.removeprefix("/api/v1"): {
                "get": {
                    "operationId": "listCalendarEvents",
                    "summary": "List the calendars and events accessible to the key",
                    "security": security,
                    "parameters": list_params,
                    "responses": _responses(_ok("200", "The calendars and events.", "EventList")),
                },
                "post": {
                    "operationId": "createCalendarEvent",
                    "summary": "Create an event (needs calendar:write)",
                    "security": security,
                    "parameters": [idem],
                    "requestBody": _body("EventCreate"),
                    "responses": _responses(
                        _ok(
                            "201",
                            "The created event.",
                            "EventPublic",
                            Location={"schema": {"type": "string", "format": "uri"}},
                        ),
                        "409",
                        "413",
                        "415",
                        "422",
                    ),
                },
            },
            item: {
                "parameters": [_EVENT_ID],
                "get": {
                    "operationId": "getCalendarEvent",
                    "summary": "Get one event",
                    "security": security,
                    "responses": _responses(_ok("200", "The event.", "EventPublic"), "404"),
                },
                "patch": {
                    "operationId": "updateCalendarEvent",
                    "summary": "Change some fields of an event (needs calendar:write)",
                    "security": security,
                    "requestBody": _body("EventUpdate"),
                    "responses": _responses(
                        _ok("200", "The updated event.", "EventPublic"), "404", "413", "415"
                    ),
                },
                "delete": {
                    "operationId": "deleteCalendarEvent",
                    "summary": "Delete an event (needs calendar:write)",
                    "security": security,
                    "responses": _responses(_ok("204", "Deleted.", None), "404"),
                },
            },
        },
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Authorization: Bearer <API_KEY>. Never in the URL.",
                }
            },
        },
    }


async def openapi_document(request: Request) -> Response:
    svc = services(request)
    doc = request.app.state.openapi_cache.get(svc.config.base_url)
    if doc is None:
        doc = request.app.state.openapi_cache[svc.config.base_url] = build_openapi(
            svc.config.base_url
        )
    return JSONResponse(doc, headers={"Cache-Control": "public, max-age=300"})


def routes() -> list[BaseRoute]:
    return [
        Route("/api/openapi.json", openapi_document, methods=["GET"]),
        Route("/.well-known/openapi.json", openapi_document, methods=["GET"]),
    ]
