"""What a stranger can send over HTTP must not hurt the service: aborted uploads, a failing
request on a keep-alive connection, two ``Authorization`` headers; and the headers every answer
carries (``X-Content-Type-Options``, ``Allow``)."""

from __future__ import annotations

import http.client
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from calendar_service.access import call_history as history
from calendar_service.cli.asgi_app import create_app
from calendar_service.platform.db import Database
from tests.account.conftest import signed_in
from tests.conftest import make_config
from tests.mcp_tools.clients import JSON_RPC_HEADERS
from tests.rest.conftest import EVENTS
from tests.support import (
    POSTGRES_ADMIN_URL,
    SERVER_START,
    Factory,
    RunningServer,
    bearer,
    bind_free_port,
    fresh_database_url,
    migrated_database,
    run_server,
    wait_for,
)

ABORTED_PER_PATH = 200
ABORTED_PER_BATCH = 50


def abort_upload(host: str, port: int, path: str, headers: dict[str, str]) -> None:
    """Send a POST's headers announcing 100 bytes, one byte of body, and hang up."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Length: 100"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + b"{")


def json_upload(secret: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", **JSON_RPC_HEADERS}
    return {**headers, **bearer(secret)} if secret else headers


FORM_UPLOAD = {"Content-Type": "application/x-www-form-urlencoded"}


# ---------------------------------------------------------------------------------------------
# Aborted uploads


@pytest.fixture
def served_process(database_url: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``calendar-service serve`` as deployed (its own logging), output kept in a file."""
    sock = bind_free_port()
    port = sock.getsockname()[1]
    sock.close()
    log_path = tmp_path / "serve.log"
    env = {**os.environ, "CALENDAR_DATABASE_URL": database_url}
    command = [sys.executable, "-m", "calendar_service.cli", "serve", "--port", str(port)]
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [*command, "--no-webhooks"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert proc.poll() is None, log_path.read_text()
            try:
                return httpx.get(f"{base}/healthz", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(up, timeout=SERVER_START, interval=0.1, what="serve to answer")
        yield base, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_aborted_uploads_neither_stall_the_server_nor_fill_its_log(
    served_process: tuple[str, Path], factory: Factory
) -> None:
    base, log_path = served_process
    _, secret = factory.key(factory.owner())
    port = int(base.rsplit(":", 1)[1])
    uploads = [
        (EVENTS, json_upload()),
        ("/settings/sign-in", FORM_UPLOAD),
        ("/mcp", json_upload(secret)),  # the MCP transport reads the body after the key check
    ]
    with httpx.Client(base_url=base, timeout=1.0) as probe:  # a stalled loop times out here
        for path, headers in uploads:
            # In batches, each followed by the probe: the bound is then on what the aborted
            # requests cost the loop, not on how fast a busy machine works through 200 of them.
            for _ in range(ABORTED_PER_PATH // ABORTED_PER_BATCH):
                for _ in range(ABORTED_PER_BATCH):
                    abort_upload("127.0.0.1", port, path, headers)
                assert probe.get("/healthz").status_code == 200

    with httpx.Client(base_url=base, timeout=5) as client:  # the server is still itself
        assert client.get(EVENTS, headers=bearer(secret)).status_code == 200
    output = log_path.read_text(errors="replace")
    assert " INFO uvicorn.error: Uvicorn running on" in output  # the service's own format
    assert "Traceback" not in output and "ClientDisconnect" not in output, output[:3000]
    assert len(output.splitlines()) < 20, output[:3000]


def test_an_aborted_upload_with_a_real_key_is_not_recorded_in_its_history(
    server: RunningServer, factory: Factory, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    key_id, secret = factory.key(factory.owner())
    caplog.set_level(logging.DEBUG, logger="calendar_service.asgi")

    abort_upload(server.host, server.port, EVENTS, json_upload(secret))
    abort_upload(server.host, server.port, "/mcp", json_upload(secret))

    def gone() -> int:
        return sum("client went away" in r.getMessage() for r in caplog.records)

    wait_for(lambda: gone() >= 2, what="both aborted requests to be given up")
    assert db.call(history.list_calls, key_id=key_id) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# ---------------------------------------------------------------------------------------------
# A 500 on a keep-alive connection


@pytest.fixture
def broken_server(tmp_path: Path) -> Iterator[tuple[RunningServer, Factory]]:
    """The whole app over a database whose ``events`` table was dropped under it (an operator
    error): every event operation fails in the database, a real unexpected error."""
    with fresh_database_url(tmp_path) as url:
        config = make_config(url)
        with migrated_database(config) as db:
            factory = Factory(db)
            with db.engine.begin() as conn:
                conn.execute(text("DROP TABLE events" + (" CASCADE" if POSTGRES_ADMIN_URL else "")))
            app = create_app(config, db=db, run_webhooks=False)
            with run_server(app) as running:
                yield running, factory


@dataclass
class TwoAnswers:
    first: http.client.HTTPResponse
    first_body: bytes
    second: http.client.HTTPResponse
    same_connection: bool


def two_requests_on_one_connection(
    running: RunningServer, path: str, headers: dict[str, str]
) -> TwoAnswers:
    """GET ``path``, then ``/healthz`` on the same keep-alive connection."""
    conn = http.client.HTTPConnection(running.host, running.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        first = conn.getresponse()
        body = first.read()
        sock = conn.sock
        conn.request("GET", "/healthz")  # fails if the server reset the connection
        second = conn.getresponse()
        second.read()
        return TwoAnswers(first, body, second, sock is not None and conn.sock is sock)
    finally:
        conn.close()


@pytest.fixture
def uvicorn_log_captured(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(caplog.handler)  # uvicorn's logger does not propagate in tests
    caplog.set_level(logging.INFO)
    yield caplog
    uvicorn_log.removeHandler(caplog.handler)


def test_a_500_is_a_normal_answer_on_a_connection_that_stays_usable(
    broken_server: tuple[RunningServer, Factory], uvicorn_log_captured: pytest.LogCaptureFixture
) -> None:
    running, factory = broken_server
    key_id, secret = factory.key(factory.owner())

    answers = two_requests_on_one_connection(running, EVENTS, bearer(secret))

    first = answers.first
    assert first.status == 500
    assert first.getheader("content-type") == "application/problem+json"
    assert first.getheader("connection") is None
    request_id = first.getheader("request-id")
    assert request_id and request_id.encode() in answers.first_body
    assert answers.second.status == 200 and answers.same_connection
    errors = [r for r in uvicorn_log_captured.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]  # logged once, with its id
    assert request_id in errors[0].getMessage()
    calls = factory.db.call(history.list_calls, key_id=key_id)
    assert [c["status"] for c in calls] == [500]  # a genuine failure is recorded as one


def test_a_500_in_the_settings_is_a_page_on_a_connection_that_stays_usable(
    broken_server: tuple[RunningServer, Factory], uvicorn_log_captured: pytest.LogCaptureFixture
) -> None:
    running, factory = broken_server
    settings = signed_in(running, factory.owner())
    cookie = "; ".join(f"{name}={value}" for name, value in settings.client.cookies.items())
    settings.client.close()

    answers = two_requests_on_one_connection(running, "/settings/calendars", {"Cookie": cookie})

    assert answers.first.status == 500
    assert answers.first.getheader("content-type", "").startswith("text/html")
    request_id = answers.first.getheader("request-id")
    assert request_id and request_id.encode() in answers.first_body
    assert answers.second.status == 200 and answers.same_connection
    errors = [r for r in uvicorn_log_captured.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert request_id in errors[0].getMessage()


# ---------------------------------------------------------------------------------------------
# Two Authorization headers


def test_two_authorization_headers_are_refused_on_rest(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    _, other = factory.key(factory.owner())
    for second in (other, secret):  # a different key, or the same one twice
        response = api.get(
            EVENTS,
            headers=[("Authorization", f"Bearer {secret}"), ("Authorization", f"Bearer {second}")],
        )
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == "duplicate_header"
        assert "Authorization" in response.json()["detail"]


def test_two_authorization_headers_are_refused_on_mcp(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    _, other = factory.key(factory.owner())
    response = api.post(
        "/mcp",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        headers=[
            *JSON_RPC_HEADERS.items(),
            ("Content-Type", "application/json"),
            ("Authorization", f"Bearer {secret}"),
            ("Authorization", f"Bearer {other}"),
        ],
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "duplicate_header"


# ---------------------------------------------------------------------------------------------
# X-Content-Type-Options


def test_every_kind_of_answer_says_nosniff(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    answers = [
        api.get(EVENTS, headers=bearer(secret)),
        api.get(EVENTS),  # 401
        api.get("/api/v1/nothing-here"),  # 404
        api.put(EVENTS, headers=bearer(secret)),  # 405
        api.get("/api/openapi.json"),
        api.get("/.well-known/openapi.json"),
        api.get("/healthz"),
        api.post("/mcp", json={}, headers=JSON_RPC_HEADERS),  # 401
        api.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={**JSON_RPC_HEADERS, **bearer(secret)},
        ),
        api.get("/settings/sign-in"),
        api.options(EVENTS),
    ]
    for response in answers:
        assert response.headers.get_list("x-content-type-options") == ["nosniff"], (
            response.request.method,
            response.request.url,
        )


# ---------------------------------------------------------------------------------------------
# OPTIONS and Allow


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        (EVENTS, "GET, HEAD, POST, OPTIONS"),
        (f"{EVENTS}/evt_123", "GET, HEAD, PATCH, DELETE, OPTIONS"),
        ("/healthz", "GET, HEAD, OPTIONS"),
        ("/api/openapi.json", "GET, HEAD, OPTIONS"),
        ("/mcp", "POST, OPTIONS"),
        ("/settings/keys", "GET, HEAD, POST, OPTIONS"),
    ],
)
def test_options_answers_204_with_the_methods_the_path_supports(
    api: httpx.Client, path: str, allow: str
) -> None:
    response = api.options(path)
    assert response.status_code == 204, response.text
    assert response.headers["allow"] == allow
    assert response.content == b""


def test_options_on_a_path_that_does_not_exist_is_404(api: httpx.Client) -> None:
    assert api.options("/api/v1/nothing-here").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", f"{EVENTS}/evt_123", "GET, HEAD, PATCH, DELETE, OPTIONS"),
        ("POST", f"{EVENTS}/evt_123", "GET, HEAD, PATCH, DELETE, OPTIONS"),
        ("DELETE", EVENTS, "GET, HEAD, POST, OPTIONS"),
        ("POST", "/healthz", "GET, HEAD, OPTIONS"),
    ],
)
def test_a_405_names_every_method_the_path_supports(
    api: httpx.Client, factory: Factory, method: str, path: str, allow: str
) -> None:
    _, secret = factory.key(factory.owner())
    response = api.request(method, path, headers=bearer(secret))
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "method_not_allowed"
    assert response.headers["allow"] == allow


def test_a_405_from_mcp_names_post_and_options(api: httpx.Client, factory: Factory) -> None:
    _, secret = factory.key(factory.owner())
    response = api.get("/mcp", headers=bearer(secret))
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, OPTIONS"


def test_a_405_in_the_settings_names_every_method_of_the_page(api: httpx.Client) -> None:
    response = api.delete("/settings/keys")
    assert response.status_code == 405
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["allow"] == "GET, HEAD, POST, OPTIONS"
