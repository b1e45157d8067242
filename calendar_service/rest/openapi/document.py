"""The document itself: ``build_openapi`` assembles the parts (info, tags, paths, components)
for the service's address, and ``routes`` serve it, built once per address."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import services
from calendar_service.asgi.responses import JSONResponse
from calendar_service.rest.openapi import (
    availability,
    changes,
    events,
    ical,
    links,
    proposals,
    read_only,
    rules,
    webhooks,
)
from calendar_service.rest.openapi.headers import headers
from calendar_service.rest.openapi.parameters import parameters
from calendar_service.rest.openapi.responses import responses
from calendar_service.rest.openapi.schemas import schemas

API_VERSION = "1.0.0"


def build_openapi(base_url: str) -> dict[str, Any]:
    paths = {
        **events.paths(),
        **availability.paths(),
        **dict([ical.path()]),
        **changes.paths(),
        **proposals.paths(),
        **rules.paths(),
    }
    component_schemas = {
        **schemas(),
        **ical.schemas(),
        **changes.schemas(),
        **proposals.schemas(),
        **rules.schemas(),
    }
    changes.adjust(paths, component_schemas)
    proposals.adjust(paths, component_schemas)
    rules.adjust(paths, component_schemas)
    paths.update(webhooks.paths())
    component_schemas.update(webhooks.schemas())
    paths.update(links.paths())
    component_schemas.update(links.schemas())
    read_only.adjust(paths)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Calendar API",
            "version": API_VERSION,
            "summary": "Calendar events for machines, with scoped API keys.",
            "description": "List, create, read, change and delete calendar events, import "
            "iCalendar files, hand people scheduling links to book a time, and subscribe to "
            "webhooks (changes, events starting and ended, bookings), "
            "with a scoped API key (`Authorization: Bearer <API_KEY>`). "
            "Errors are RFC 9457 problem details (`application/problem+json`) with a "
            "machine-readable `code`. Methods not listed for a path are answered with 405 and "
            "an `Allow` header. Within v1 changes are additive only.",
            "contact": {"name": "Calendar service operator", "url": base_url},
            "license": {"name": "MIT", "url": "https://opensource.org/license/mit"},
        },
        "servers": [{"url": f"{base_url}/api/v1"}],
        "security": [{"bearerAuth": []}],
        "tags": [
            availability.TAG.doc,
            changes.TAG.doc,
            events.TAG.doc,
            links.TAG.doc,
            webhooks.TAG.doc,
        ],
        "paths": paths,
        "webhooks": webhooks.webhooks(),
        "components": {
            "schemas": component_schemas,
            "parameters": {
                **parameters(),
                **ical.parameters(),
                **changes.parameters(),
                **proposals.parameters(),
            },
            "headers": {**headers(), **changes.headers()},
            "responses": {**responses(), **links.responses()},
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
