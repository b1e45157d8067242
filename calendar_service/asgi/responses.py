"""JSON and problem+json responses (orjson)."""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.responses import Response

from calendar_service.platform.errors import (
    AuthError,
    CalendarError,
    InsufficientScope,
    RateLimited,
)

PROBLEM_TYPE = "urn:calendar-service:problem:{code}"


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class Encoded(Response):
    """An answer ready to send: its body's bytes and its headers as ASGI sends them (names in
    lower case), to which ``Content-Length`` (but on 204 and 304) and ``Content-Type`` (unless
    ``media_type`` is ``None``) are added, as Starlette's ``Response`` adds them. Starlette
    works its headers out from a dict of texts, a loop of encodings and searches that cost the
    list about 20,000 instructions a request for its seven."""

    def __init__(
        self,
        body: bytes,
        status_code: int,
        raw_headers: list[tuple[bytes, bytes]],
        media_type: str | None = "application/json",
    ) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        if status_code >= 200 and status_code not in (204, 304):
            raw_headers.append((b"content-length", b"%d" % len(body)))
        if media_type is not None:
            self.media_type = media_type
            raw_headers.append((b"content-type", media_type.encode("latin-1")))
        self.raw_headers = raw_headers


class ProblemResponse(JSONResponse):
    media_type = "application/problem+json"


def problem(
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    instance: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> ProblemResponse:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE.format(code=code),
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if instance:
        body["instance"] = instance
    if extra:
        body.update(extra)
    return ProblemResponse(body, status_code=status, headers=headers)


_NOT_QUOTE_SAFE = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")  # RFC 9110 qdtext, ASCII


def _quoted(value: str) -> str:
    """``value`` as an RFC 9110 quoted string. Only fixed texts and settings are given; were
    one ever not quote-safe ASCII, what is not would be left out rather than fail the 401."""
    return '"' + _NOT_QUOTE_SAFE.sub("", value) + '"'


def www_authenticate(exc: AuthError, realm: str, resource_metadata: str | None = None) -> str:
    """RFC 6750 §3: no error code when no credentials were sent at all. ``resource_metadata``
    (RFC 9728 §5.1, on ``/mcp``): where an OAuth client finds how to get a token.

    Every part is a fixed text (the error's ``bearer_description``, never its message, which
    may name a calendar) or the operator's settings: a header value carries no user text, so a
    calendar named "Личное", or with quotes and line breaks, cannot break the header."""
    metadata = f", resource_metadata={_quoted(resource_metadata)}" if resource_metadata else ""
    if exc.code == "missing_api_key":
        return f"Bearer realm={_quoted(realm)}{metadata}"
    value = (
        f"Bearer realm={_quoted(realm)}, error={_quoted(exc.bearer_error)}, "
        f"error_description={_quoted(exc.bearer_description)}"
    )
    if isinstance(exc, InsufficientScope) and exc.required_scope:
        value += f", scope={_quoted(exc.required_scope)}"
    return value + metadata


def error_response(
    exc: CalendarError,
    *,
    realm: str,
    instance: str | None,
    resource_metadata: str | None = None,
) -> ProblemResponse:
    headers: dict[str, str] = {}
    if isinstance(exc, AuthError):
        headers["WWW-Authenticate"] = www_authenticate(exc, realm, resource_metadata)
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
        headers["RateLimit-Policy"] = f"{exc.limit};w={exc.period}"
        headers["RateLimit-Limit"] = str(exc.limit)
        headers["RateLimit-Remaining"] = "0"
        headers["RateLimit-Reset"] = str(exc.retry_after)
    extra = exc.to_dict()
    extra.pop("code", None)
    extra.pop("message", None)
    return problem(
        exc.status,
        exc.code,
        exc.title,
        exc.message,
        instance=instance,
        extra=extra,
        headers=headers,
    )
