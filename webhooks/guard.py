"""The SSRF guard at send time: the target checked again, the connection pinned to it.

The rules (which URLs and addresses a webhook may go to) are the core's
(``calendar_service.delivery.webhook_targets``); the settings page and the CLI apply them when the
owner sets the webhook, and ``check_target`` here applies them again before every attempt, resolving
the host off the event loop. The addresses it returns are *pinned* (``pinned``) so that the
connection goes to exactly those addresses, never to a second DNS answer (no DNS-rebinding
window). ``PinnedBackend`` is the httpcore network backend that honours the pins: the URL keeps
its host name, so TLS still sends SNI for it and verifies the certificate against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import httpcore

from calendar_service.delivery import webhook_targets
from calendar_service.delivery.webhook_targets import IPAddress, Resolve, Target

_IP_CHECKS = 4096
_ip_checked: dict[tuple[str, bool], Target] = {}

ANSWER_KEPT_SECONDS = 1.0
"""How long a host name's addresses, as the resolver gave them, are used again: a burst of
deliveries to one receiver resolves its name about once a second, not once an attempt. Each
attempt still checks the addresses against the rules and pins its connection to them."""
_ANSWERS = 4096
_answers: dict[tuple[Resolve, str], tuple[float, tuple[str, ...]]] = {}
_resolving: dict[tuple[Resolve, str], asyncio.Task[tuple[str, ...]]] = {}


async def check_target(
    url: str, *, allow_local: bool, resolve: Resolve = webhook_targets.system_resolve
) -> Target:
    """``webhook_targets.check_target`` for an attempt: a host name is resolved on a thread (an
    IP address needs no resolving, so no thread), its answer used again for
    ``ANSWER_KEPT_SECONDS`` (attempts asking meanwhile wait for the one resolution under way).
    A URL whose host is an IP address has nothing that can change between two checks (the
    rules are the code's), so its passed check is kept and looked up (a refusal is not kept: it
    is worked out again, and raised, each time)."""
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
    found = await _resolved(host, resolve)
    return webhook_targets.check_target(url, allow_local=allow_local, resolve=lambda _: found)


async def _resolved(host: str, resolve: Resolve) -> tuple[str, ...]:
    """``resolve(host)`` on a thread, or its answer of less than ``ANSWER_KEPT_SECONDS`` ago
    (no answer, or a failure, is never kept: ``()``, which the check refuses). One resolution
    runs at a time for a name, as a task of its own: an attempt that gives up waiting (its
    deadline) leaves it to the others."""
    key = (resolve, host)
    kept = _answers.get(key)
    if kept is not None and kept[0] > time.monotonic():
        return kept[1]
    loop = asyncio.get_running_loop()
    task = _resolving.get(key)
    if task is None or task.get_loop() is not loop:  # (another loop's: tests run several)
        task = _resolving[key] = loop.create_task(_resolve(key))
    return await asyncio.shield(task)


async def _resolve(key: tuple[Resolve, str]) -> tuple[str, ...]:
    resolve, host = key
    try:
        found = tuple(await asyncio.to_thread(_resolve_quietly, resolve, host))
    finally:
        if _resolving.get(key) is asyncio.current_task():
            del _resolving[key]
    if found:
        if len(_answers) >= _ANSWERS:
            _answers.clear()
        _answers[key] = (time.monotonic() + ANSWER_KEPT_SECONDS, found)
    return found


def _resolve_quietly(resolve: Resolve, host: str) -> Sequence[str]:
    """``resolve(host)``, or no address when it fails (as ``check_target`` takes a failure)."""
    try:
        return resolve(host)
    except (OSError, UnicodeError):
        return ()


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
