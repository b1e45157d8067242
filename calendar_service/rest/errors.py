"""The REST front's one translation of errors into RFC 9457 problem details."""

from __future__ import annotations

import logging

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from calendar_service.errors import CalendarError
from calendar_service.web.context import request_id, services
from calendar_service.web.responses import error_response, problem

log = logging.getLogger("calendar_service.rest")

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 400: "bad_request"}


async def calendar_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CalendarError)
    realm = services(request).config.service_name
    return error_response(exc, realm=realm, instance=request.url.path)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    detail = {
        404: f"There is no resource at {request.url.path}.",
        405: f"{request.method} is not allowed on {request.url.path}.",
    }.get(exc.status_code, str(exc.detail))
    return problem(
        exc.status_code,
        code,
        str(exc.detail),
        detail,
        instance=request.url.path,
        headers=dict(exc.headers or {}),
    )


async def unexpected_error(request: Request, exc: Exception) -> Response:
    rid = request_id(request)
    # Logged with the request id only: never the body, the query string or a secret.
    log.error(
        "unhandled error in %s %s (request %s)", request.method, request.url.path, rid, exc_info=exc
    )
    return problem(
        500,
        "internal_error",
        "Internal server error",
        f"Something went wrong on our side. Quote request id {rid} if you report it.",
        instance=request.url.path,
        headers={"Request-Id": rid},
    )


HANDLERS = {
    CalendarError: calendar_error,
    HTTPException: http_error,
    Exception: unexpected_error,
}
