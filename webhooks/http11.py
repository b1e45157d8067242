"""The webhook client: one HTTP/1.1 POST at a time per connection, kept alive per receiver.

``WebhookClient.post(target, body=..., headers=...)`` sends one webhook to a target the SSRF
guard has just checked (``guard.check_target``) and returns the receiver's status, its
``Retry-After`` and at most ``max_body`` bytes of its answer. It is what the dispatcher sends
with instead of httpx and httpcore (which spent some 60 % of a delivery's CPU building the
request, in their pools' locks and cancel scopes, and in h11's state machine):

- **Pinned**: a connection is opened only to one of the ``Target``'s checked addresses (the URL's
  name is never resolved again here), and a kept connection is used again only while its peer is
  among the addresses of the latest check.
- **TLS verified** for ``https``: the event loop's TLS (uvloop's, in C) with the URL's host name
  as SNI and for the certificate check; the SSL context is made once per client.
- **No redirects** (a 3xx is an answer like any other), no proxies, no cookies, no compression.
- **Bounded**: the caller's deadline covers connecting, sending and reading (a connection cut
  short by it is closed, never used again); at most ``max_body`` bytes of the answer are kept,
  and a larger answer, or a head larger than ``MAX_HEAD``, closes the connection instead of
  being read to its end.
- **The request** is written as one buffer: a fixed head (the URL's path and query encoded as
  httpx encodes them, ``Host`` as httpx writes it, ``Content-Length``) and the body; the answer
  is parsed by ``httptools`` (llhttp, in C: uvicorn's parser), which knows chunked and
  close-delimited bodies, keep-alive and HTTP/1.0.

Each origin (scheme, host, port) keeps up to ``per_origin`` idle connections; the dispatcher lets
no more requests than that go to one receiver at a time, so no request ever waits here. Idle
connections are closed after ``idle_close`` seconds, and at once when the receiver closes them.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import httptools
import httpx

from calendar_service.delivery.webhook_targets import Target

USER_AGENT = "calendar-service-webhooks/1"
PER_ORIGIN = 16  # a burst to a quick receiver goes as fast as its round trips allow
IDLE_CLOSE_SECONDS = 4.0  # under common receivers' keep-alive (uvicorn 5 s): fewer stale reuses
MAX_HEAD = 64 * 1024  # bytes of status line and headers before the answer is given up
URL_CACHE = 4096  # URLs whose request line and Host header are kept


class RequestFailed(Exception):
    """No complete answer: ``kind`` says what went wrong (connecting, TLS, reading, parsing);
    the message has no URL, header or body in it."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Answer:
    """The receiver's answer: its status, ``Retry-After`` and the start of its body."""

    status: int
    retry_after: str | None
    body: bytes


class _Connection(asyncio.Protocol):
    """One connection and the answer being read on it (httptools calls the ``on_*`` methods)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: str | None = None
        self.closed = False
        self.last_used = 0.0
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._max_body = 0
        self._received = 0
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.retry_after: str | None = None
        self.body: list[bytes] = []
        self.body_size = 0
        self.complete = False  # the whole answer was read: the connection may serve another
        self.keep_alive = False  # and both sides keep the connection open after it
        self.enough = False  # status and headers in, and as much body as is kept

    # asyncio's side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else None

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:  # nothing asked: a receiver talking out of turn
            self.close()
            return
        self._received += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(RequestFailed("protocol error", "the receiver switched protocols"))
            return
        except httptools.HttpParserError as exc:
            self._fail(RequestFailed("protocol error", str(exc)))
            return
        if self.enough:
            self._wake()
        elif self._received > MAX_HEAD + self._max_body and not self.status:
            self._fail(RequestFailed("protocol error", "the answer's head is too large"))

    def eof_received(self) -> bool:
        self.closed = True
        if self.status and self._waiter is not None:
            self.enough = True  # a body delimited by the end of the connection
            self._wake()
        else:
            self._fail(RequestFailed("read failed", "the receiver closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        detail = str(exc) if exc is not None else "the connection was closed"
        self._fail(RequestFailed("read failed", detail))

    # httptools' side

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self.retry_after = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            return  # an interim answer (100 Continue): the real one follows
        self.status = status
        if self._max_body <= 0:
            self.enough = True

    def on_body(self, body: bytes) -> None:
        if self.status and not self.enough:
            self.body.append(body)
            self.body_size += len(body)
            if self.body_size >= self._max_body:
                self.enough = True

    def on_message_complete(self) -> None:
        if not self.status:  # the end of an interim answer
            self.retry_after = None
            return
        self.complete = self.enough = True
        # Asked now: once the message is over the parser answers for the next one.
        self.keep_alive = self._parser.should_keep_alive()

    # the client's side

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, exc: RequestFailed) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()

    def reusable(self) -> bool:
        """Whether the answer was read to its end on a connection kept alive by both sides."""
        return (
            self.complete
            and self.keep_alive
            and not self.closed
            and self.transport is not None
            and not self.transport.is_closing()
        )

    async def exchange(self, request: bytes, max_body: int) -> None:
        """Write ``request``; return once the answer's status, headers and up to ``max_body``
        bytes of its body are in (``complete`` says whether that was all of it)."""
        assert self.transport is not None
        if self.closed or self.transport.is_closing():
            raise RequestFailed("write failed", "the connection was closed")
        self._reset()
        self._max_body = max_body
        self._received = 0
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            self.transport.write(request)
            await waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


@dataclass(frozen=True, slots=True)
class _Route:
    """What a URL puts in a request's head."""

    tls: bool
    request_line: bytes  # b"POST <path?query> HTTP/1.1\r\nhost: <netloc>\r\n"


