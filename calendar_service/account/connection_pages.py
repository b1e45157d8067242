"""The *Connected calendars* page: the owner's calendars kept elsewhere (docs/connections.md):
each with its status, last sync and events; add an ``ics`` address (checked against the SSRF
rules, sealed at rest), sync now, change what agents may learn (``busy`` or ``details``),
remove.

A CalDAV account is added in two steps: its base URL, username and app password are checked
(the SSRF rules) and its calendars discovered (``Services.discover_caldav``, off this layer);
the page then lists them to pick, carrying what the second step needs as one sealed value
(``platform.sealed``: AES-GCM under the service's key, bound to the owner, for
``PENDING_FOR``), never the password in the clear; the form's password field is never filled
back in."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import orjson
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
from calendar_service.platform.errors import FieldError, ValidationFailed
from calendar_service.platform.sealed import seal, sealing_key, unseal
from calendar_service.platform.timeutil import utcnow

PENDING_FOR = timedelta(minutes=15)
"""How long the calendars found may be picked from before the account is asked again."""

NOTICES = {
    "connection-added": "Connected: it is read within a few seconds, then kept fresh.",
    "connection-syncing": "It is read again within a few seconds: reload to see the result.",
    "connection-removed": "Removed, with its stored address and its copy of the busy time.",
    "caldav-added": "Connected: each calendar picked is read within a few seconds.",
    "visibility-changed": "Changed. Details are read within a few seconds.",
}


def _page_data(conn: Connection, *, user_id: str, now: datetime) -> dict[str, Any]:
    return {"connections": store.list_connections(conn, user_id=user_id)}


PAGE = FormPage(
    template="connections.html",
    section="connections",
    load=_page_data,
    blank={"url": "", "name": "", "visibility": "busy", "caldav_url": "", "username": ""},
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


async def _key(request: Request) -> bytes:
    svc = account(request).services
    return await svc.db.run(
        lambda conn: sealing_key(conn, configured=svc.config.connection_key, now=utcnow())
    )


@owner_page
async def discover_caldav(request: Request, owner: OwnerSessionInfo) -> Response:
    """Step one: the account's calendars found, shown to pick from."""
    data = await form(request)
    values = {
        "form": "caldav",
        "caldav_url": str(data.get("caldav_url", "")),
        "username": str(data.get("username", "")),
        "visibility": str(data.get("visibility", "busy")),
    }
    password = str(data.get("password", ""))
    svc = account(request).services
    try:
        errors = []
        if not values["username"].strip() or len(values["username"]) > 256:
            errors.append(FieldError("username", "must be 1 to 256 characters"))
        if not password or len(password) > 1024:
            errors.append(FieldError("password", "must be the account's app password"))
        if errors:
            raise ValidationFailed(errors)
        url = await asyncio.to_thread(
            store.check_source_url,
            values["caldav_url"],
            allow_local=svc.config.webhook_allow_local,
            resolve=webhook_targets.system_resolve,
            field="caldav_url",
        )
        assert svc.discover_caldav is not None  # given by create_app
        try:
            found = await svc.discover_caldav(url, values["username"].strip(), password)
        except ValidationFailed as exc:
            raise ValidationFailed(
                [FieldError("caldav_url", e["message"]) for e in exc.errors]
            ) from None
    except ValidationFailed as exc:
        return await PAGE.show(request, owner, values=values, refused=exc)
    pending = {
        "owner": owner.user_id,
        "url": url,
        "username": values["username"].strip(),
        "password": password,
        "calendars": found,
        "until": (utcnow() + PENDING_FOR).timestamp(),
    }
    sealed = seal(await _key(request), orjson.dumps(pending).decode())
    picking = {"pending": sealed, "found": [name for _, name in found]}
    return await PAGE.show(request, owner, values=values, context={"picking": picking})


@owner_page
async def add_caldav(request: Request, owner: OwnerSessionInfo) -> Response:
    """Step two: the calendars picked are connected."""
    data = await form(request)
    values = {"form": "caldav", "visibility": str(data.get("visibility", "busy"))}
    try:
        pending = orjson.loads(unseal(await _key(request), str(data.get("pending", ""))))
    except (ValueError, orjson.JSONDecodeError):
        pending = None
    if (
        not isinstance(pending, dict)
        or pending.get("owner") != owner.user_id
        or pending.get("until", 0) < utcnow().timestamp()
    ):
        refused = ValidationFailed(
            [FieldError("caldav_url", "the calendars found have expired: look them up again")]
        )
        return await PAGE.show(request, owner, values=values, refused=refused)
    found = [store.Picked(url, name) for url, name in pending["calendars"]]
    chosen = {str(v) for v in data.getlist("calendar")}
    picked = [f for i, f in enumerate(found) if str(i) in chosen]
    svc = account(request).services
    try:
        if not picked:
            raise ValidationFailed([FieldError("calendar", "pick at least one calendar")])

        def add(conn: Connection) -> list[dict[str, Any]]:
            key = sealing_key(conn, configured=svc.config.connection_key, now=utcnow())
            return store.add_caldav(
                conn,
                user_id=owner.user_id,
                url=pending["url"],
                username=pending["username"],
                password=pending["password"],
                calendars=picked,
                visibility=values["visibility"],
                key=key,
                now=utcnow(),
            )

        await svc.db.run(add)
    except ValidationFailed as exc:
        picking = {"pending": str(data.get("pending", "")), "found": [f.name for f in found]}
        return await PAGE.show(
            request, owner, values=values, refused=exc, context={"picking": picking}
        )
    return see_other(request, "/connections", notice="caldav-added")


def _remove(conn: Connection, *, user_id: str, connection_id: str, now: datetime) -> None:
    store.remove_connection(conn, user_id=user_id, connection_id=connection_id, now=now)


def routes() -> list[BaseRoute]:
    change_visibility = owner_action(
        store.set_visibility,
        param="connection_id",
        fields=("visibility",),
        back="/connections",
        notice="visibility-changed",
    )
    sync = owner_action(
        store.request_sync, param="connection_id", back="/connections", notice="connection-syncing"
    )
    remove = owner_action(
        _remove, param="connection_id", back="/connections", notice="connection-removed"
    )
    return [
        PAGE.route("/connections"),
        Route("/connections", add_ics, methods=["POST"]),
        Route("/connections/caldav/discover", discover_caldav, methods=["POST"]),
        Route("/connections/caldav", add_caldav, methods=["POST"]),
        Route("/connections/{connection_id}/visibility", change_visibility, methods=["POST"]),
        Route("/connections/{connection_id}/sync", sync, methods=["POST"]),
        Route("/connections/{connection_id}/remove", remove, methods=["POST"]),
    ]
