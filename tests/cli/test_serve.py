"""``calendar-service serve`` as a real process: HTTPS with its TLS options, and the address it
serves on (``--host``/``--port``) used in links when ``CALENDAR_BASE_URL`` is not set."""

from __future__ import annotations

import json
import os
from pathlib import Path

from calendar_service.platform.config import Config
from tests.cli.support import run_cli
from tests.mcp_tools.clients import INITIALIZE, JSON_RPC_HEADERS
from tests.rest.conftest import EVENTS, event_body
from tests.support import Factory, bearer, free_port, make_tls, serve_env, serving


def test_serve_speaks_https_with_the_given_certificate(
    config: Config, factory: Factory, tmp_path: Path
) -> None:
    tls = make_tls(tmp_path)
    port = free_port()
    env = {**os.environ, "CALENDAR_DATABASE_URL": config.database_url}
    args = ("--port", str(port), "--ssl-certfile", str(tls.certfile))
    args += ("--ssl-keyfile", str(tls.keyfile))
    base = f"https://127.0.0.1:{port}"
    with serving(env, base, *args, client_options={"verify": tls.client_context()}) as client:
        _, secret = factory.key(factory.owner())
        response = client.get(EVENTS, headers=bearer(secret))
        assert response.status_code == 200
        assert response.json()["events"] == []
        assert response.http_version == "HTTP/1.1"


def test_without_a_base_url_links_and_the_mcp_origin_follow_the_served_port(
    tmp_path: Path,
) -> None:
    env = serve_env(f"sqlite:///{tmp_path / 'calendar.db'}")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    demo = ("demo", "--port", str(port))
    settings = {"CALENDAR_DATABASE_URL": env["CALENDAR_DATABASE_URL"], "CALENDAR_BASE_URL": None}
    printed = run_cli(settings, *demo).stdout
    assert f"{base}/settings" in printed and f"{base}/api/v1/calendar/events" in printed
    assert ":8000" not in printed
    secret = json.loads(run_cli(settings, *demo, "--json").stdout)["secret"]

    with serving(env, base, "--port", str(port)) as client:
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
