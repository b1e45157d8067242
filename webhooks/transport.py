"""The shared client's transport: a small connection pool per receiver, pinned by the guard.

``make_client()`` builds the one ``httpx.AsyncClient`` a process sends webhooks with. Its
transport keeps one small pool per origin (scheme, host, port) rather than one big pool:

- every connection goes through ``guard.PinnedBackend``, so it reaches only an address that
  ``guard.check_target`` checked for this attempt, with TLS verified for the URL's host name;
- a pool's bookkeeping costs grow with the square of its connections (httpcore walks every
  connection for every connection on each request), so a hundred receivers in one pool made
  the client, not the network, the bottleneck; small per-origin pools keep it flat and cap
  the connections any one receiver gets (``per_origin``).

Pools unused for ``idle_close`` seconds are closed. That is safe because every webhook request
runs under a deadline much shorter than that (the dispatcher's 10 s).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpcore
import httpx

from webhooks import guard

USER_AGENT = "calendar-service-webhooks/1"
PER_ORIGIN = 8
IDLE_CLOSE_SECONDS = 120.0


def make_client(
    *,
    verify: ssl.SSLContext | bool = True,
    per_origin: int = PER_ORIGIN,
) -> httpx.AsyncClient:
    """The shared client: pinned connections, TLS verified, no redirects, no proxies.

    ``verify=True`` trusts the certifi bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set
    (the operator's choice); tests pass an ``ssl.SSLContext`` that trusts their test CA."""
    return httpx.AsyncClient(
        transport=OriginPools(verify=verify, per_origin=per_origin),
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": USER_AGENT},
    )


class PinnedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` whose pool connects through ``guard.PinnedBackend``."""

    def __init__(self, *, ssl_context: ssl.SSLContext, max_connections: int) -> None:
        super().__init__(verify=ssl_context)
        # httpx has no public way to choose the network backend: its pool is rebuilt here with
        # ours (the webhook tests exercise this path end to end, over TLS).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=5.0,
            network_backend=guard.PinnedBackend(),
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
