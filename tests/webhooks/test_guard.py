"""The SSRF guard at send time: an attempt is checked again, and goes where the check looked.

Which targets are refused is the core's rule (tests/core/delivery/test_webhook_targets.py). No test
here sends traffic anywhere but 127.0.0.1: refusals happen before any connection, and names are
resolved by injected resolvers."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence

import pytest

from calendar_service.delivery import webhook_targets
from calendar_service.platform.errors import WebhookTargetRefused
from calendar_service.platform.timeutil import utcnow
from tests.support import TLSFiles
from tests.webhooks.support import Receiver, Reply
from webhooks import guard, sender
from webhooks.http11 import RequestFailed, WebhookClient
from webhooks.transport import make_client


def resolving_to(*addresses: str) -> webhook_targets.Resolve:
    def resolve(host: str) -> Sequence[str]:
        return list(addresses)

    return resolve


async def test_the_client_connects_only_to_checked_addresses() -> None:
    # A target with no checked address (one the guard never passed) reaches nothing.
    unchecked = webhook_targets.Target(
        url="https://127.0.0.1:9/never", host="127.0.0.1", port=9, addresses=()
    )
    async with make_client() as client:
        with pytest.raises(RequestFailed, match="no checked address"):
            await client.post(unchecked, body=b"{}", headers={}, max_body=100)
        assert client.connections_opened == 0


async def test_an_attempt_is_refused_before_sending_when_the_name_now_resolves_privately() -> None:
    async with make_client() as client:
        result = await attempt(client, "https://hooks.example.com/in", resolving_to("10.9.8.7"))
        assert client.requests_sent == 0 and client.connections_opened == 0
    assert result.status_code is None and not result.ok
    assert result.error is not None and result.error.startswith("target refused")
    assert "private" in result.error


async def test_the_request_goes_to_the_checked_address_with_tls_verified_for_the_host_name(
    receiver: Receiver, tls: TLSFiles
) -> None:
    # hooks.example.test exists only in the injected resolver: reaching the receiver proves the
    # connection went to the checked address; TLS succeeding proves the certificate was
    # verified for that name (it is one of the certificate's names).
    result, path = await attempt_by_name(receiver, tls, "hooks.example.test")
    assert result.status_code == 200, result.error
    [request] = receiver.received(path)
    port = receiver.base_url.rsplit(":", 1)[-1]
    assert request.headers["host"] == f"hooks.example.test:{port}"


async def test_a_certificate_that_does_not_name_the_host_fails_verification(
    receiver: Receiver, tls: TLSFiles
) -> None:
    result, path = await attempt_by_name(receiver, tls, "elsewhere.example.test")
    assert result.status_code is None
    assert result.error is not None and "certificate verification failed" in result.error
    assert receiver.received(path) == []


async def test_redirects_are_not_followed(receiver: Receiver, tls: TLSFiles) -> None:
    elsewhere = receiver.path(200)
    path = receiver.path(Reply(status=307, headers={"location": receiver.base_url + elsewhere}))
    async with make_client(verify=tls.client_context()) as client:
        result = await attempt(
            client, receiver.base_url + path, webhook_targets.system_resolve, allow_local=True
        )
    assert result.status_code == 307 and not result.ok
    assert result.error is not None and "redirect not followed" in result.error
    assert len(receiver.received(path)) == 1 and receiver.received(elsewhere) == []


async def attempt(
    client: WebhookClient,
    url: str,
    resolver: webhook_targets.Resolve,
    *,
    allow_local: bool = False,
) -> sender.AttemptResult:
    return await sender.attempt(
        client,
        url=url,
        msg_id="evt_test",
        body=b"{}",
        secrets=["whsec_" + "A" * 44],
        seed_header="x-calendar-signature",
        allow_local=allow_local,
        deadline=5.0,
        now=utcnow(),
        resolver=resolver,
    )


async def attempt_by_name(
    receiver: Receiver, tls: TLSFiles, host: str
) -> tuple[sender.AttemptResult, str]:
    """An attempt at a fresh path of the HTTPS ``receiver``, addressed by ``host`` (which the
    injected resolver sends to 127.0.0.1) over TLS verified against the test CA; returns the
    result and the path."""
    port = receiver.base_url.rsplit(":", 1)[-1]
    path = receiver.path(200)
    async with make_client(verify=tls.client_context()) as client:
        result = await attempt(
            client, f"https://{host}:{port}{path}", resolving_to("127.0.0.1"), allow_local=True
        )
    return result, path


async def test_a_name_is_resolved_once_for_attempts_at_the_same_moment() -> None:
    asked: list[str] = []

    def resolve(host: str) -> Sequence[str]:
        asked.append(host)
        return ["93.184.216.34"]

    url = "https://hooks.example.com/in"
    targets = await asyncio.gather(
        *(guard.check_target(url, allow_local=False, resolve=resolve) for _ in range(5))
    )
    again = await guard.check_target(url, allow_local=False, resolve=resolve)
    assert asked == ["hooks.example.com"]
    assert {t.addresses for t in [*targets, again]} == {(ipaddress.ip_address("93.184.216.34"),)}


async def test_a_failed_resolution_is_not_kept_and_every_answer_is_checked() -> None:
    answers: list[Sequence[str] | OSError] = [OSError("no"), ["10.1.2.3"]]

    def resolve(host: str) -> Sequence[str]:
        answer = answers.pop(0)
        if isinstance(answer, OSError):
            raise answer
        return answer

    url = "https://hooks.example.com/in"
    with pytest.raises(WebhookTargetRefused, match="does not resolve"):
        await guard.check_target(url, allow_local=False, resolve=resolve)
    with pytest.raises(WebhookTargetRefused, match="private"):
        await guard.check_target(url, allow_local=False, resolve=resolve)
    with pytest.raises(WebhookTargetRefused, match="private"):  # the kept answer, checked again
        await guard.check_target(url, allow_local=False, resolve=resolve)
    assert answers == []
