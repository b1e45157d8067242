"""``GET /ical/<token>.ics``: a calendar's subscription feed, for calendar apps.

Not under ``/api/v1`` and not a keyed operation: the token in the URL is the credential
(calendar apps send no headers). The core checks it and answers and records the fetch
(``ical.feeds.fetch_feed``); this module makes the HTTP answer. A revoked, unknown or
malformed token is a plain 404. ``ETag``/``If-None-Match`` spare apps that poll often the
body when nothing changed (304). Each fetch of an existing feed, 304 and 404 included, is in
the feed's history: time, status, events served, client address and user agent (never the
URL, which holds the token).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import services
from calendar_service.interop.ical.feeds import FEED_PATH, RenderedFeeds, fetch_feed
from calendar_service.platform.timeutil import utcnow

MEDIA_TYPE = "text/calendar; charset=utf-8"
_HEADERS = {
    # Revalidate every time (the ETag makes that cheap); private: the URL is a secret.
    "Cache-Control": "private, no-cache",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}


async def calendar_feed(request: Request) -> Response:
    state = request.app.state
    cache: RenderedFeeds | None = getattr(state, "rendered_feeds", None)
    if cache is None:
        cache = state.rendered_feeds = RenderedFeeds()
    fetched = await fetch_feed(
        db=services(request).db,
        token=request.path_params["token"],
        now=utcnow(),
        if_none_match=request.headers.get("if-none-match"),
        client_addr=request.client.host if request.client else None,
        user_agent=request.headers.get("user-agent"),
        cache=cache,
    )
    headers = {**_HEADERS, "ETag": fetched.rendered.etag}
    if fetched.status == 304:
        return Response(status_code=304, headers=headers)
    headers["Content-Disposition"] = 'inline; filename="calendar.ics"'
    return Response(fetched.rendered.body, 200, headers, MEDIA_TYPE)


def routes() -> list[BaseRoute]:
    return [Route(FEED_PATH, calendar_feed, methods=["GET"])]
