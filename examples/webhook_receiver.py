"""A webhook receiver that verifies both signatures and refuses stale or replayed deliveries.

    WEBHOOK_SECRET=whsec_... python examples/webhook_receiver.py [PORT]

Only the standard library. Point the webhook at it while developing (``http://127.0.0.1:PORT/``
needs ``CALENDAR_WEBHOOK_ALLOW_LOCAL=1`` on the service; in production the webhook must be a
public ``https://`` address, so run this behind a TLS-terminating proxy).

Every delivery carries two independent signatures over the same raw body; checking either is
enough, this example checks both to show how:

- ``x-calendar-signature: v1=<hex>``: HMAC-SHA256 of the raw body, keyed with the secret string
  exactly as shown (``whsec_…`` included). ``calendar`` is ``CALENDAR_SERVICE_NAME``.
- ``webhook-signature: v1,<base64>`` (Standard Webhooks): HMAC-SHA256 of
  ``{webhook-id}.{webhook-timestamp}.{raw body}``, keyed with the base64-decoded part of the
  secret after ``whsec_``. The ``standardwebhooks`` package does this check in one call:
  ``Webhook(secret).verify(body, headers)``.

After a secret rotation each header carries one value per valid secret (``v1=a,v1=b`` and
``v1,a v1,b``): accept the delivery when any value matches. ``webhook-id`` stays the same when
a delivery is retried, so it is the key for ignoring duplicates.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOLERANCE_SECONDS = 5 * 60
SERVICE_NAME = os.environ.get("CALENDAR_SERVICE_NAME", "calendar").lower()


class Refused(Exception):
    """The delivery is not authentic or not fresh."""


def verify(
    body: bytes, headers: Mapping[str, str], secret: str, now: float | None = None
) -> dict[str, Any]:
    """Check both signatures and the timestamp; returns the parsed payload or raises Refused.

    ``headers`` must have lower-case names; ``body`` must be the raw bytes as received."""
    now = time.time() if now is None else now
    msg_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    if not msg_id or not timestamp.isdigit():
        raise Refused("missing webhook-id or webhook-timestamp")
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise Refused("timestamp too far from now (a replay, or a clock off by minutes)")

    # 1. The seed signature: keyed with the whole secret string, over the raw body.
    seed = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    offered = headers.get(f"x-{SERVICE_NAME}-signature", "").split(",")
    if not any(hmac.compare_digest(f"v1={seed}", value.strip()) for value in offered):
        raise Refused(f"x-{SERVICE_NAME}-signature does not match")

    # 2. The Standard Webhooks signature: keyed with the decoded bytes, over id.timestamp.body.
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    values = [v.split(",", 1)[1] for v in headers.get("webhook-signature", "").split() if "," in v]
    if not any(hmac.compare_digest(expected, value) for value in values):
        raise Refused("webhook-signature does not match")
    return json.loads(body)  # type: ignore[no-any-return]


class Seen:
    """The webhook-ids handled lately (a database table in a real receiver)."""

    def __init__(self, size: int = 10_000) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def first_time(self, msg_id: str) -> bool:
        """True the first time ``msg_id`` is seen."""
        if msg_id in self._ids:
            return False
        self._ids[msg_id] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True


def make_handler(secret: str, seen: Seen) -> type[BaseHTTPRequestHandler]:
    """The request handler, verifying with ``secret`` and skipping ids in ``seen``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                payload = verify(body, headers, secret)
            except (Refused, ValueError) as exc:
                self._answer(400, f"refused: {exc}")
                return
            if not seen.first_time(headers["webhook-id"]):
                self._answer(200, "duplicate, already handled")
                return
            event = payload["data"].get("event")  # absent from a webhook.test delivery
            what = f"{event['title']!r} ({event['id']})" if event else payload["data"]
            print(f"{payload['type']}: {what}", flush=True)
            self._answer(200, "ok")  # answer fast; do slow work after (or in a queue)

        def _answer(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the body and headers are not for the log

    return Handler


def main() -> None:
    """Serve on 127.0.0.1 until interrupted."""
    secret = os.environ.get("WEBHOOK_SECRET", "")
    if not secret.startswith("whsec_"):
        sys.exit(
            "set WEBHOOK_SECRET to the whsec_... secret shown by `calendar-service webhook set`"
        )
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8001
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(secret, Seen()))
    print(f"listening on http://127.0.0.1:{port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
