"""Sharing the owner's free/busy with other owners (by email), on the *Calendars* page: they
may then take the owner among the ``attendees`` of their ``findFreeTime`` (``sharing``).
Busy times only, never titles."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import account, form, owner_page, see_other
from calendar_service.calendar import sharing
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utcnow

NOTICES = {
    "shared": "Shared: they may now count your busy times when they look for a time.",
    "unshared": "No longer shared.",
    "share-refused": "Not shared: give the email address of the owner to share with (not "
    "your own).",
}


@owner_page
async def share(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    try:
        await account(request).services.db.run(
            sharing.share, user_id=owner.user_id, email=str(data.get("email") or ""), now=utcnow()
        )
    except ValidationFailed:
        return see_other(request, "/calendars", notice="share-refused")
    return see_other(request, "/calendars", notice="shared")


@owner_page
async def unshare(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    await account(request).services.db.run(
        sharing.stop_sharing, user_id=owner.user_id, email=str(data.get("email") or "")
    )
    return see_other(request, "/calendars", notice="unshared")


def routes() -> list[BaseRoute]:
    return [
        Route("/sharing", share, methods=["POST"]),
        Route("/sharing/remove", unshare, methods=["POST"]),
    ]
