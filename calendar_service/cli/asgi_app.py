"""The ASGI application ``serve`` runs: ``create_app(config)`` assembles the fronts and owns the
lifespan; ``app_from_env`` is uvicorn's factory (``calendar_service.cli.asgi_app:app_from_env``).

/api/v1/...                 REST (calendar_service.rest; /api/v1/book/...: a scheduling link's
                            public API, calendar_service.rest.links)
/api/openapi.json           OpenAPI 3.1.0 (also /.well-known/openapi.json)
/mcp                        MCP tools over streamable HTTP (mcp_tools)
/.well-known/oauth-*, /authorize, /token, /register, /revoke
                            OAuth 2.1 for remote MCP (mcp_tools.oauth; consent: /settings/connect)
/settings/...               the owner's account settings pages (calendar_service.account)
/book/...                   a scheduling link's public page (calendar_service.account.booking_pages)
/ical/<token>.ics           a calendar's iCalendar subscription feed (calendar_service.rest.feed)
/.well-known/caldav, /caldav/...
                            CalDAV for the owner's calendar apps (calendar_service.dav.routes)
/healthz                    liveness + database check
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from calendar_service.access.ratelimit import RateLimiter
from calendar_service.account import create_account_app
from calendar_service.account.booking_pages import create_booking_app
from calendar_service.asgi.boundary import ErrorBoundary
from calendar_service.asgi.context import RequestIdMiddleware, Services, services
from calendar_service.asgi.methods import AnswerOptions
from calendar_service.asgi.responses import JSONResponse
from calendar_service.dav import routes as caldav
from calendar_service.platform.config import Config
from calendar_service.platform.db import Database
from calendar_service.platform.logs import configure_logging
from calendar_service.rest import feed, invitations, links, openapi, routes, subscriptions
from calendar_service.rest.errors import HANDLERS, unexpected_error
from mcp_tools.http import MCP_PATH, mcp_http
from mcp_tools.oauth import oauth_server
from webhooks.connections import discover_calendars
from webhooks.documents import fetch_document
from webhooks.housekeeping import housekeeping_job
from webhooks.http11 import WebhookClient
from webhooks.scheduler import delivery_job


async def healthz(request: Request) -> Response:
    await services(request).db.ping()
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})


# Allocations (less deallocations) of container objects between two young collections;
# CPython's default is 700.
GC_YOUNG_THRESHOLD = 10_000


def _freeze_startup_objects() -> None:
    """Move everything alive after startup (modules, the app, SQLAlchemy's and pydantic's
    caches: some 160,000 objects) out of the garbage collector's sight, and collect the young
    generation less often.

    Otherwise every full collection walks them all: about 100 ms with the event loop stopped,
    which was the list's p99 under load. Startup garbage is collected first. Under load the
    requests of a group commit (``db.Database.run_grouped``), some ten at a time, are alive
    together while they wait for it: at the default threshold their objects set off a young
    collection every few requests (756 in a 6-second list run, 230 ms in all) and, promoted,
    fed the older generations' collections (~12 ms each). At ``GC_YOUNG_THRESHOLD`` there were
    none in the same run; cyclic garbage still goes, in collections of at most that many
    objects (about a millisecond)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def create_app(
    config: Config,
    *,
    db: Database | None = None,
    run_webhooks: bool = True,
    webhook_client: WebhookClient | None = None,
    freeze_gc: bool = False,
) -> Starlette:
    """The whole service as one ASGI app. The schema must already be migrated.

    The lifespan runs the undo jobs (``background.UndoJobs``: the settings pages' *Undo
    work*, and those a killed process left). With ``run_webhooks`` it runs the webhook
    delivery job too, and the housekeeping job beside it (``webhooks.housekeeping``); the
    delivery job sends through ``webhook_client`` (default:
    ``webhooks.transport.make_client()``) and closes it at the end. ``freeze_gc`` (the
    server's own app) hides the objects alive after startup from the garbage collector (see
    ``_freeze_startup_objects``)."""
    database = db or Database(config)
    svc = Services(
        config=config,
        db=database,
        limiter=RateLimiter(*config.rate_limit),
        discover_caldav=lambda url, username, password: discover_calendars(
            url, username=username, password=password, allow_local=config.webhook_allow_local
        ),
    )
    fetch = functools.partial(fetch_document, allow_local=config.webhook_allow_local)
    auth = oauth_server(svc, resource_path=MCP_PATH, fetch_document=fetch)
    mcp = mcp_http(
        svc,
        oauth_resource=auth.resource if auth else None,
        resource_metadata=auth.resource_metadata_url if auth else None,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        async with contextlib.AsyncExitStack() as stack:
            if db is None:
                stack.callback(database.close)
            if run_webhooks:
                await stack.enter_async_context(
                    delivery_job(config, database, client=webhook_client)
                )
                await stack.enter_async_context(housekeeping_job(config, database))
            await stack.enter_async_context(mcp.run())
            await stack.enter_async_context(svc.undo_jobs.running())
            if freeze_gc:
                _freeze_startup_objects()
            yield {}

    app = Starlette(
        routes=[
            *routes.routes(),
            *subscriptions.routes(),
            *links.routes(),
            *openapi.routes(),
            *feed.routes(),
            *invitations.routes(),
            *caldav.routes(),
            Route("/healthz", healthz, methods=["GET"]),
            Mount("/settings", app=create_account_app(svc)),
            Mount("/book", app=create_booking_app(svc)),
            Route(MCP_PATH, mcp.endpoint),
            *(auth.routes if auth else []),
        ],
        # Outermost first: the request id (and nosniff) on every answer, the 500s included;
        # then the last line of error handling; then OPTIONS.
        middleware=[
            Middleware(RequestIdMiddleware),
            Middleware(ErrorBoundary, respond=unexpected_error),
            Middleware(AnswerOptions, cors_paths=auth.cors_paths if auth else ()),
        ],
        exception_handlers=HANDLERS,
        lifespan=lifespan,
    )
    app.state.services = svc
    app.state.openapi_cache = {}
    app.state.run_webhooks = run_webhooks
    return app


def app_from_env() -> Starlette:
    """The uvicorn factory used by ``calendar-service serve`` (one call per worker process).

    It applies the service's logging (``calendar_service.platform.logs``) in the process it runs in,
    at ``CALENDAR_LOG_LEVEL`` (which ``serve --log-level`` sets)."""
    configure_logging(os.environ.get("CALENDAR_LOG_LEVEL", "info"))
    config = Config.from_env()
    run_webhooks = os.environ.get("CALENDAR_RUN_WEBHOOKS", "1") != "0"
    return create_app(config, run_webhooks=run_webhooks, freeze_gc=True)
