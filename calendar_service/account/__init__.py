"""The owner's account settings: server-rendered pages mounted at ``/settings``. A front: it
may import the core and the plumbing (``asgi``), no other front.

    /settings/sign-in                    GET form, POST email + password (throttled)
    /settings/sign-out                   POST
    /settings/keys                       GET list + create form, POST create (secret shown once)
    /settings/keys/{id}/revoke           GET confirmation, POST revoke
    /settings/keys/{id}/calls            GET history: filters, pages, chart per day
    /settings/keys/{id}/calls.csv        GET the same history as CSV
    /settings/keys/{id}/approval         POST which of the key's writes wait for the owner
    /settings/keys/{id}/undo             GET what undoing its work does, POST revoke and undo
    /settings/pending                    GET writes waiting for approval, POST approve/reject
    /settings/rules                      GET the owner's rules for agents, POST save them
    /settings/activity                   GET every change (filters), POST undo one
    /settings/webhook...                 the webhook, its secret and its deliveries
    /settings/calendars                  GET calendars + upcoming events, POST new calendar
    /settings/sharing[/remove]           POST share free/busy with an owner, or stop
    /settings/events/new, /events/{id}   the event form: create, edit, delete
    /settings/feeds                      GET feeds + create form, POST create (URL shown once)
    /settings/feeds/{id}                 GET the feed's fetch history
    /settings/feeds/{id}/revoke          GET confirmation, POST revoke
    /settings/links                      GET every scheduling link of the owner's keys
    /settings/links/{id}/revoke          POST revoke one (its page stops at once)
    /settings/connections                GET connected calendars + add form, POST add an address
    /settings/connections/{id}/sync|remove  POST read it now, or remove it
    /settings/connect/{id}               GET an app's OAuth request, POST allow or deny (mcp)
    /settings/static/...                 this app's CSS, icon and copy-button script (public)

Jinja2 templates, no JavaScript needed (one small script adds copy buttons), nothing loaded
from elsewhere. See docs/settings.md for the decisions behind sessions, CSRF and throttling.

    web.py            the pages' plumbing: their app (``pages_app``), templates, cookies, the
                      signed-in owner, CSRF, errors
    signin.py         signing in and out (the throttle and the sessions are the core's:
                      ``calendar_service.access.signin``,
                      ``calendar_service.access.owner_sessions``)
    keys_pages.py     the API keys: list, create, revoke
    key_work_pages.py a key's approval setting, and undoing its work since a time
    pending_pages.py  the writes that wait for the owner's approval: approve, reject
    rules_pages.py    the owner's rules for agents, and the keys they do not bind
    activity_pages.py every change, with ``changes_view.py``'s before/after view, and undo
    history_pages.py  a key's call history, with ``chart.py``'s calls per day (inline SVG)
    webhook_pages.py  the webhook, its secret, test events and deliveries
    calendar_pages.py the calendars and the event form, with ``repeats.py`` for a series' rule
    sharing_pages.py  sharing the owner's free/busy with other owners (on the calendars page)
    feed_pages.py     a calendar's iCalendar subscription feeds
    connection_pages.py connected calendars: add an address, status, sync now, remove
    consent_pages.py  OAuth consent for remote MCP: the owner allows or denies an app
    links_pages.py    the owner's scheduling links: list, revoke
    booking_pages.py  a scheduling link's public page, mounted at ``/book`` (no sign-in)
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account import (
    activity_pages,
    calendar_pages,
    connection_pages,
    consent_pages,
    feed_pages,
    history_pages,
    key_work_pages,
    keys_pages,
    links_pages,
    pending_pages,
    rules_pages,
    sharing_pages,
    signin,
    webhook_pages,
)
from calendar_service.account.web import (
    HERE,
    owner_page,
    pages_app,
    root,
)
from calendar_service.asgi.context import Services


@owner_page
async def home(request: Request, owner: OwnerSessionInfo) -> Response:
    return RedirectResponse(root(request) + "/keys", 303)


def account_routes() -> list[BaseRoute]:
    """Every settings route (the tests walk this list to check each one refuses strangers)."""
    return [
        Route("/", home, methods=["GET"]),
        *signin.routes(),
        *keys_pages.routes(),
        *key_work_pages.routes(),
        *pending_pages.routes(),
        *rules_pages.routes(),
        *activity_pages.routes(),
        *history_pages.routes(),
        *webhook_pages.routes(),
        *connection_pages.routes(),
        *calendar_pages.routes(),
        *sharing_pages.routes(),
        *feed_pages.routes(),
        *links_pages.routes(),
        *consent_pages.routes(),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]


def create_account_app(services: Services) -> Starlette:
    """The settings pages as an ASGI app, to be mounted at ``/settings``."""
    return pages_app(account_routes(), services)


__all__ = ["account_routes", "create_account_app"]
