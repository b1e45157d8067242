"""The *Connected calendars* page: the owner's calendars kept elsewhere (docs/connections.md):
each with its status, last sync and events; add an ``ics`` address (checked against the SSRF
rules, sealed at rest), sync now, remove. CalDAV accounts are added with the CLI
(``connections add-caldav``), which discovers their calendars; they are listed and managed
here like the rest."""

from __future__ import annotations

import asyncio
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
    owner_action,
    owner_page,
    see_other,
)
from calendar_service.delivery import connections as store
from calendar_service.delivery import webhook_targets
from calendar_service.platform.errors import ValidationFailed
from calendar_service.platform.sealed import sealing_key
from calendar_service.platform.timeutil import utcnow

NOTICES = {
    "connection-added": "Connected: it is read within a few seconds, then kept fresh.",
    "connection-syncing": "It is read again within a few seconds: reload to see the result.",
    "connection-removed": "Removed, with its stored address and its copy of the busy time.",
}


def _page_data(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    return {"connections": store.list_connections(conn, user_id=user_id)}


PAGE = FormPage(
    template="connections.html",
    section="connections",
    load=_page_data,
    blank={"url": "", "name": "", "visibility": "busy"},
    notices=NOTICES,
    names={},
)


@owner_page
async def add_ics(request: Request, owner: OwnerSessionInfo) -> Response:
    data = await form(request)
    values = {
        "url": str(data.get("url", "")),
        "name": str(data.get("name", "")),
        "visibility": str(data.get("visibility", "busy")),
    }
    svc = account(request).services
    try:
        url = await asyncio.to_thread(  # the host is resolved: not on the event loop
            store.check_source_url,
            values["url"],
            allow_local=svc.config.webhook_allow_local,
            resolve=webhook_targets.system_resolve,
        )

        def add(conn: Connection) -> dict[str, Any]:
            key = sealing_key(conn, configured=svc.config.connection_key, now=utcnow())
            return store.add_ics(
                conn,
                user_id=owner.user_id,
                url=url,
                name=values["name"].strip() or None,
                visibility=values["visibility"],
                key=key,
                now=utcnow(),
            )

        await svc.db.run(add)
    except ValidationFailed as exc:
        values["url"] = ""  # a secret address is not sent back into the page
        return await PAGE.show(request, owner, values=values, refused=exc)
    return see_other(request, "/connections", notice="connection-added")


def _remove(conn: Connection, *, user_id: str, connection_id: str, now: datetime) -> None:
    store.remove_connection(conn, user_id=user_id, connection_id=connection_id)


def routes() -> list[BaseRoute]:
    sync = owner_action(
        store.request_sync, param="connection_id", back="/connections", notice="connection-syncing"
    )
    remove = owner_action(
        _remove, param="connection_id", back="/connections", notice="connection-removed"
    )
    return [
        PAGE.route("/connections"),
        Route("/connections", add_ics, methods=["POST"]),
        Route("/connections/{connection_id}/sync", sync, methods=["POST"]),
        Route("/connections/{connection_id}/remove", remove, methods=["POST"]),
    ]
