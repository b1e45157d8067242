"""Replies to invitations: the reply links' page and the inbound mail endpoint.

``GET /invitations/reply?t=…&r=accepted`` shows the invitation (the event's title, its time in
words in its calendar's zone, where, the organizer: ``mail.replies.invitation``, every value
escaped), what the link would record and a button;
``POST`` (the button) records it (``mail.replies.apply_link``) and says what was recorded.
A GET records nothing: mail scanners follow links. No sign-in: the signed token is the
attendee's. A forged, altered or outdated link is answered 400 with why, nothing changed.

``POST /api/v1/inbound/mail``: a raw RFC 5322 message (an iMIP ``REPLY``), as mail providers'
inbound webhooks post it, authenticated with ``Authorization: Bearer
<CALENDAR_INBOUND_SECRET>`` (compared with ``hmac.compare_digest``), at most 10 MB; answers
the reply recorded (``mail.replies.apply_inbound``), or a problem saying why not. A reply
older than the one last recorded for that attendee is answered 200 too, ``outcome: "older"``
and ``changed: false`` (a mail gateway retries or bounces other statuses; there is nothing
to fix in such a message).
"""

from __future__ import annotations

import hmac
import html
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from calendar_service.asgi.context import bearer_token, service_key, services
from calendar_service.delivery.mail import replies
from calendar_service.journal.reply_links import REPLY_PATH, RESPONSES, read_token
from calendar_service.platform import service_secrets
from calendar_service.platform.errors import (
    CalendarError,
    MissingKey,
    NotFound,
    PayloadTooLarge,
    UnknownKey,
)
from calendar_service.platform.timeutil import utcnow

INBOUND_PATH = "/api/v1/inbound/mail"
_WORDS = {"accepted": "Yes, I'll attend", "tentative": "Maybe", "declined": "No, I won't attend"}
_SO_FAR = {
    "needsAction": "none yet",
    "accepted": "attending",
    "tentative": "maybe",
    "declined": "not attending",
}
_HEADERS = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    text = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title></head><body><main><h1>{html.escape(title)}</h1>"
        f"{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


async def reply_page(request: Request) -> Response:
    params = request.query_params
    token, response = params.get("t", ""), params.get("r", "")
    key = await service_key(request, service_secrets.reply_link_key)
    if read_token(key, token) is None or response not in RESPONSES:
        return _page(
            "This link is not valid",
            "<p>It was altered, or not made by this calendar. Nothing was recorded.</p>",
            400,
        )
    try:
        shown = await services(request).db.run(replies.invitation, key=key, token=token)
    except CalendarError as exc:
        return _page("This link cannot be used", f"<p>{html.escape(exc.message)}</p>", exc.status)
    esc = html.escape
    facts = [("Event", shown["title"]), ("When", shown["when"])]
    if shown["recurrence"]:
        facts.append(("Repeats", "; ".join(shown["recurrence"])))
    if shown["location"]:
        facts.append(("Where", shown["location"]))
    facts += [
        ("Organizer", shown["organizer"]),
        ("Your answer so far", _SO_FAR.get(shown["responseStatus"], shown["responseStatus"])),
    ]
    details = "".join(f"<dt>{esc(name)}</dt><dd>{esc(value)}</dd>" for name, value in facts)
    form = (
        f"<p>An invitation to {esc(shown['email'])}:</p><dl>{details}</dl>"
        f'<form method="post" action="{esc(REPLY_PATH)}">'
        f'<input type="hidden" name="t" value="{esc(token, quote=True)}">'
        f'<input type="hidden" name="r" value="{esc(response, quote=True)}">'
        f'<button type="submit">Reply: {esc(_WORDS[response])}</button></form>'
    )
    return _page("Reply to the invitation", form)


async def record_reply(request: Request) -> Response:
    data = await request.form()
    token, response = str(data.get("t") or ""), str(data.get("r") or "")
    try:
        result = await services(request).db.run(
            replies.apply_link,
            key=await service_key(request, service_secrets.reply_link_key),
            token=token,
            response=response,
            now=utcnow(),
        )
    except CalendarError as exc:
        return _page("Nothing was recorded", f"<p>{html.escape(exc.message)}</p>", exc.status)
    said = html.escape(replies.said(result))
    note = "" if result["changed"] else " (it already was)"
    return _page("Reply recorded", f"<p>Recorded: {said}{note}</p>")


async def inbound_mail(request: Request) -> Response:
    config = services(request).config
    secret = config.inbound_secret
    if secret is None:
        raise NotFound("This service takes no inbound mail: CALENDAR_INBOUND_SECRET is not set.")
    given = bearer_token(request)
    if not given:
        raise MissingKey()
    if not hmac.compare_digest(given.encode(), secret.encode()):
        raise UnknownKey()
    length = request.headers.get("content-length")
    too_large = PayloadTooLarge("The message is larger than 10 MB. Nothing was recorded.")
    if length is not None and length.isdigit() and int(length) > replies.MAX_INBOUND_BYTES:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > replies.MAX_INBOUND_BYTES:
            raise too_large
        chunks.append(chunk)
    # Reading a message (up to 10 MB) is off the event loop; recording it, a short write.
    reply = await run_in_threadpool(replies.parse_reply, b"".join(chunks))
    result: dict[str, Any] = await services(request).db.run(
        replies.apply_reply, reply=reply, now=utcnow(), transport="rest"
    )
    return Response(orjson.dumps(result), media_type="application/json", headers=_HEADERS)


def routes() -> list[BaseRoute]:
    return [
        Route(REPLY_PATH, reply_page, methods=["GET"]),
        Route(REPLY_PATH, record_reply, methods=["POST"]),
        Route(INBOUND_PATH, inbound_mail, methods=["POST"]),
    ]
