"""The clients that reach outsiders' URLs, pinned by the guard.

``make_client()`` builds the one ``http11.WebhookClient`` a process sends webhooks with (lean
HTTP/1.1 POSTs, kept alive per receiver, pinned to the checked addresses). ``make_httpx_client()``
builds an ``httpx.AsyncClient`` for the rest (``documents``: an OAuth client's metadata) whose
transport keeps one small pool per origin (scheme, host, port) rather than one big pool:

- every connection goes through ``guard.PinnedBackend``, so it reaches only an address that
  ``guard.check_target`` checked for this attempt, with TLS verified for the URL's host name;
- a pool's bookkeeping costs grow with the square of its connections (httpcore walks every
  connection for every connection on each request), so a hundred receivers in one pool made
  the client, not the network, the bottleneck; small per-origin pools keep it flat and cap
  the connections any one receiver gets (``per_origin``).

Pools unused for ``idle_close`` seconds are closed. That is safe because every webhook request
runs under a deadline much shorter than that (the dispatcher's 10 s).

The connections themselves are asyncio's streams (``AsyncioBackend``, under the guard's pins),
not httpcore's default AnyIO ones: those asked AnyIO which event loop runs at every read and
write, and made a system call on every idle connection of a pool at each request and answer
to see whether the receiver had closed it; with 5,000 deliveries at once that was some 40 % of
the sender's time. Here the loop's own stream says whether the receiver closed it (end of
stream seen, or the transport closing), and TLS is the event loop's (uvloop's, in C).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from webhooks import guard
from webhooks.http11 import PER_ORIGIN, USER_AGENT, WebhookClient

_WRITE_AT_ONCE = 256 * 1024  # bytes written are sent once this many wait, or at the next read
IDLE_CLOSE_SECONDS = 120.0


def make_client(
    *,
    verify: ssl.SSLContext | bool = True,
    per_origin: int = PER_ORIGIN,
) -> WebhookClient:
    """The shared webhook client: pinned connections, TLS verified, no redirects, no proxies.

    ``verify=True`` trusts the certifi bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set
    (the operator's choice); tests pass an ``ssl.SSLContext`` that trusts their test CA."""
    return WebhookClient(verify=verify, per_origin=per_origin)


def make_httpx_client(
    *,
    verify: ssl.SSLContext | bool = True,
    per_origin: int = PER_ORIGIN,
) -> httpx.AsyncClient:
    """An httpx client with the same guarantees: pinned connections (``guard.pinned``), TLS
    verified, no redirects, no proxies.

    ``verify=True`` trusts the certifi bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set
    (the operator's choice); tests pass an ``ssl.SSLContext`` that trusts their test CA."""
    return httpx.AsyncClient(
        transport=OriginPools(verify=verify, per_origin=per_origin),
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": USER_AGENT},
    )


@contextlib.contextmanager
def _mapped(timeout: type[Exception], other: type[Exception]) -> Iterator[None]:
    """A time-out or an OSError as httpcore's exceptions (what httpx reports)."""
    try:
        yield
    except TimeoutError as exc:
        raise timeout(str(exc) or "timed out") from exc
    except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
        raise other(str(exc) or type(exc).__name__) from exc


def _deadline(timeout: float | None) -> Any:
    return contextlib.nullcontext() if timeout is None else asyncio.timeout(timeout)


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection, as asyncio's stream reader and writer (see the module's docstring)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._unsent: list[bytes] = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        """Up to ``max_bytes`` (``b""``: the receiver closed the connection), once what was
        written is sent."""
        if self._unsent:
            await self._send(timeout)
        with _mapped(httpcore.ReadTimeout, httpcore.ReadError):
            async with _deadline(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Send ``buffer`` with what follows it until the answer is read: a request's head and
        body go out in one system call, not two (a webhook is a request and its answer)."""
        if buffer:
            self._unsent.append(buffer)
        if sum(len(b) for b in self._unsent) > _WRITE_AT_ONCE:
            await self._send(timeout)

    async def _send(self, timeout: float | None) -> None:  # noqa: ASYNC109
        data = b"".join(self._unsent)
        self._unsent.clear()
        with _mapped(httpcore.WriteTimeout, httpcore.WriteError):
            self._writer.write(data)
            async with _deadline(timeout):
                await self._writer.drain()

    async def aclose(self) -> None:
        """Close the connection (without waiting for the receiver)."""
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore.AsyncNetworkStream:
        """TLS over this connection, the certificate checked for ``server_hostname``."""
        try:
            with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
                async with _deadline(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException:
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks of a connection: ``is_readable`` (the receiver closed it, or the
        connection is closing: not to be used again), ``ssl_object``, ``socket``, addresses."""
        if info == "is_readable":
            return self._reader.at_eof() or self._writer.transport.is_closing()
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info in ("ssl_object", "socket"):
            return self._writer.get_extra_info(info)
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connections as asyncio streams, on the running event loop (see the module's doc)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """A TCP connection to ``host`` (an address the guard pinned) and ``port``."""
        local = None if local_address is None else (local_address, 0)
        with _mapped(httpcore.ConnectTimeout, httpcore.ConnectError):
            async with _deadline(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            if sock is not None:
                sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Refused: webhooks go over TCP only."""
        raise httpcore.ConnectError("webhooks are never sent over Unix sockets")

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep`` (httpcore's retry pause)."""
        await asyncio.sleep(seconds)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose pool connects through ``guard.PinnedBackend``, over
    asyncio's streams (``AsyncioBackend``)."""

    def __init__(self, *, ssl_context: ssl.SSLContext, max_connections: int) -> None:
        super().__init__(verify=ssl_context)
        # httpx has no public way to choose the network backend: its pool is rebuilt here with
        # ours (the webhook tests exercise this path end to end, over TLS).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=5.0,
            network_backend=guard.PinnedBackend(AsyncioBackend()),
        )


@dataclass
class _Origin:
    transport: PinnedTransport
    last_used: float


class OriginPools(httpx.AsyncBaseTransport):
    """Routes each request to its origin's own ``PinnedTransport`` (see module doc)."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        per_origin: int = PER_ORIGIN,
        idle_close: float = IDLE_CLOSE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # One SSL context for all pools: loading the CA bundle is the costly part.
        self._ssl_context = httpx.create_ssl_context(verify=verify, trust_env=True)
        self._per_origin = per_origin
        self._idle_close = idle_close
        self._clock = clock
        self._origins: dict[tuple[bytes, bytes, int | None], _Origin] = {}
        self._next_sweep = clock() + idle_close

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through its origin's pool (made on first use)."""
        now = self._clock()
        if now >= self._next_sweep:
            await self._sweep(now)
        key = (request.url.raw_scheme, request.url.raw_host, request.url.port)
        origin = self._origins.get(key)
        if origin is None:
            transport = PinnedTransport(
                ssl_context=self._ssl_context, max_connections=self._per_origin
            )
            origin = self._origins[key] = _Origin(transport, now)
        origin.last_used = now
        return await origin.transport.handle_async_request(request)

    async def _sweep(self, now: float) -> None:
        self._next_sweep = now + self._idle_close / 2
        stale = [k for k, o in self._origins.items() if now - o.last_used > self._idle_close]
        for key in stale:
            await self._origins.pop(key).transport.aclose()

    async def aclose(self) -> None:
        """Close every pool."""
        origins, self._origins = self._origins, {}
        for origin in origins.values():
            await origin.transport.aclose()
