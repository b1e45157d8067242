"""The ASGI plumbing the fronts share (``calendar_service.asgi``), tried on a small app of its
own: request ids and ``nosniff`` on every answer, other scopes passed through untouched, the
error boundary's 500 and its log line (a feed's token left out), query strings read as
Starlette reads them, and the methods a path serves (``OPTIONS``, ``Allow``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from calendar_service.asgi.boundary import ErrorBoundary
from calendar_service.asgi.context import Query, RequestIdMiddleware, request_id
from calendar_service.asgi.methods import AnswerOptions, allowed_methods
from calendar_service.asgi.middleware import HttpMiddleware


async def _echo(request: Request) -> Response:
    return PlainTextResponse(request_id(request))


async def _fails(request: Request) -> Response:
    raise RuntimeError("secret detail")


async def _respond(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"opaque {type(exc).__name__}", status_code=500)


ROUTES = [
    Route("/echo", _echo, methods=["GET", "POST"]),
    Route("/items/{item}", _echo, methods=["GET", "DELETE"]),
    Route("/items/import", _echo, methods=["POST"]),
    Route("/ical/{token}", _fails),
]


def _client() -> TestClient:
    """The app with the plumbing's middleware, in the order ``create_app`` puts it."""
    app = Starlette(
        routes=ROUTES,
        middleware=[
            Middleware(RequestIdMiddleware),
            Middleware(ErrorBoundary, respond=_respond),
            Middleware(AnswerOptions),
        ],
    )
    return TestClient(app, raise_server_exceptions=False)


def test_every_answer_has_a_request_id_the_callers_if_sane_and_nosniff() -> None:
    client = _client()
    mine = client.get("/echo", headers={"Request-Id": "abc-123"})
    assert mine.headers["request-id"] == mine.text == "abc-123"
    assert mine.headers["x-content-type-options"] == "nosniff"
    insane = client.get("/echo", headers={"Request-Id": "no spaces <here>"})
    assert insane.headers["request-id"] == insane.text
    assert insane.text.startswith("req_")
    assert client.get("/nowhere").headers["request-id"].startswith("req_")


def test_the_boundary_answers_its_500_and_logs_no_feed_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="calendar_service.asgi"):
        answer = _client().get("/ical/feed-token-value.ics")
    assert answer.status_code == 500 and answer.text == "opaque RuntimeError"
    assert answer.headers["request-id"].startswith("req_")
    logged = [r.getMessage() for r in caplog.records]
    assert any("/ical/<token>" in line for line in logged)
    assert not any("feed-token-value" in line or "secret detail" in line for line in logged)


def test_other_scopes_pass_through_the_http_middleware() -> None:
    seen: list[str] = []

    async def inner(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    class Refuses(HttpMiddleware):
        async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
            raise AssertionError("an HTTP request only")

    async def nothing() -> dict[str, Any]:
        return {}

    async def ignore(message: Any) -> None:
        return None

    asyncio.run(Refuses(inner)({"type": "lifespan"}, nothing, ignore))
    assert seen == ["lifespan"]


@pytest.mark.parametrize(
    "raw",
    [b"", b"a=1&b=%20x&a=2+3", b"c&d=&=e", b"q=caf%C3%A9&q=%ZZ", b"&&x=1&"],
)
def test_a_query_is_read_as_starlette_reads_it(raw: bytes) -> None:
    query, theirs = Query(raw), QueryParams(raw.decode("latin-1"))
    assert query.items == theirs.multi_items()
    assert query.last == dict(theirs)
    assert query.getlist("a") == theirs.getlist("a")


def test_options_answers_the_methods_a_path_serves_a_fixed_path_first() -> None:
    client = _client()
    answer = client.options("/echo")
    assert answer.status_code == 204
    assert answer.headers["allow"] == "GET, HEAD, POST, OPTIONS"
    assert client.options("/items/import").headers["allow"] == "POST, OPTIONS"
    assert client.options("/items/7").headers["allow"] == "GET, HEAD, DELETE, OPTIONS"
    assert client.options("/nowhere").status_code == 404
    scope = {"type": "http", "path": "/nowhere", "method": "GET", "root_path": ""}
    assert allowed_methods(ROUTES, scope) == []
