"""*Pending*: the writes of keys and connected apps that wait for the owner's approval (keys
made with ``approval`` ``destructive`` or ``all``), each with the event before and after and
*Approve* / *Reject*; below, those decided lately.

Deciding is the core's (``governance.approving.approve``, ``governance.proposals.reject``), called
as the owner in person through ``settings``: an approval makes exactly the change shown, if the
event is still as it was (else the proposal fails, and the page says why).
"""

from __future__ import annotations

import functools
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.changes_view import KINDS, diff, title_of
from calendar_service.account.web import account, owner_page, owner_post, render
from calendar_service.governance import proposals
from calendar_service.governance.approving import approve
from calendar_service.platform.timeutil import utcnow

DECIDED_SHOWN = 30
NOTICES = {
    "approved": "Approved: the change is made, as it was proposed.",
    "failed": "Not made: the event changed since the change was proposed, or it breaks your "
    "rules for agents now (see below). The key may propose it again.",
    "rejected": "Rejected: nothing was changed.",
}


def _shown(proposal: dict[str, Any]) -> dict[str, Any]:
    return {
        **proposal,
        "title": title_of(proposal["before"], proposal["after"]),
        "kind_label": KINDS[proposal["kind"]],
        "rows": diff(proposal["before"], proposal["after"]),
        "entries": [
            {**c, "title": title_of(c["before"], c["after"]), "kind_label": KINDS[c["kind"]]}
            for c in proposal.get("changes") or []
        ],
    }


def _page(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    pending = proposals.list_proposals(conn, user_id=user_id, now=now, status=proposals.PENDING)
    every = proposals.list_proposals(conn, user_id=user_id, now=now, limit=DECIDED_SHOWN * 2)
    decided = [p for p in every["proposals"] if p["status"] != proposals.PENDING]
    return {
        "pending": [_shown(p) for p in pending["proposals"]],
        "decided": [_shown(p) for p in decided[:DECIDED_SHOWN]],
    }


@owner_page
async def pending_page(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await account(request).services.db.run(_page, user_id=owner.user_id, now=utcnow())
    return render(
        request,
        "pending.html",
        {
            **data,
            "section": "pending",
            "notice": NOTICES.get(request.query_params.get("notice", "")),
        },
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/pending", pending_page, methods=["GET"]),
        owner_post(
            "/pending/{proposal_id}/approve",
            functools.partial(approve, transport="settings"),
            back="/pending",
            notice=itemgetter("status"),
        ),
        owner_post(
            "/pending/{proposal_id}/reject",
            functools.partial(proposals.reject, transport="settings"),
            back="/pending",
            notice="rejected",
        ),
    ]
