"""*Activity*: every change to the owner's events, newest first, filtered by key or app,
calendar, event and time (from one day to another, both included, UTC), each with its
before/after view and an *Undo* button.

The list and the undo are the core's (``governance.change_list.list_changes``,
``governance.undo.undo_change``), called as the owner in person: an undo made here is the owner's
change, through ``settings``. An event's own history is this page filtered by it
(``?event=ID``), linked from the event's page.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import keys
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.changes_view import KINDS, diff, title_of
from calendar_service.account.web import account, form, owner_page, render, see_other
from calendar_service.asgi.context import request_id
from calendar_service.calendar import calendars
from calendar_service.governance.change_list import list_changes
from calendar_service.governance.undo import undo_change
from calendar_service.journal.change_record import Via
from calendar_service.journal.change_table import OWNER
from calendar_service.platform import service_secrets
from calendar_service.platform.errors import ChangedSince, FieldError, ValidationFailed
from calendar_service.platform.timeutil import utcnow

PAGE_SIZE = 50
NOTICES = {
    "undone": "Undone: the event is back as it was before that change (the undo is listed "
    "first, and can be undone in its turn).",
}
_FILTERS = ("key", "calendar", "event", "since", "until")
_LABELS = {"since": "From", "until": "To", "page": "Page"}


def _filters(request: Request) -> dict[str, str]:
    return {name: request.query_params.get(name, "").strip() for name in _FILTERS}


def _page(
    conn: Connection,
    *,
    user_id: str,
    filters: dict[str, str],
    page_token: str | None,
    now: datetime,
) -> dict[str, Any]:
    principal = keys.owner_principal(user_id)
    token_key = service_secrets.page_token_key(conn, now=now)
    found = list_changes(
        conn,
        principal=principal,
        since=filters["since"] or None,
        before=_day_after(filters["until"]),
        event_id=filters["event"] or None,
        calendar_id=filters["calendar"] or None,
        actor_id=filters["key"] or None,
        limit=PAGE_SIZE,
        page_token=page_token,
        token_key=token_key,
    )
    owned = calendars.list_owner_calendars(conn, user_id=user_id)
    return {
        "changes": [_shown(c) for c in found["changes"]],
        "older": found.get("nextPageToken"),
        "keys": keys.list_keys(conn, user_id=user_id, now=now),
        "calendars": [calendars.calendar_public(c) for c in owned],
        "calendar_names": {c.id: c.name for c in owned},
    }


def _day_after(until: str) -> str | None:
    """``until`` (a day, ``YYYY-MM-DD``, included) as the list's ``before``: the next day."""
    if not until:
        return None
    try:
        day = date.fromisoformat(until)
    except ValueError:
        raise ValidationFailed([FieldError("until", "must be a day: YYYY-MM-DD")]) from None
    if day >= date.max:
        return None
    return (day + timedelta(days=1)).isoformat()


def _shown(change: dict[str, Any]) -> dict[str, Any]:
    """A change with what the page shows of it: its title, kind in words, the view."""
    return {
        **change,
        "title": title_of(change["before"], change["after"]),
        "kind_label": KINDS[change["kind"]],
        "rows": diff(change["before"], change["after"]),
    }


@owner_page
async def activity_page(request: Request, owner: OwnerSessionInfo) -> Response:
    filters = _filters(request)
    try:
        data = await account(request).services.db.run(
            _page,
            user_id=owner.user_id,
            filters=filters,
            page_token=request.query_params.get("page") or None,
            now=utcnow(),
        )
    except ValidationFailed as exc:  # a bad date, or a page of other filters
        data = await account(request).services.db.run(
            _page,
            user_id=owner.user_id,
            filters={**filters, "since": "", "until": ""},
            page_token=None,
            now=utcnow(),
        )
        data["refused"] = (
            "; ".join(f"{_LABELS.get(e['field'], e['field'])}: {e['message']}" for e in exc.errors)
            or exc.message
        )
    return render(
        request,
        "activity.html",
        {
            "refused": None,
            **data,
            "section": "activity",
            "filters": filters,
            "paged": bool(request.query_params.get("page")),
            "notice": NOTICES.get(request.query_params.get("notice", "")),
        },
    )


@owner_page
async def undo(request: Request, owner: OwnerSessionInfo) -> Response:
    change_id = request.path_params["change_id"]
    data = await form(request)
    force = data.get("force") == "true"
    via = Via(OWNER, owner.user_id, "settings", request_id(request) or None)
    try:
        await account(request).services.db.run(
            undo_change,
            principal=keys.owner_principal(owner.user_id),
            change_id=change_id,
            now=utcnow(),
            force=force,
            via=via,
        )
    except ChangedSince as exc:
        return render(
            request,
            "change_undo.html",
            {"section": "activity", "change_id": change_id, "message": exc.message},
            status_code=409,
        )
    kept = {name: str(data.get(name) or "") for name in _FILTERS}  # the filters shown
    return see_other(request, "/activity", **kept, notice="undone")


def routes() -> list[BaseRoute]:
    return [
        Route("/activity", activity_page, methods=["GET"]),
        Route("/activity/{change_id}/undo", undo, methods=["POST"]),
    ]
