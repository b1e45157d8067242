"""examples/webhook_receiver.py accepts real deliveries and refuses forged or stale ones."""

from __future__ import annotations

import importlib.util
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from calendar_service.delivery.webhook_settings import new_secret
from calendar_service.platform.db import Database
from tests.support import bearer, wait_for
from tests.webhooks.support import deliveries, subscriber
from webhooks.signing import signature_headers

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "webhook_receiver.py"
BODY = b'{"id":"evt_1","type":"calendar.event.created","data":{"event":{"id":"ev_1","title":"A"}}}'


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("webhook_receiver_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signed(*secrets: str, timestamp: int | None = None, body: bytes = BODY) -> dict[str, str]:
    return signature_headers(
        secrets=list(secrets),
        msg_id="evt_1",
        timestamp=int(time.time()) if timestamp is None else timestamp,
        body=body,
        seed_header="x-calendar-signature",
    )


def test_the_example_accepts_a_signed_delivery_and_either_secret_after_rotation(
    example: ModuleType,
) -> None:
    new, old = new_secret(), new_secret()
    assert example.verify(BODY, signed(new), new)["id"] == "evt_1"
    assert example.verify(BODY, signed(new, old), old)["id"] == "evt_1"


@pytest.mark.parametrize("problem", ["tampered", "stale", "wrong secret", "seed only", "no id"])
def test_the_example_refuses_forged_stale_or_half_signed_deliveries(
    example: ModuleType, problem: str
) -> None:
    secret = new_secret()
    headers = signed(secret)
    body = BODY
    if problem == "tampered":
        body = BODY.replace(b'"A"', b'"B"')
    elif problem == "stale":
        headers = signed(secret, timestamp=int(time.time()) - 600)
    elif problem == "wrong secret":
        headers = signed(new_secret())
    elif problem == "seed only":
        headers["webhook-signature"] = signed(new_secret())["webhook-signature"]
    else:
        del headers["webhook-id"]
    with pytest.raises(example.Refused):
        example.verify(body, headers, secret)


def test_the_example_receives_a_real_delivery(
    example: ModuleType, hooks_api: httpx.Client, hooks_db: Database
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), example.make_handler("", example.Seen()))
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    owner, key, secret = subscriber(hooks_db, url)
    server.RequestHandlerClass = example.make_handler(secret, example.Seen())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        body = {
            "title": "Demo",
            "startsAt": "2026-03-02T09:00:00Z",
            "endsAt": "2026-03-02T10:00:00Z",
        }
        hooks_api.post("/api/v1/calendar/events", json=body, headers=bearer(key))
        [done] = wait_for(
            lambda: [d for d in deliveries(hooks_db, owner) if d["status"] == "succeeded"]
        )
        assert done["lastStatusCode"] == 200
    finally:
        server.shutdown()
        server.server_close()
