"""The API keys page: list, create (the secret is shown once), revoke with confirmation."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service.access import keys
from calendar_service.access.owner_sessions import OwnerSessionInfo
from calendar_service.account.web import (
    FormPage,
    account,
    form,
    owner_get,
    owner_page,
    owner_post,
    render,
)
from calendar_service.calendar import calendars
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.timeutil import utcnow

NOTICES = {
    "key-revoked": "The key is revoked: any request made with it is now refused.",
}
# Who revoked a key (keys.REVOKED_BY_*), after its "Revoked" badge.
REVOKED_BY = {
    keys.REVOKED_BY_OWNER: "by you",
    keys.REVOKED_BY_APP: "by the app itself",
    keys.REVOKED_BY_REUSE: "by the service: a used code or token was presented again",
    keys.REVOKED_BY_CALENDAR: "with its calendar",
}
# The core names fields as the API does; the form names them as the page does.
_FORM_FIELDS = {"expiresAt": "expires", "calendarId": "calendar"}


# The key form's values before anything is typed; the app password form's: what a calendar
# app needs (it shows and edits events), for a year, all calendars.
KEY_BLANK = {"permission": keys.READ, "expires": "30d", "calendar": "", "approval": "none"}
APP_PASSWORD_BLANK = {"permission": keys.WRITE, "expires": "365d", "calendar": ""}


def _page_data(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    owned = calendars.list_owner_calendars(conn, user_id=user_id)
    return {
        "keys": keys.list_keys(conn, user_id=user_id, now=now),
        "calendars": [calendars.calendar_public(c) for c in owned],
        "calendar_names": {c.id: c.name for c in owned},
    }


PAGE = FormPage(
    template="keys.html",
    section="keys",
    load=_page_data,
    blank=KEY_BLANK,
    notices=NOTICES,
    names=_FORM_FIELDS,
    extra=lambda: {
        "expiry_choices": keys.LIFETIME_CHOICES,
        "revoked_by": REVOKED_BY,
        "blank": KEY_BLANK,
        "app_blank": APP_PASSWORD_BLANK,
    },
)


@owner_page
async def create_key(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    values = {
        name: str(data.get(name, ""))
        for name in (
            "name",
            "permission",
            "expires",
            "expires_on",
            "calendar",
            "approval",
            "may_invite",
            "rules",
        )
    }
    values["app_password"] = "yes" if data.get("app_password") else ""
    now = utcnow()
    try:
        expires_at = keys.chosen_expiry(
            choice=values["expires"], on_date=values["expires_on"], now=now
        )
        record, secret = await account(request).services.db.run(
            keys.create_key,
            user_id=owner.user_id,
            name=values["name"],
            permission=values["permission"],
            expires_at=expires_at,
            calendar_id=values["calendar"] or None,
            now=now,
            approval=values["approval"] or keys.APPROVAL_NONE,
            may_invite=values["may_invite"] == "yes",
            app_password=bool(values["app_password"]),
            rules=values["rules"] or keys.RULES_BOUND,
        )
    except ValidationFailed as exc:
        return await PAGE.show(request, owner, values=values, refused=exc)
    # Rendered in the POST's own response (never redirected to, never stored): reloading
    # cannot show it again, and Cache-Control: no-store keeps it out of the browser's cache.
    return render(
        request,
        "key_created.html",
        {"section": "keys", "key": record, "secret": secret},
        status_code=201,
    )


def _load_key(conn: Connection, *, user_id: str, key_id: str) -> dict[str, Any]:
    keys.get_key(conn, user_id=user_id, key_id=key_id)  # another owner's key: 404
    listed = keys.list_keys(conn, user_id=user_id, now=utcnow())
    public = next(k for k in listed if k["id"] == key_id)
    names = {c.id: c.name for c in calendars.list_owner_calendars(conn, user_id=user_id)}
    public["calendarName"] = names.get(public["calendarId"]) if public["calendarId"] else None
    return public


def routes() -> list[BaseRoute]:
    return [
        PAGE.route("/keys"),
        Route("/keys", create_key, methods=["POST"]),
        owner_get("/keys/{key_id}/revoke", _load_key, template="key_revoke.html", section="keys"),
        owner_post("/keys/{key_id}/revoke", keys.revoke_key, back="/keys", notice="key-revoked"),
    ]
