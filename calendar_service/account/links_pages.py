"""The owner's scheduling links: every link their keys made, each revocable at once
(``calendar.links``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import account, owner_page, owner_post, render
from calendar_service.calendar import links
from calendar_service.platform.timeutil import utcnow

NOTICES = {"link-revoked": "Link revoked: its page takes no more bookings."}


@owner_page
async def links_page(request: Request, owner: OwnerSessionInfo) -> Response:
    found = await account(request).services.db.run(
        links.owner_links, user_id=owner.user_id, now=utcnow()
    )
    notice = NOTICES.get(request.query_params.get("notice", ""))
    return render(
        request, "links.html", {"links": found, "section": "links", "notice": notice}, owner=owner
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/links", links_page, methods=["GET"]),
        owner_post(
            "/links/{link_id}/revoke", links.revoke_link, back="/links", notice="link-revoked"
        ),
    ]
