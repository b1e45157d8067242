"""``calendar-service serve`` as a real process, over HTTPS with its TLS options."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from calendar_service.config import Config
from tests.rest.conftest import EVENTS
from tests.support import Factory, bearer, bind_free_port, make_tls, wait_for


def test_serve_speaks_https_with_the_given_certificate(
    config: Config, factory: Factory, tmp_path: Path
) -> None:
    tls = make_tls(tmp_path)
    certfile, keyfile, context = tls.certfile, tls.keyfile, tls.client_context()

    sock = bind_free_port()
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "CALENDAR_DATABASE_URL": config.database_url}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "calendar_service.cli",
            "serve",
            "--port",
            str(port),
            "--ssl-certfile",
            str(certfile),
            "--ssl-keyfile",
            str(keyfile),
            "--no-webhooks",
            "--log-level",
            "warning",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"https://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, verify=context, timeout=5) as client:

            def up() -> bool:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                try:
                    return client.get("/healthz").status_code == 200
                except httpx.TransportError:
                    return False

            wait_for(up, timeout=60, interval=0.1, what="serve to listen on HTTPS")
            _, secret = factory.key(factory.owner())
            response = client.get(EVENTS, headers=bearer(secret))
            assert response.status_code == 200
            assert response.json()["events"] == []
            assert response.http_version == "HTTP/1.1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
