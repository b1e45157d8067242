"""The calendar feeds page: a calendar's iCalendar subscription feeds (list, create with the
URL shown once, revoke with confirmation) and each feed's fetch history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import (
    FormPage,
    account,
    form,
    owner_get,
    owner_page,
    owner_post,
    render,
    see_other,
)
from calendar_service.calendar import calendars, reminders
from calendar_service.interop.ical import feeds
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utcnow

NOTICES = {
    "feed-revoked": "The feed is revoked: its address now answers 404.",
    "reminder-set": "Saved: feeds carry the reminder from their next fetch.",
}


def _page_data(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    owned = calendars.list_owner_calendars(conn, user_id=user_id)
    return {
        "feeds": feeds.list_feeds(conn, user_id=user_id),
        "calendars": [calendars.calendar_public(c) for c in owned],
        "reminder": reminders.get_reminder(conn, user_id=user_id),
    }


PAGE = FormPage(
    template="feeds.html",
    section="feeds",
    load=_page_data,
    blank={"calendar": ""},
    notices=NOTICES,
    names={"calendarId": "calendar", "minutesBefore": "minutes_before"},
)


@owner_page
async def create_feed(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    values = {"calendar": str(data.get("calendar", ""))}
    svc = account(request).services
    try:
        feed = await svc.db.run(
            feeds.create_feed,
            user_id=owner.user_id,
            calendar_id=values["calendar"],
            base_url=svc.config.base_url,
            now=utcnow(),
        )
    except ValidationFailed as exc:
        return await PAGE.show(request, owner, values=values, refused=exc)
    # Shown in the POST's own response only (the token is not stored), as a key's secret is.
    return render(request, "feed_created.html", {"section": "feeds", "feed": feed}, status_code=201)


@owner_page
async def set_reminder(request: Request, owner: OwnerSessionInfo) -> Response:
    """The owner's default reminder (empty: none), which feeds carry as a VALARM."""
    wanted = str((await form(request)).get("minutes_before", "")).strip()
    try:
        await account(request).services.db.run(
            reminders.set_reminder, user_id=owner.user_id, minutes_before=wanted, now=utcnow()
        )
    except ValidationFailed as exc:
        values = {"calendar": "", "minutes_before": wanted}
        return await PAGE.show(request, owner, values=values, refused=exc)
    return see_other(request, "/feeds", notice="reminder-set")


def _load(conn: Connection, *, user_id: str, feed_id: str) -> dict[str, Any]:
    feed = feeds.get_feed(conn, user_id=user_id, feed_id=feed_id)
    feed["history"] = feeds.list_fetches(conn, user_id=user_id, feed_id=feed_id, limit=200)
    return feed


def routes() -> list[BaseRoute]:
    return [
        PAGE.route("/feeds"),
        Route("/feeds", create_feed, methods=["POST"]),
        Route("/feeds/reminder", set_reminder, methods=["POST"]),
        owner_get("/feeds/{feed_id}", _load, template="feed.html", section="feeds"),
        owner_get(
            "/feeds/{feed_id}/revoke", feeds.get_feed, template="feed_revoke.html", section="feeds"
        ),
        owner_post(
            "/feeds/{feed_id}/revoke", feeds.revoke_feed, back="/feeds", notice="feed-revoked"
        ),
    ]
