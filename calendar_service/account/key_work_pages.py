"""A key's work, governed from its page: which of its writes wait for the owner (its
``approval``), and undoing what it did since a time, revoking it in the same click.

``/keys/{id}/undo`` shows what undoing the key's changes since a time does (the core's
``events.undo.undo_changes_of``, run and rolled back: exactly what the button will do, the
changes undone and those refused) and offers to revoke the key with it; its POST revokes the
key (if asked) and undoes, in one transaction, as the owner through ``settings``. So a key
that misbehaves is stopped and its work undone in two clicks from the keys page: *Undo work*,
then *Revoke and undo*.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from calendar_service import calendars, keys
from calendar_service.account.changes_view import KINDS, title_of
from calendar_service.account.web import account, form, owner_page, render, see_other
from calendar_service.asgi.context import request_id
from calendar_service.changes.record import Via
from calendar_service.changes.table import OWNER
from calendar_service.db import rolled_back
from calendar_service.events.undo import undo_changes_of
from calendar_service.owner_sessions import OwnerSessionInfo
from calendar_service.timeutil import format_utc, utcnow

# How far back the page undoes: its choices, and "since the key was made".
SINCE_CHOICES = (
    ("1h", "The last hour", timedelta(hours=1)),
    ("24h", "The last 24 hours", timedelta(days=1)),
    ("7d", "The last 7 days", timedelta(days=7)),
    ("30d", "The last 30 days", timedelta(days=30)),
)
EVER = "all"
DEFAULT_SINCE = "24h"


def _since(choice: str, key: dict[str, Any]) -> str:
    """The instant a choice names (RFC 3339), from now; ``EVER``: when the key was made."""
    for value, _, span in SINCE_CHOICES:
        if value == choice:
            return format_utc((utcnow() - span).replace(microsecond=0))
    return format_utc(key["created_at"])


def _key(conn: Connection, *, user_id: str, key_id: str, now: datetime) -> dict[str, Any]:
    row = keys.get_key(conn, user_id=user_id, key_id=key_id)  # another owner's key: 404
    public = keys.key_public(row, now=now)
    public["created_at"] = row["created_at"]
    if public["calendarId"]:
        names = {c.id: c.name for c in calendars.list_owner_calendars(conn, user_id=user_id)}
        public["calendarName"] = names.get(public["calendarId"])
    return public


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    return {
        **item,
        "title": title_of(item["before"], item["after"]),
        "kind_label": KINDS[item["kind"]],
    }


def _undo(
    conn: Connection,
    *,
    user_id: str,
    key_id: str,
    since: str,
    revoke: bool,
    preview: bool,
    via: Via,
    now: datetime,
) -> dict[str, Any]:
    """Revoke the key (if ``revoke``) and undo its changes since ``since``; with ``preview``,
    do it and roll it back (what the button would do)."""
    principal = keys.owner_principal(user_id)

    def work() -> dict[str, Any]:
        if revoke:
            keys.revoke_key(conn, user_id=user_id, key_id=key_id, now=now)
        return undo_changes_of(
            conn, principal=principal, key_id=key_id, since=since, now=now, via=via
        )

    if preview:
        with rolled_back(conn):
            done = work()
    else:
        done = work()
    return {
        "undone": [_shown(c) for c in done["undone"]],
        "refused": [{**r, "change": _shown(r["change"])} for r in done["refused"]],
        "key": _key(conn, user_id=user_id, key_id=key_id, now=now),
    }


def _via(request: Request, owner: OwnerSessionInfo) -> Via:
    return Via(OWNER, owner.user_id, "settings", request_id(request) or None)


@owner_page
async def confirm_undo(request: Request, owner: OwnerSessionInfo) -> Response:
    db = account(request).services.db
    key_id = request.path_params["key_id"]
    key = await db.run(_key, user_id=owner.user_id, key_id=key_id, now=utcnow())
    choice = request.query_params.get("since") or DEFAULT_SINCE
    since = _since(choice, key)
    preview = await db.run(
        _undo,
        user_id=owner.user_id,
        key_id=key_id,
        since=since,
        revoke=False,
        preview=True,
        via=_via(request, owner),
        now=utcnow(),
    )
    return render(
        request,
        "key_undo.html",
        {
            **preview,
            "section": "keys",
            "choice": choice,
            "choices": [(v, label) for v, label, _ in SINCE_CHOICES] + [(EVER, "Ever")],
            "since": since,
        },
    )


@owner_page
async def undo_work(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    key_id = request.path_params["key_id"]
    since = str(data.get("since") or "")
    done = await account(request).services.db.run(
        _undo,
        user_id=owner.user_id,
        key_id=key_id,
        since=since,
        revoke=data.get("revoke") == "yes",
        preview=False,
        via=_via(request, owner),
        now=utcnow(),
    )
    return render(
        request, "key_undone.html", {**done, "section": "keys", "since": since}, status_code=200
    )


@owner_page
async def set_approval(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    key_id = request.path_params["key_id"]
    await account(request).services.db.run(
        keys.set_approval,
        user_id=owner.user_id,
        key_id=key_id,
        approval=str(data.get("approval") or ""),
        now=utcnow(),
    )
    return see_other(request, f"/keys/{key_id}/calls", notice="approval-saved")


def routes() -> list[BaseRoute]:
    return [
        Route("/keys/{key_id}/undo", confirm_undo, methods=["GET"]),
        Route("/keys/{key_id}/undo", undo_work, methods=["POST"]),
        Route("/keys/{key_id}/approval", set_approval, methods=["POST"]),
    ]
