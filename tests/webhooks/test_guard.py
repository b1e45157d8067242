"""The SSRF guard: which targets are refused, and that requests go where the guard looked.

No test here sends traffic anywhere but 127.0.0.1: refusals happen before any connection, and
names are resolved by injected resolvers."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import httpx
import pytest

from calendar_service.errors import WebhookTargetRefused
from calendar_service.timeutil import utcnow
from tests.support import TLSFiles
from tests.webhooks.support import Receiver, Reply
from webhooks import guard, sender
from webhooks.transport import make_client

REFUSED = {
    "unspecified-ipv4": ("0.0.0.0", "unspecified"),  # noqa: S104 - refused, never bound
    "private-10": ("10.1.2.3", "private"),
    "private-172-16": ("172.16.5.4", "private"),
    "private-192-168": ("192.168.1.1", "private"),
    "cgnat": ("100.64.0.1", "carrier-grade NAT"),
    "loopback-ipv4": ("127.0.0.1", "loopback"),
    "link-local-ipv4-metadata": ("169.254.169.254", "link-local"),
    "ietf-protocol-assignment": ("192.0.0.8", "IETF protocol assignment"),
    "documentation-ipv4": ("192.0.2.10", "documentation"),
    "benchmarking": ("198.18.0.1", "benchmarking"),
    "multicast-ipv4": ("224.0.0.251", "multicast"),
    "reserved-ipv4": ("240.0.0.1", "reserved"),
    "broadcast": ("255.255.255.255", "broadcast"),
    "unspecified-ipv6": ("::", "unspecified"),
    "loopback-ipv6": ("::1", "loopback"),
    "ipv4-mapped": ("::ffff:127.0.0.1", "IPv4-mapped"),
    "ipv4-mapped-public": ("::ffff:93.184.216.34", "IPv4-mapped"),
    "ipv4-compatible": ("::127.0.0.1", "IPv4-compatible"),
    "nat64-of-private": ("64:ff9b::10.0.0.1", "NAT64 embedding of a private"),
    "local-use-nat64": ("64:ff9b:1::a00:1", "local-use NAT64"),
    "6to4-of-private": ("2002:c0a8:101::1", "6to4 embedding of a private"),
    "teredo": ("2001::1", "Teredo"),
    "documentation-ipv6": ("2001:db8::1", "documentation"),
    "unique-local": ("fd12:3456::1", "unique local"),
    "link-local-ipv6": ("fe80::1", "link-local"),
    "site-local": ("fec0::1", "site-local"),
    "multicast-ipv6": ("ff02::1", "multicast"),
    "discard-only": ("100::1", "discard-only"),
    "reserved-ipv6": ("4000::1", "reserved"),
}
PUBLIC = ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822")


def resolving_to(*addresses: str) -> guard.Resolver:
    async def resolve(host: str, port: int) -> Sequence[str]:
        return list(addresses)

    return resolve


async def no_dns(host: str, port: int) -> Sequence[str]:
    raise AssertionError("the resolver must not be asked")


@pytest.mark.parametrize(("address", "name"), list(REFUSED.values()), ids=list(REFUSED))
async def test_each_non_public_address_class_is_refused(address: str, name: str) -> None:
    assert name in (guard.address_problem(ipaddress.ip_address(address)) or "")
    with pytest.raises(WebhookTargetRefused, match="public addresses only") as refused:
        await guard.check_target(
            "https://hooks.example.com/in", allow_local=False, resolver=resolving_to(address)
        )
    assert name in refused.value.message


@pytest.mark.parametrize("address", PUBLIC)
async def test_public_addresses_pass_and_are_the_ones_pinned(address: str) -> None:
    target = await guard.check_target(
        "https://hooks.example.com:8443/in", allow_local=False, resolver=resolving_to(address)
    )
    assert target.host == "hooks.example.com" and target.port == 8443
    assert target.addresses == (ipaddress.ip_address(address),)


async def test_a_host_is_refused_when_any_one_of_its_addresses_is_not_public() -> None:
    with pytest.raises(WebhookTargetRefused, match=r"10\.0\.0\.5, a private address"):
        await guard.check_target(
            "https://hooks.example.com/",
            allow_local=False,
            resolver=resolving_to("93.184.216.34", "10.0.0.5"),
        )


async def test_an_international_host_name_is_resolved_and_pinned_in_its_idna_form() -> None:
    asked: list[str] = []

    async def resolve(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return ["93.184.216.34"]

    target = await guard.check_target(
        "https://Bücher.example/in", allow_local=False, resolver=resolve
    )
    assert asked == ["xn--bcher-kva.example"] and target.host == "xn--bcher-kva.example"
    assert httpx.URL(target.url).raw_host.decode() == target.host  # what the transport asks for


async def test_ip_literals_are_checked_without_asking_dns() -> None:
    for url in ("https://127.0.0.1/", "https://[::1]:8443/", "https://[::ffff:10.0.0.1]/"):
        with pytest.raises(WebhookTargetRefused, match="public addresses only"):
            await guard.check_target(url, allow_local=False, resolver=no_dns)


async def test_plain_http_is_refused_unless_local_targets_are_allowed() -> None:
    public = resolving_to("93.184.216.34")
    with pytest.raises(WebhookTargetRefused, match="https://"):
        await guard.check_target("http://hooks.example.com/", allow_local=False, resolver=public)
    target = await guard.check_target("http://127.0.0.1:9/", allow_local=True, resolver=no_dns)
    assert target.addresses == (ipaddress.ip_address("127.0.0.1"),)


@pytest.mark.parametrize(
    "url",
    ["ftp://hooks.example.com/", "https:///nohost", "https://user:pw@hooks.example.com/", "x"],
)
async def test_urls_that_are_not_plain_https_addresses_are_refused(url: str) -> None:
    with pytest.raises(WebhookTargetRefused):
        await guard.check_target(url, allow_local=False, resolver=resolving_to("93.184.216.34"))


async def test_a_host_that_does_not_resolve_is_refused() -> None:
    async def fails(host: str, port: int) -> Sequence[str]:
        raise OSError("Name or service not known")

    with pytest.raises(WebhookTargetRefused, match="does not resolve"):
        await guard.check_target("https://nowhere.example.com/", allow_local=False, resolver=fails)


async def test_the_transport_refuses_a_host_the_guard_did_not_check() -> None:
    async with make_client() as client:
        with pytest.raises(httpx.ConnectError, match="no checked address"):
            await client.post("https://127.0.0.1:9/never", content=b"{}")


async def test_an_attempt_is_refused_before_sending_when_the_name_now_resolves_privately() -> None:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    async with httpx.AsyncClient(transport=httpx.MockTransport(record)) as client:
        result = await attempt(client, "https://hooks.example.com/in", resolving_to("10.9.8.7"))
    assert result.status_code is None and not result.ok
    assert result.error is not None and result.error.startswith("target refused")
    assert "private" in result.error
    assert seen == []


async def test_the_request_goes_to_the_checked_address_with_tls_verified_for_the_host_name(
    receiver: Receiver, tls: TLSFiles
) -> None:
    # hooks.example.test exists only in the injected resolver: reaching the receiver proves the
    # connection went to the checked address; TLS succeeding proves the certificate was
    # verified for that name (it is one of the certificate's names).
    port = receiver.base_url.rsplit(":", 1)[-1]
    path = receiver.path(200)
    async with make_client(verify=tls.client_context()) as client:
        result = await attempt(
            client,
            f"https://hooks.example.test:{port}{path}",
            resolving_to("127.0.0.1"),
            allow_local=True,
        )
    assert result.status_code == 200, result.error
    [request] = receiver.received(path)
    assert request.headers["host"] == f"hooks.example.test:{port}"


async def test_a_certificate_that_does_not_name_the_host_fails_verification(
    receiver: Receiver, tls: TLSFiles
) -> None:
    port = receiver.base_url.rsplit(":", 1)[-1]
    path = receiver.path(200)
    async with make_client(verify=tls.client_context()) as client:
        result = await attempt(
            client,
            f"https://elsewhere.example.test:{port}{path}",
            resolving_to("127.0.0.1"),
            allow_local=True,
        )
    assert result.status_code is None
    assert result.error is not None and "certificate verification failed" in result.error
    assert receiver.received(path) == []


async def test_redirects_are_not_followed(receiver: Receiver, tls: TLSFiles) -> None:
    elsewhere = receiver.path(200)
    path = receiver.path(Reply(status=307, headers={"location": receiver.base_url + elsewhere}))
    async with make_client(verify=tls.client_context()) as client:
        result = await attempt(
            client, receiver.base_url + path, guard.system_resolver, allow_local=True
        )
    assert result.status_code == 307 and not result.ok
    assert result.error is not None and "redirect not followed" in result.error
    assert len(receiver.received(path)) == 1 and receiver.received(elsewhere) == []


async def attempt(
    client: httpx.AsyncClient, url: str, resolver: guard.Resolver, *, allow_local: bool = False
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
