"""The clients that reach outsiders' URLs, pinned by the guard.

``make_client()`` builds the one ``http11.WebhookClient`` a process sends webhooks with (lean
HTTP/1.1 POSTs, kept alive per receiver, pinned to the checked addresses).
``make_httpx_client()`` builds an ``httpx.AsyncClient`` for the rest (``documents``: an OAuth
client's metadata, fetched once): its one small pool connects through ``guard.PinnedBackend``
over httpcore's own network backend, so it reaches only an address that ``guard.check_target``
checked for this attempt, with TLS verified for the URL's host name; no redirects, no proxies.
"""

from __future__ import annotations

import ssl

import httpcore
import httpx

from webhooks import guard
from webhooks.http11 import PER_ORIGIN, USER_AGENT, WebhookClient


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
    *, verify: ssl.SSLContext | bool = True, connections: int = 1
) -> httpx.AsyncClient:
    """An httpx client with the same guarantees: pinned connections (``guard.pinned``), TLS
    verified, no redirects, no proxies, at most ``connections`` at once.

    ``verify`` as for ``make_client``."""
    ssl_context = httpx.create_ssl_context(verify=verify, trust_env=True)
    transport = httpx.AsyncHTTPTransport(verify=ssl_context)
    # httpx has no public way to choose the network backend: its pool is made again with the
    # guard's (the OAuth document tests exercise this path end to end, over TLS).
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=connections,
        network_backend=guard.PinnedBackend(),
    )
    return httpx.AsyncClient(
        transport=transport,
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": USER_AGENT},
    )
