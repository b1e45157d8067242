"""Refusing a JSON-RPC body with a duplicate key before the MCP SDK reads it.

The SDK decodes bodies with pydantic, which, like most JSON decoders, keeps the last of two
equal keys silently: ``{"title": "a", "title": "b"}`` would create an event titled ``b`` while a
log or a proxy that kept the first read ``a``. REST refuses such bodies (``inputs``); this
wrapper gives the MCP endpoint the same rule, answering as the SDK answers any body it cannot
parse: HTTP 400 with a JSON-RPC error ``-32700`` (parse error) naming where the key repeats.
"""

from __future__ import annotations

from collections import deque

import orjson
from mcp_types import PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from calendar_service.inputs import duplicate_keys


class RefuseDuplicateKeys:
    """ASGI wrapper: read a POST's body (up to ``max_body``), refuse it if an object in it has
    a key twice, else hand the request on with its body intact."""

    def __init__(self, app: ASGIApp, *, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        read: deque[Message] = deque()
        body = bytearray()
        complete = False
        while True:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body.extend(message.get("body", b""))
            if not message.get("more_body", False):
                complete = True
                break
            if len(body) > self.max_body:  # the SDK answers 413
                break
        refused = duplicate_keys(bytes(body)) if complete and len(body) <= self.max_body else []
        if refused:
            problems = "; ".join(f"{e['field']!r} {e['message']}" for e in refused)
            await _parse_error(f"Parse error: {problems} (send each key once).", send)
            return

        async def replay() -> Message:
            return read.popleft() if read else await receive()

        await self.app(scope, replay, send)


async def _parse_error(text: str, send: Send) -> None:
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": text}}
    )
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
