"""The last line of error handling, around the whole app and around the settings sub-app.

Two things reach it that no exception handler took:

- A client that went away before sending its whole body (Starlette's ``ClientDisconnect``,
  raised wherever a body is read: the REST create and update, the settings forms, MCP). It is
  not an error: there is nobody to answer, nothing was done, and nothing is recorded, not even
  in the call history of a key it presented. One line at DEBUG.
- Anything else is a bug: logged once, at ERROR, with the request id and the traceback's frames
  (not the exception's text, which may quote a caller's data), and answered by ``respond``
  (problem details, or the settings' error page) as a normal 500 on a connection that stays
  open. Starlette's own last handler sends its 500 and then re-raises, so uvicorn logs the
  error a second time and drops the connection under the client's next request; nothing gets
  past this one except an error after the answer began, which can only be cut off.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from calendar_service.asgi.middleware import HttpMiddleware
from calendar_service.platform.logs import WITHHOLD_EXCEPTION_TEXT

log = logging.getLogger("calendar_service.asgi")

Respond = Callable[[Request, Exception], Awaitable[Response]]


def _request_id(scope: Scope) -> str:
    return str(scope.get("state", {}).get("request_id", ""))


_FEED_TOKEN = re.compile(r"^/ical/[^/]*")
# A scheduling link's token and a booking's manage token (page and API): their only secret.
_BOOK_TOKEN = re.compile(r"^(/api/v1)?/book/(manage/)?[^/]*")


def loggable_path(path: str) -> str:
    """The path as it may be logged: a feed's token (``/ical/<token>.ics``, the feed's only
    credential) and a scheduling link's or booking's token (``/book/<token>``) are left out."""
    path = _BOOK_TOKEN.sub(lambda m: f"{m.group(1) or ''}/book/{m.group(2) or ''}<token>", path)
    return _FEED_TOKEN.sub("/ical/<token>", path)


class AnswerCutOff(Exception):
    """Raised to have the server drop a connection whose answer an error interrupted (the
    error itself was logged just before)."""


class ErrorBoundary(HttpMiddleware):
    """ASGI middleware: a client gone is a debug line; an unhandled error a logged 500."""

    def __init__(self, app: ASGIApp, *, respond: Respond) -> None:
        super().__init__(app)
        self.respond = respond

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracked)
        except ClientDisconnect:
            log.debug(
                "client went away before sending the whole request: %s %s (request %s)",
                scope["method"],
                loggable_path(scope["path"]),
                _request_id(scope),
            )
        except Exception as exc:
            log.error(
                "unhandled %s in %s %s (request %s)",
                type(exc).__name__,
                scope["method"],
                loggable_path(scope["path"]),
                _request_id(scope),
                exc_info=exc,
                extra={WITHHOLD_EXCEPTION_TEXT: True},
            )
            if started:  # half an answer is out: only closing the connection can end it
                rid = _request_id(scope)
                raise AnswerCutOff(f"answer to request {rid} cut off by the error above") from None
            response = await self.respond(Request(scope, receive), exc)
            await response(scope, receive, send)


__all__ = ["AnswerCutOff", "ErrorBoundary", "Respond"]
