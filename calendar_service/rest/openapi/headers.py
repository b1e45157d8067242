"""The response headers the operations declare (``components.headers``)."""

from __future__ import annotations

from typing import Any


def headers() -> dict[str, Any]:
    def integer(description: str) -> dict[str, Any]:
        return {"description": description, "schema": {"type": "integer", "minimum": 0}}

    return {
        "Request-Id": {
            "description": "The request's id: the caller's own Request-Id (1 to 64 of "
            "`A-Z a-z 0-9 . _ : -`) or a generated one. Quote it when reporting a problem.",
            "required": True,
            "schema": {"type": "string", "pattern": r"^[A-Za-z0-9._:-]{1,64}$"},
        },
        "RateLimit-Policy": {
            "description": "The key's budget: `<requests>;w=<seconds>` (IETF httpapi "
            "ratelimit-headers draft).",
            "schema": {"type": "string", "pattern": r"^[0-9]+;w=[0-9]+$"},
            "example": "600;w=60",
        },
        "RateLimit-Limit": integer("Requests allowed per window."),
        "RateLimit-Remaining": integer("Requests left in the current window."),
        "RateLimit-Reset": integer("Seconds until the budget is full again."),
        "Retry-After": {
            "description": "Seconds to wait before retrying.",
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
        },
        "Location": {
            "description": "The created event's URL.",
            "required": True,
            "schema": {"type": "string", "format": "uri"},
        },
        "Idempotent-Replayed": {
            "description": "`true` when this is the stored response to an earlier request "
            "with the same Idempotency-Key and body.",
            "schema": {"type": "string", "enum": ["true"]},
        },
        "WWW-Authenticate": {
            "description": 'RFC 6750: `Bearer realm="calendar"`, with `error="invalid_token"` '
            'or `error="insufficient_scope"` when a key was sent.',
            "required": True,
            "schema": {"type": "string"},
        },
        "Cache-Control": {
            "description": "`no-store`: calendar data is not to be cached.",
            "schema": {"type": "string"},
        },
    }
