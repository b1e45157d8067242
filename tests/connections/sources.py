"""Real calendar servers on 127.0.0.1 for the connected-calendar tests: Radicale (in this
process, its WSGI app wrapped to record the requests it saw), xandikos (its own process),
and a plain HTTP server serving an ``.ics`` body with ETag, Last-Modified and 304s."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import httpx

from tests.support import free_port, wait_for

USER, PASSWORD = "alice", "app-password-1"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


@dataclass
class IcsServer:
    url: str
    body: bytes
    status: int = 200
    seen: list[Seen] = field(default_factory=list)
    version: int = 1
    # Called at each GET before it is answered (in the server's thread): a test may hold it.
    on_get: Any = None

    def set(self, body: bytes) -> None:
        self.body, self.version = body, self.version + 1

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:16] + '"'


@contextmanager
def ics_server(body: bytes) -> Iterator[IcsServer]:
    state = IcsServer("", body)
    modified = formatdate(1_700_000_000, usegmt=True)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.seen.append(
                Seen("GET", self.path, {k.lower(): v for k, v in self.headers.items()})
            )
            if state.on_get is not None:
                state.on_get()
            if state.status != 200:
                self.send_response(state.status)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            etag = state.etag
            if self.headers.get("if-none-match") == etag:
                self.send_response(304)
                self.send_header("etag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/calendar; charset=utf-8")
            self.send_header("etag", etag)
            self.send_header("last-modified", modified)
            self.send_header("content-length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/private-abc123secret/basic.ics"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


@dataclass
class DavServer:
    url: str
    seen: list[Seen]
    calendar_url: str

    def put(self, name: str, text: str) -> None:
        with httpx.Client(auth=(USER, PASSWORD), timeout=10) as client:
            answer = client.put(
                self.calendar_url + name,
                content=text.encode(),
                headers={"content-type": "text/calendar; charset=utf-8"},
            )
            assert answer.status_code in (201, 204), answer.text

    def delete(self, name: str) -> None:
        with httpx.Client(auth=(USER, PASSWORD), timeout=10) as client:
            assert client.delete(self.calendar_url + name).status_code in (200, 204)

    def reports(self) -> list[bytes]:
        return [s.body for s in self.seen if s.method == "REPORT"]


@contextmanager
def radicale_server(directory: Path, *, sync_collection: bool = True) -> Iterator[DavServer]:
    """Radicale with its requests recorded; ``sync_collection=False``: a server that does not
    offer it (its REPORTs refused 403, as servers without RFC 6578 answer)."""
    import radicale
    from radicale import config as radicale_config

    users = directory / "users"
    users.write_text(f"{USER}:{PASSWORD}\n")
    configuration = radicale_config.load()
    configuration.update(
        {
            "storage": {"filesystem_folder": str(directory / "collections")},
            "auth": {
                "type": "htpasswd",
                "htpasswd_filename": str(users),
                "htpasswd_encryption": "plain",
            },
            "logging": {"level": "warning"},
        },
        "test",
        privileged=True,
    )
    app = radicale.Application(configuration)
    seen: list[Seen] = []

    def recorded(environ: dict[str, Any], start_response: Any) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        import io

        environ["wsgi.input"] = io.BytesIO(body)
        headers = {k[5:].lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        seen.append(Seen(environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers, body))
        if not sync_collection and b"sync-collection" in body:
            start_response("403 Forbidden", [("content-length", "0")])
            return [b""]
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, recorded, server_class=_Threading, handler_class=_Quiet)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    calendar_url = f"{base}/{USER}/work/"
    body = (
        '<?xml version="1.0" encoding="utf-8"?><c:mkcalendar xmlns:d="DAV:" '
        'xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>Work'
        "</d:displayname></d:prop></d:set></c:mkcalendar>"
    )
    with httpx.Client(auth=(USER, PASSWORD), timeout=10) as client:
        made = client.request("MKCALENDAR", calendar_url, content=body.encode())
        assert made.status_code == 201, made.text
    try:
        yield DavServer(base + "/", seen, calendar_url)
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def xandikos_server(directory: Path) -> Iterator[DavServer]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xandikos.web",
            "--defaults",
            "-d",
            str(directory),
            "-l",
            "127.0.0.1",
            "-p",
            str(port),
            "--current-user-principal",
            "/user/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return (
                httpx.request("PROPFIND", base + "/user/", headers={"depth": "0"}).status_code
                == 207
            )
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=60, interval=0.1, what="xandikos to listen")
        yield DavServer(base + "/", [], base + "/user/calendars/calendar/")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
