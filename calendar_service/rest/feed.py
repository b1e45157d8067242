"""``GET /ical/<token>.ics``: a calendar's subscription feed, for calendar apps.

Not under ``/api/v1`` and not a keyed operation: the token in the URL is the credential
(calendar apps send no headers), checked by the core (``ical.feeds``). A revoked, unknown or
malformed token is a plain 404. ``ETag``/``If-None-Match`` spare apps that poll often the
body when nothing changed (304). Each fetch of an existing feed, 304 and 404 included, is in
the feed's history: time, status, events served, client address and user agent (never the
URL, which holds the token).
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import services
from calendar_service.errors import NotFound
from calendar_service.ical.export import Rendered, render_calendar
from calendar_service.ical.feeds import FEED_PATH, FeedRow, feed_content, open_feed, record_fetch
from calendar_service.timeutil import utcnow

MEDIA_TYPE = "text/calendar; charset=utf-8"
_HEADERS = {
    # Revalidate every time (the ETag makes that cheap); private: the URL is a secret.
    "Cache-Control": "private, no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}


def etag_matches(header: str | None, etag: str) -> bool:
    """``If-None-Match`` (RFC 9110 13.1.2, weak comparison) names ``etag``, or is ``*``."""
    if not header:
        return False
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


async def calendar_feed(request: Request) -> Response:
    svc = services(request)
    token = request.path_params["token"]
    now = utcnow()
    feed, version = await svc.db.run(open_feed, token=token, now=now)
    client = request.client

    async def record(status: int, events: int = 0) -> None:
        await svc.db.run(
            record_fetch,
            feed_id=feed.id,
            at=now,
            status=status,
            events=events,
            client_addr=client.host if client else None,
            user_agent=request.headers.get("user-agent"),
        )

    if version is None:  # revoked: the owner still sees that something asks for it
        await record(404)
        raise NotFound("No such feed.")
    rendered = await _rendered(request, feed, version, now)
    headers = {**_HEADERS, "ETag": rendered.etag}
    if etag_matches(request.headers.get("if-none-match"), rendered.etag):
        await record(304)
        return Response(status_code=304, headers=headers)
    await record(200, rendered.events)
    headers["Content-Disposition"] = 'inline; filename="calendar.ics"'
    return Response(rendered.body, 200, headers, MEDIA_TYPE)


class RenderedFeeds:
    """The last text rendered of each calendar's feed, with the version it was rendered at
    (``export.version_of``): apps poll often and rendering a big calendar takes a while, so
    it is rendered again only when the version moved. In memory, per process, bounded."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[tuple[Any, ...], Rendered]] = OrderedDict()

    def get(self, calendar_id: str, version: tuple[Any, ...]) -> Rendered | None:
        found = self._items.get(calendar_id)
        if found is None or found[0] != version:
            return None
        self._items.move_to_end(calendar_id)
        return found[1]

    def put(self, calendar_id: str, version: tuple[Any, ...], rendered: Rendered) -> None:
        self._items[calendar_id] = (version, rendered)
        self._items.move_to_end(calendar_id)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


async def _rendered(
    request: Request, feed: FeedRow, version: tuple[Any, ...], now: datetime
) -> Rendered:
    state = request.app.state
    cache: RenderedFeeds | None = getattr(state, "rendered_feeds", None)
    if cache is None:
        cache = state.rendered_feeds = RenderedFeeds()
    assert feed.calendar is not None  # a feed with a version: live, its calendar there
    rendered = cache.get(feed.calendar.id, version)
    if rendered is None:
        # Read after the version: what is rendered is at least as new as what it is kept for.
        content = await services(request).db.run(feed_content, feed=feed, now=now)
        rendered = await run_in_threadpool(render_calendar, content)  # off the event loop
        cache.put(feed.calendar.id, version, rendered)
    return rendered


def routes() -> list[BaseRoute]:
    return [Route(FEED_PATH, calendar_feed, methods=["GET"])]
