"""The SSRF guard: webhooks go to public HTTPS addresses only, and to the address checked.

``check_target(url, allow_local=...)`` parses the URL, resolves its host and refuses it unless
the scheme is ``https`` and *every* address the name resolves to is public. It runs when the
owner sets the webhook and again before every attempt; the addresses it returns are *pinned*
(``pinned``) so that the connection goes to exactly those addresses, never to a second DNS
answer (no DNS-rebinding window). ``PinnedBackend`` is the httpcore network backend that honours
the pins: the URL keeps its host name, so TLS still sends SNI for it and verifies the
certificate against it.

``CALENDAR_WEBHOOK_ALLOW_LOCAL=1`` (``allow_local``) lifts the address and scheme rules for
development and tests; the resolution and pinning still happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from calendar_service.errors import WebhookTargetRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Checked in order; the first match names the class in the refusal.
_V4_CLASSES: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified ('this network')"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared (carrier-grade NAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignment"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_V6_CLASSES: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::ffff:0:0/96"), "IPv4-mapped"),
    (_V6("::/96"), "IPv4-compatible"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),
    (_V6("100::/64"), "discard-only"),
    (_V6("2001::/32"), "Teredo"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("fc00::/7"), "unique local (private)"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)
_NAT64 = _V6("64:ff9b::/96")
_SIX_TO_FOUR = _V6("2002::/16")
_GLOBAL_UNICAST = _V6("2000::/3")


def address_problem(address: IPAddress) -> str | None:
    """Why ``address`` is not a public unicast address (its class), or None when it is."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, name in _V4_CLASSES:
            if address in network:
                return name
        return None if address.is_global else "not globally routable"
    if address.scope_id:
        return "link-local"
    for network6, name in _V6_CLASSES:
        if address in network6:
            return name
    # Addresses that embed an IPv4 address are as public as the address they embed.
    if address in _NAT64:
        inner = address_problem(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        return f"NAT64 embedding of a {inner} address" if inner else None
    if address in _SIX_TO_FOUR:
        embedded = address.sixtofour
        inner = address_problem(embedded) if embedded is not None else "unknown"
        return f"6to4 embedding of a {inner} address" if inner else None
    if address not in _GLOBAL_UNICAST:
        return "reserved"
    return None if address.is_global else "not globally routable"


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook target: where the request goes and the addresses it may use."""

    url: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


def parse_url(url: str, *, allow_local: bool) -> tuple[str, int]:
    """Check the URL's shape and scheme; returns (host, port). Raises WebhookTargetRefused."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookTargetRefused(f"The webhook URL is not a valid URL ({exc}).") from None
    schemes = ("https", "http") if allow_local else ("https",)
    if parts.scheme not in schemes:
        raise WebhookTargetRefused(
            "The webhook URL must start with https:// (plain http:// is allowed only with "
            "CALENDAR_WEBHOOK_ALLOW_LOCAL=1, for development)."
        )
    if not parts.hostname:
        raise WebhookTargetRefused("The webhook URL has no host name.")
    if parts.username is not None or parts.password is not None:
        raise WebhookTargetRefused(
            "The webhook URL must not carry a user name or password; check the signature "
            "headers instead."
        )
    try:
        # The host as httpx will connect to it (IDNA, lower case): the name that is resolved
        # and pinned must be the one the transport asks for.
        host = httpx.URL(url).raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError):
        raise WebhookTargetRefused("The webhook URL's host name is not valid.") from None
    return host, port or (443 if parts.scheme == "https" else 80)


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (``getaddrinfo``), off the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


async def check_target(
    url: str, *, allow_local: bool, resolver: Resolver = system_resolver
) -> Target:
    """Resolve the URL's host and refuse it unless every address is public (see module doc)."""
    host, port = parse_url(url, allow_local=allow_local)
    literal = _literal(host)
    if literal is not None:
        found: Iterable[str] = [str(literal)]
    else:
        try:
            found = await resolver(host, port)
        except (OSError, UnicodeError):
            raise WebhookTargetRefused(
                f"The webhook host {host!r} does not resolve to any address."
            ) from None
    addresses = tuple(dict.fromkeys(ipaddress.ip_address(a) for a in found))
    if not addresses:
        raise WebhookTargetRefused(f"The webhook host {host!r} does not resolve to any address.")
    if not allow_local:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None:
                raise WebhookTargetRefused(
                    f"The webhook host {host!r} resolves to {address}, a {problem} address: "
                    "webhooks go to public addresses only."
                )
    return Target(url=url, host=host, port=port, addresses=addresses)


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Pinning: the connection goes to the addresses that were checked.

_pins: contextvars.ContextVar[Mapping[str, tuple[IPAddress, ...]] | None] = contextvars.ContextVar(
    "webhook_pins", default=None
)


@contextlib.contextmanager
def pinned(target: Target) -> Iterator[None]:
    """Within this block (this task), connections to ``target.host`` use its checked addresses."""
    token = _pins.set({**(_pins.get() or {}), target.host: target.addresses})
    try:
        yield
    finally:
        _pins.reset(token)


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to pinned, checked addresses.

    A host without a pin is refused (fail closed): every request must go through
    ``check_target`` and ``pinned`` first. TLS is layered on by httpcore afterwards with the URL's
    host name as SNI and for certificate verification.
    """

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to the first reachable pinned address of ``host`` (refused without a pin)."""
        addresses = (_pins.get() or {}).get(host.strip("[]").lower())
        if not addresses:
            raise httpcore.ConnectError(f"no checked address for {host!r}: connection refused")
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Refused: webhooks go over TCP only."""
        raise httpcore.ConnectError("webhooks are never sent over Unix sockets")

    async def sleep(self, seconds: float) -> None:
        """The inner backend's sleep (httpcore's retry pause)."""
        await self._inner.sleep(seconds)
