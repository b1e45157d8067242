"""The REST front's one translation of errors into RFC 9457 problem details.

The 500 for an unexpected error is ``unexpected_error``, the answer of the app's
``web.boundary.ErrorBoundary`` (which logs it): not a Starlette exception handler, whose
middleware re-raises after answering and so drops the connection."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from calendar_service.asgi.context import request_id, services
from calendar_service.asgi.methods import allow_header
from calendar_service.asgi.responses import error_response, problem
from calendar_service.platform.errors import CalendarError

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
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        # Starlette names the methods of the first route that matched the path only.
        headers["Allow"] = allow_header(request.app.routes, request.scope) or headers["Allow"]
    return problem(
        exc.status_code,
        code,
        str(exc.detail),
        detail,
        instance=request.url.path,
        headers=headers,
    )


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """The opaque 500 (the error was logged by the boundary, with this request id)."""
    rid = request_id(request)
    return problem(
        500,
        "internal_error",
        "Internal server error",
        f"Something went wrong on our side. Quote request id {rid} if you report it.",
        instance=request.url.path,
    )


HANDLERS = {
    CalendarError: calendar_error,
    HTTPException: http_error,
}