class WebhookClient:
    """The process's webhook client (see the module's docstring)."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        per_origin: int = PER_ORIGIN,
        idle_close: float = IDLE_CLOSE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # ``verify=True`` trusts the certifi bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set
        # (the operator's choice), as httpx does; loading it is the costly part, done once.
        self._ssl_context = httpx.create_ssl_context(verify=verify, trust_env=True)
        self._per_origin = per_origin
        self._idle_close = idle_close
        self._clock = clock
        self._idle: dict[tuple[bool, str, int], list[_Connection]] = {}
        self._routes: dict[str, _Route] = {}
        self._next_sweep = clock() + idle_close
        self._closed = False
        self.requests_sent = 0
        self.connections_opened = 0
        # Awaited with the URL before each request is sent (tests: hold a request, count them).
        self.before_request: list[Callable[[str], Awaitable[None]]] = []

    async def post(
        self,
        target: Target,
        *,
        body: bytes,
        headers: Mapping[str, str],
        max_body: int,
    ) -> Answer:
        """POST ``body`` to ``target.url`` over a connection to one of ``target.addresses``.

        Raises ``RequestFailed`` when no complete answer came (the caller bounds the time)."""
        if self._closed:
            raise RequestFailed("connection failed", "the client is closed")
        for hook in self.before_request:
            await hook(target.url)
        route = self._route(target.url)
        key = (route.tls, target.host, target.port)
        head = [route.request_line]
        head.extend(f"{name}: {value}\r\n".encode("latin-1") for name, value in headers.items())
        head.append(b"user-agent: %s\r\ncontent-length: %d\r\n\r\n" % (_AGENT, len(body)))
        head.append(body)
        request = b"".join(head)
        conn = self._take(key, target)
        if conn is None:
            conn = await self._connect(target, route.tls)
        try:
            self.requests_sent += 1
            await conn.exchange(request, max_body)
        except BaseException:
            conn.close()  # cut short (time-out, cancelled, failed): never used again
            raise
        answer = Answer(conn.status, conn.retry_after, b"".join(conn.body)[:max_body])
        if conn.reusable():
            self._keep(key, conn)
        else:
            conn.close()
        return answer

    def _route(self, url: str) -> _Route:
        route = self._routes.get(url)
        if route is None:
            # httpx's encoding of the path and query and its Host header, as before.
            parsed = httpx.URL(url)
            path = parsed.raw_path or b"/"
            line = b"POST " + path + b" HTTP/1.1\r\nhost: " + parsed.netloc + b"\r\n"
            if len(self._routes) >= URL_CACHE:
                self._routes.clear()
            route = self._routes[url] = _Route(parsed.scheme == "https", line)
        return route

    def _take(self, key: tuple[bool, str, int], target: Target) -> _Connection | None:
        """A kept connection to ``key`` whose peer is still among the checked addresses."""
        now = self._clock()
        if now >= self._next_sweep:
            self._sweep(now)
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if (
                not conn.closed
                and now - conn.last_used < self._idle_close
                and any(str(a) == conn.peer for a in target.addresses)
            ):
                return conn
            conn.close()
        return None

    def _keep(self, key: tuple[bool, str, int], conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if self._closed or len(idle) >= self._per_origin:
            conn.close()
            return
        conn.last_used = self._clock()
        idle.append(conn)

    def _sweep(self, now: float) -> None:
        self._next_sweep = now + self._idle_close / 2
        for key, idle in list(self._idle.items()):
            fresh = [c for c in idle if not c.closed and now - c.last_used < self._idle_close]
            for conn in idle:
                if conn not in fresh:
                    conn.close()
            if fresh:
                self._idle[key] = fresh
            else:
                del self._idle[key]

    async def _connect(self, target: Target, tls: bool) -> _Connection:
        """A new connection to the first of the checked addresses that answers."""
        if not target.addresses:
            raise RequestFailed("connection failed", "no checked address")
        loop = asyncio.get_running_loop()
        failure: Exception | None = None
        for address in target.addresses:
            try:
                if tls:
                    _, conn = await loop.create_connection(
                        _Connection,
                        host=str(address),
                        port=target.port,
                        ssl=self._ssl_context,
                        server_hostname=target.host,
                    )
                else:
                    _, conn = await loop.create_connection(
                        _Connection, host=str(address), port=target.port
                    )
            except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
                if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                    detail = str(exc).rsplit("]", 1)[-1].strip()
                    raise RequestFailed("TLS certificate verification failed", detail) from None
                failure = exc
                continue
            self.connections_opened += 1
            return conn
        raise RequestFailed("connection failed", describe_os_error(failure))

    async def aclose(self) -> None:
        """Close every kept connection; requests under way close theirs when they end."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    async def __aenter__(self) -> WebhookClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


_AGENT = USER_AGENT.encode()


def describe_os_error(exc: BaseException | None) -> str:
    """A short account of a socket error (its text, or its type when it has none)."""
    if exc is None:
        return ""
    return str(exc).strip() or type(exc).__name__
