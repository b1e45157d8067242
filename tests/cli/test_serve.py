"""``calendar-service serve`` as a real process: HTTPS with its TLS options, and the address it
serves on (``--host``/``--port``) used in links when ``CALENDAR_BASE_URL`` is not set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from calendar_service.config import Config
from tests.mcp_tools.clients import INITIALIZE, JSON_RPC_HEADERS
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer, bind_free_port, make_tls, wait_for


def _free_port() -> int:
    sock = bind_free_port()
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def _env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CALENDAR_BASE_URL"}
    return {**env, "CALENDAR_DATABASE_URL": database_url}


@contextmanager
def _serving(
    env: dict[str, str], base: str, *args: str, client_options: dict[str, Any] | None = None
) -> Iterator[httpx.Client]:
    """``calendar-service serve ARGS`` in a subprocess, and a client once it answers."""
    options = ("--no-webhooks", "--log-level", "warning")
    proc = subprocess.Popen(
        [sys.executable, "-m", "calendar_service.cli", "serve", *args, *options],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        with httpx.Client(base_url=base, timeout=5, **(client_options or {})) as client:

            def up() -> bool:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                try:
                    return client.get("/healthz").status_code == 200
                except httpx.TransportError:
                    return False

            wait_for(up, timeout=60, interval=0.1, what="serve to listen")
            yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _cli_json(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "calendar_service.cli", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_serve_speaks_https_with_the_given_certificate(
    config: Config, factory: Factory, tmp_path: Path
) -> None:
    tls = make_tls(tmp_path)
    port = _free_port()
    env = {**os.environ, "CALENDAR_DATABASE_URL": config.database_url}
    args = ("--port", str(port), "--ssl-certfile", str(tls.certfile))
    args += ("--ssl-keyfile", str(tls.keyfile))
    base = f"https://127.0.0.1:{port}"
    with _serving(env, base, *args, client_options={"verify": tls.client_context()}) as client:
        _, secret = factory.key(factory.owner())
        response = client.get(EVENTS, headers=bearer(secret))
        assert response.status_code == 200
        assert response.json()["events"] == []
        assert response.http_version == "HTTP/1.1"


def test_without_a_base_url_links_and_the_mcp_origin_follow_the_served_port(
    tmp_path: Path,
) -> None:
    env = _env(f"sqlite:///{tmp_path / 'calendar.db'}")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    printed = subprocess.run(
        [sys.executable, "-m", "calendar_service.cli", "demo", "--port", str(port)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    ).stdout
    assert f"{base}/settings" in printed and f"{base}/api/v1/calendar/events" in printed
    assert ":8000" not in printed
    secret = _cli_json(env, "demo", "--port", str(port))["secret"]

    with _serving(env, base, "--port", str(port)) as client:
        created = client.post(EVENTS, json=event_body(), headers=bearer(secret))
        assert created.status_code == 201, created.text
        assert created.headers["location"] == f"{base}{EVENTS}/{created.json()['id']}"
        assert client.get(created.headers["location"], headers=bearer(secret)).status_code == 200

        servers = client.get("/api/openapi.json").json()["servers"]
        assert servers == [{"url": f"{base}/api/v1"}]

        headers = {**JSON_RPC_HEADERS, **bearer(secret)}
        for origin in (base, f"http://localhost:{port}"):
            answer = client.post("/mcp", json=INITIALIZE, headers={**headers, "Origin": origin})
            assert answer.status_code == 200, (origin, answer.text)
            assert answer.json()["result"]["serverInfo"]["name"] == "calendar"
        other = {**headers, "Origin": "http://127.0.0.1:8000"}
        assert client.post("/mcp", json=INITIALIZE, headers=other).status_code == 403
