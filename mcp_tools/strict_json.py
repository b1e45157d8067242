"""Refusing a JSON-RPC body with a duplicate key before the MCP SDK reads it.

The SDK decodes bodies with pydantic, which, like most JSON decoders, keeps the last of two
equal keys silently: ``{"title": "a", "title": "b"}`` would create an event titled ``b`` while a
log or a proxy that kept the first read ``a``. REST refuses such bodies (``inputs``); the
MCP endpoint's body reader (``http.WholeBody``) applies the same rule, answering as the SDK
answers any body it cannot parse: HTTP 400 with a JSON-RPC error ``-32700`` (parse error)
naming where the key repeats.
"""

from __future__ import annotations

import orjson
from mcp_types import PARSE_ERROR
from starlette.types import Send

from calendar_service.platform.inputs import duplicate_keys


async def refused_duplicate_keys(body: bytes, send: Send) -> bool:
    """Answer a parse error and return True if an object in ``body`` has a key twice."""
    refused = duplicate_keys(body)
    if not refused:
        return False
    problems = "; ".join(f"{e['field']!r} {e['message']}" for e in refused)
    await _parse_error(f"Parse error: {problems} (send each key once).", send)
    return True


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
