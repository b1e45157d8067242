"""Where a webhook may be sent: the target rules against SSRF, one set for every front.

``check_endpoint_url(url, allow_local=..., resolve=...)`` is what a URL must pass to become an
owner's endpoint: its shape (``check_url_shape``: a ``ValidationFailed`` on the field ``url``),
then ``check_target``. ``webhook_config.set_endpoint`` stores only the ``Target`` it returns, so
the settings page, the CLI and any other front go through the same check.

``check_target`` parses the URL, resolves its host and refuses it (``WebhookTargetRefused``)
unless the scheme is ``https`` and *every* address the name resolves to is public. The
``Target`` lists those addresses; the sender (``webhooks.guard``) runs the same check again
before every attempt and pins the connection to them (no second DNS answer).

Nothing here does I/O of its own accord: the caller passes ``resolve`` (a host name → its
addresses). ``system_resolve`` is the operating system's resolver, for callers to pass; it
blocks, so async callers run the check off their event loop.

``allow_local`` (``CALENDAR_WEBHOOK_ALLOW_LOCAL=1``) lifts the address and scheme rules for
development and tests; the resolution still happens. Each refusal it would lift says so, and
where to set it (``ALLOW_LOCAL_HINT``): for the service and for the CLI command that sets the
webhook, which checks the URL in its own process.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from calendar_service.platform.errors import FieldError, ValidationFailed, WebhookTargetRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolve = Callable[[str], Sequence[str]]
"""A host name (ASCII) → the addresses it resolves to; raises ``OSError`` when it does not."""

URL_MAX = 2048
# Said by every refusal the setting would lift, on every front: the check runs where the URL is
# set (the CLI's process too, which reads its own environment) and again where it is sent.
ALLOW_LOCAL_HINT = (
    "A receiver on this machine or a private network (plain http:// included) is for "
    "development and tests: allow it with CALENDAR_WEBHOOK_ALLOW_LOCAL=1, set for the service "
    "and for the calendar-service command that sets the webhook."
)

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


def check_url_shape(url: str) -> str:
    """An absolute ``http(s)`` URL with a host, at most 2048 characters, without a fragment;
    returns it stripped. The scheme policy and the addresses are ``check_target``'s."""
    url = (url or "").strip()
    problem = None
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            problem = "must be an absolute https:// URL"
        elif len(url) > URL_MAX:
            problem = f"must be at most {URL_MAX} characters"
        elif parts.fragment:
            problem = "must not have a #fragment"
    except ValueError:
        problem = "must be an absolute https:// URL"
    if problem:
        raise ValidationFailed([FieldError("url", problem)])
    return url


def check_endpoint_url(url: str, *, allow_local: bool, resolve: Resolve) -> Target:
    """The check for a URL an owner sets as their endpoint: ``check_url_shape``, then
    ``check_target`` (no DNS for a URL of the wrong shape)."""
    return check_target(check_url_shape(url), allow_local=allow_local, resolve=resolve)


def parse_url(url: str, *, allow_local: bool) -> tuple[str, int]:
    """Check the URL's scheme and host; returns (host, port). Raises WebhookTargetRefused.

    The host is the name the HTTP client connects to (``ascii_host``), so the name resolved,
    checked and pinned is the one the connection asks for."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookTargetRefused(f"The webhook URL is not a valid URL ({exc}).") from None
    schemes = ("https", "http") if allow_local else ("https",)
    if parts.scheme not in schemes:
        raise WebhookTargetRefused(f"The webhook URL must start with https://. {ALLOW_LOCAL_HINT}")
    if not parts.hostname:
        raise WebhookTargetRefused("The webhook URL has no host name.")
    if parts.username is not None or parts.password is not None:
        raise WebhookTargetRefused(
            "The webhook URL must not carry a user name or password; check the signature "
            "headers instead."
        )
    if any(char.isascii() and not char.isprintable() for char in url):
        # urlsplit drops tabs and line breaks where the HTTP client would refuse the URL.
        raise WebhookTargetRefused(
            "The webhook URL must not contain control characters (such as tabs or line breaks)."
        )
    return ascii_host(parts.hostname), port or (443 if parts.scheme == "https" else 80)


_IPV4_STYLE = re.compile(r"[0-9]+(?:\.[0-9]+){3}")
_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")


def ascii_host(hostname: str) -> str:
    """``hostname`` (as ``urlsplit`` gives it: lower case, without brackets) as a connection
    asks for it: an IP address as written, a name in ASCII (IDNA 2008, as httpx encodes it).
    Anything else (a malformed IPv4 address, characters no host name has) is refused."""
    if _literal(hostname) is not None:
        return hostname.lower()  # urlsplit keeps an IPv6 zone's case
    try:
        name = hostname if hostname.isascii() else idna.encode(hostname).decode("ascii")
    except idna.IDNAError:
        name = ""
    if _IPV4_STYLE.fullmatch(name) or not _NAME.fullmatch(name):
        raise WebhookTargetRefused("The webhook URL's host name is not valid.")
    return name


def check_target(url: str, *, allow_local: bool, resolve: Resolve) -> Target:
    """Resolve the URL's host and refuse it unless every address is public (see module doc).

    An IP address in the URL is checked as it is, without calling ``resolve``."""
    host, port = parse_url(url, allow_local=allow_local)
    literal = _literal(host)
    if literal is not None:
        found: Sequence[str] = [str(literal)]
    else:
        try:
            found = resolve(host)
        except (OSError, UnicodeError):
            found = []
    addresses = tuple(dict.fromkeys(ipaddress.ip_address(a) for a in found))
    if not addresses:
        raise WebhookTargetRefused(f"The webhook host {host!r} does not resolve to any address.")
    if not allow_local:
        for address in addresses:
            problem = address_problem(address)
            if problem is not None:
                raise WebhookTargetRefused(
                    f"The webhook host {host!r} resolves to {address}, a {problem} address: "
                    f"webhooks go to public addresses only. {ALLOW_LOCAL_HINT}"
                )
    return Target(url=url, host=host, port=port, addresses=addresses)


def is_ip_address(host: str) -> bool:
    """Whether ``host`` (as ``parse_url`` returns it) is an IP address: nothing to resolve."""
    return _literal(host) is not None


def system_resolve(host: str) -> list[str]:
    """The operating system's resolver (``getaddrinfo``), for callers to pass as ``resolve``.

    It blocks until the answer comes (or the resolver gives up)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
