"""Keep a copy of the calendars a key reaches: webhooks for speed, a sync token for certainty.

    CALENDAR_API_KEY=calsk_... python examples/sync_mirror.py --once       # catch up, then exit
    CALENDAR_API_KEY=calsk_... WEBHOOK_SECRET=whsec_... python examples/sync_mirror.py [PORT]

One pattern, not two: a webhook delivery only says "something changed". Whatever it carries, the
mirror answers it by asking for every change since its sync token (``syncToken``), so a
delivery that never came (the receiver was down for a day, a retry gave up) is caught up by the
next one, or by the timer that syncs every few minutes anyway. The first run lists everything
(series as themselves, ``singleEvents=false``) and keeps the last page's ``nextSyncToken``; a
token older than the service keeps changes (30 days by default) is answered 410
``sync_token_expired``, and the mirror lists everything again. The copy and the token are kept
in ``mirror.json`` (``MIRROR_FILE``). Only httpx and ``webhook_receiver.py`` beside this file.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from webhook_receiver import Refused, verify

EVERY_SECONDS = 300  # sync this often even when no webhook arrives


class Mirror:
    def __init__(self, base_url: str, api_key: str, path: Path) -> None:
        self._http = httpx.Client(
            base_url=f"{base_url.rstrip('/')}/api/v1",
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=30,
        )
        self._path = path
        saved = json.loads(path.read_text()) if path.exists() else {}
        self.events: dict[str, dict[str, Any]] = saved.get("events", {})
        self.token: str | None = saved.get("syncToken")
        self._lock = threading.Lock()  # one catch-up at a time

    def catch_up(self) -> int:
        """Apply every change since the token (or list everything); how many were applied."""
        with self._lock:
            changed = 0
            if self.token is not None:
                try:
                    changed = self._pages({"syncToken": self.token})
                except Expired:
                    self.token = None
            if self.token is None:  # the first run, or an expired token: start from scratch
                self.events = {}
                changed = self._pages({"singleEvents": "false"})
            self._path.write_text(json.dumps({"syncToken": self.token, "events": self.events}))
            return changed

    def _pages(self, params: dict[str, str]) -> int:
        changed = 0
        while True:
            response = self._http.get("/calendar/events", params=params)
            if response.status_code == 410:
                raise Expired
            response.raise_for_status()
            page = response.json()
            for event in page["events"]:
                if event.get("status") == "cancelled":  # deleted, or an occurrence cancelled
                    self.events.pop(event["id"], None)
                else:
                    self.events[event["id"]] = event
                changed += 1
            if "nextPageToken" not in page:
                self.token = page["nextSyncToken"]
                return changed
            params = {"pageToken": page["nextPageToken"]}


class Expired(Exception):
    """410 sync_token_expired: list everything again."""


def serve(mirror: Mirror, secret: str, port: int) -> None:
    """Receive webhooks on 127.0.0.1:PORT; each verified delivery triggers a catch-up."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            try:
                verify(body, {k.lower(): v for k, v in self.headers.items()}, secret)
            except (Refused, ValueError):
                self.send_response(400)
                self.end_headers()
                return
            self.send_response(204)  # answer at once; the catch-up runs beside
            self.end_headers()
            threading.Thread(target=mirror.catch_up, daemon=True).start()

    def every() -> None:
        while not stop.wait(EVERY_SECONDS):
            print(f"timer: {mirror.catch_up()} changes", flush=True)

    stop = threading.Event()
    threading.Thread(target=every, daemon=True).start()
    print(f"listening on http://127.0.0.1:{port}/", flush=True)
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    mirror = Mirror(
        os.environ.get("CALENDAR_BASE_URL", "http://127.0.0.1:8000"),
        os.environ["CALENDAR_API_KEY"],
        Path(os.environ.get("MIRROR_FILE", "mirror.json")),
    )
    print(f"{mirror.catch_up()} changes; {len(mirror.events)} events in the copy", flush=True)
    if "--once" in sys.argv[1:]:
        return
    secret = os.environ.get("WEBHOOK_SECRET", "")
    if not secret.startswith("whsec_"):
        sys.exit("set WEBHOOK_SECRET to the whsec_... secret of `calendar-service webhook set`")
    ports = [a for a in sys.argv[1:] if a.isdigit()]
    serve(mirror, secret, int(ports[0]) if ports else 8001)


if __name__ == "__main__":
    main()
