"""The SSRF guard at send time: the target checked again, the connection pinned to it.

The rules (which URLs and addresses a webhook may go to) are the core's
(``calendar_service.webhook_targets``); the settings page and the CLI apply them when the owner
sets the webhook, and ``check_target`` here applies them again before every attempt, resolving
the host off the event loop. The addresses it returns are *pinned* (``pinned``) so that the
connection goes to exactly those addresses, never to a second DNS answer (no DNS-rebinding
window). ``PinnedBackend`` is the httpcore network backend that honours the pins: the URL keeps
its host name, so TLS still sends SNI for it and verifies the certificate against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import httpcore

from calendar_service import webhook_targets
from calendar_service.webhook_targets import IPAddress, Resolve, Target

_IP_CHECKS = 4096
_ip_checked: dict[tuple[str, bool], Target] = {}


async def check_target(
    url: str, *, allow_local: bool, resolve: Resolve = webhook_targets.system_resolve
) -> Target:
    """``webhook_targets.check_target`` for an attempt: a host name is resolved on a thread (an
    IP address needs no resolving, so no thread). A URL whose host is an IP address has nothing
    that can change between two checks (the rules are the code's), so its passed check is kept
    and looked up (a refusal is not kept: it is worked out again, and raised, each time)."""
    known = _ip_checked.get((url, allow_local))
    if known is not None:
        return known
    host, _ = webhook_targets.parse_url(url, allow_local=allow_local)
    if webhook_targets.is_ip_address(host):
        target = webhook_targets.check_target(url, allow_local=allow_local, resolve=resolve)
        if len(_ip_checked) >= _IP_CHECKS:
            _ip_checked.clear()
        _ip_checked[(url, allow_local)] = target
        return target
    return await asyncio.to_thread(
        webhook_targets.check_target, url, allow_local=allow_local, resolve=resolve
    )


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
