"""The webhook target rules: which URLs and addresses are refused, and what is resolved.

No test here resolves a name through DNS: names are resolved by injected resolvers."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calendar_service.delivery import webhook_targets
from calendar_service.platform.errors import ValidationFailed, WebhookTargetRefused

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


def resolving_to(*addresses: str) -> webhook_targets.Resolve:
    def resolve(host: str) -> Sequence[str]:
        return list(addresses)

    return resolve


def no_dns(host: str) -> Sequence[str]:
    raise AssertionError("the resolver must not be asked")


@pytest.mark.parametrize(("address", "name"), list(REFUSED.values()), ids=list(REFUSED))
def test_each_non_public_address_class_is_refused(address: str, name: str) -> None:
    assert name in (webhook_targets.address_problem(ipaddress.ip_address(address)) or "")
    with pytest.raises(WebhookTargetRefused, match="public addresses only") as refused:
        webhook_targets.check_target(
            "https://hooks.example.com/in", allow_local=False, resolve=resolving_to(address)
        )
    assert name in refused.value.message


@pytest.mark.parametrize("url", ["http://hooks.example.com/in", "https://hooks.example.com/in"])
def test_a_local_or_plain_http_target_refused_names_the_setting_that_allows_it_and_where(
    url: str,
) -> None:
    with pytest.raises(WebhookTargetRefused) as refused:
        webhook_targets.check_target(url, allow_local=False, resolve=resolving_to("127.0.0.1"))
    message = refused.value.message
    assert "CALENDAR_WEBHOOK_ALLOW_LOCAL=1" in message
    assert "for the service and for the calendar-service command" in message


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass_and_are_the_ones_pinned(address: str) -> None:
    target = webhook_targets.check_target(
        "https://hooks.example.com:8443/in", allow_local=False, resolve=resolving_to(address)
    )
    assert target.host == "hooks.example.com" and target.port == 8443
    assert target.addresses == (ipaddress.ip_address(address),)


def test_a_host_is_refused_when_any_one_of_its_addresses_is_not_public() -> None:
    with pytest.raises(WebhookTargetRefused, match=r"10\.0\.0\.5, a private address"):
        webhook_targets.check_target(
            "https://hooks.example.com/",
            allow_local=False,
            resolve=resolving_to("93.184.216.34", "10.0.0.5"),
        )


def test_an_international_host_name_is_resolved_and_pinned_in_its_idna_form() -> None:
    asked: list[str] = []

    def resolve(host: str) -> Sequence[str]:
        asked.append(host)
        return ["93.184.216.34"]

    target = webhook_targets.check_target(
        "https://Bücher.example/in", allow_local=False, resolve=resolve
    )
    assert asked == ["xn--bcher-kva.example"] and target.host == "xn--bcher-kva.example"
    assert httpx.URL(target.url).raw_host.decode() == target.host  # what the transport asks for


def test_ip_literals_are_checked_without_asking_dns() -> None:
    for url in ("https://127.0.0.1/", "https://[::1]:8443/", "https://[::ffff:10.0.0.1]/"):
        with pytest.raises(WebhookTargetRefused, match="public addresses only"):
            webhook_targets.check_target(url, allow_local=False, resolve=no_dns)


def test_plain_http_is_refused_unless_local_targets_are_allowed() -> None:
    public = resolving_to("93.184.216.34")
    with pytest.raises(WebhookTargetRefused, match="https://"):
        webhook_targets.check_target("http://hooks.example.com/", allow_local=False, resolve=public)
    target = webhook_targets.check_target("http://127.0.0.1:9/", allow_local=True, resolve=no_dns)
    assert target.addresses == (ipaddress.ip_address("127.0.0.1"),)


@pytest.mark.parametrize(
    "url",
    ["ftp://hooks.example.com/", "https:///nohost", "https://user:pw@hooks.example.com/", "x"],
)
def test_urls_that_are_not_plain_https_addresses_are_refused(url: str) -> None:
    with pytest.raises(WebhookTargetRefused):
        webhook_targets.check_target(url, allow_local=False, resolve=resolving_to("93.184.216.34"))


def test_a_host_that_does_not_resolve_is_refused() -> None:
    def fails(host: str) -> Sequence[str]:
        raise OSError("Name or service not known")

    with pytest.raises(WebhookTargetRefused, match="does not resolve"):
        webhook_targets.check_target(
            "https://nowhere.example.com/", allow_local=False, resolve=fails
        )


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/in\nX-Injected: 1",
        "https://hooks.example.com/\tin",
        "https://1.2.3.256/in",
        "https://01.2.3.4/in",
        "https://hooks%2eexample.com/in",
        "https://hooks example.com/in",
        "https://☃.example/in",
    ],
)
def test_control_characters_and_malformed_host_names_are_refused_without_asking_dns(
    url: str,
) -> None:
    with pytest.raises(WebhookTargetRefused, match=r"control characters|host name is not valid"):
        webhook_targets.check_target(url, allow_local=True, resolve=no_dns)


def test_an_endpoint_url_of_the_wrong_shape_is_a_validation_error_before_any_dns() -> None:
    for url, problem in [
        ("not a url", "must be an absolute https:// URL"),
        ("ftp://hooks.example.com/", "must be an absolute https:// URL"),
        ("https://hooks.example.com/in#top", "must not have a #fragment"),
        ("https://hooks.example.com/" + "a" * 2048, "must be at most 2048 characters"),
    ]:
        with pytest.raises(ValidationFailed) as invalid:
            webhook_targets.check_endpoint_url(url, allow_local=False, resolve=no_dns)
        assert invalid.value.errors == [{"field": "url", "message": problem}]


def test_an_endpoint_url_is_stripped_and_then_held_to_the_target_rules() -> None:
    target = webhook_targets.check_endpoint_url(
        "  https://hooks.example.com/in \n",
        allow_local=False,
        resolve=resolving_to("93.184.216.34"),
    )
    assert target.url == "https://hooks.example.com/in"
    with pytest.raises(WebhookTargetRefused, match="a private address"):
        webhook_targets.check_endpoint_url(
            "https://hooks.example.com/in", allow_local=False, resolve=resolving_to("10.0.0.1")
        )


HOST_CHARS = st.sampled_from(list("aZ09-._~%@:[]/\\?#!$&'()*+,;= \u00fc\u00df\u0130\u3002\u2603"))


@given(
    host=st.text(HOST_CHARS, min_size=1, max_size=24),
    port=st.none() | st.integers(0, 70000).map(str),
)
def test_a_host_the_rules_accept_is_the_host_httpx_connects_to(host: str, port: str | None) -> None:
    # The name resolved and pinned must be the one the transport asks for, or the connection
    # is refused at send time for want of a pin.
    url = f"https://{host}{'' if port is None else ':' + port}/in"
    try:
        checked, checked_port = webhook_targets.parse_url(url, allow_local=True)
    except WebhookTargetRefused:
        return
    parsed = httpx.URL(url)
    assert parsed.raw_host.decode("ascii").lower() == checked
    assert (parsed.port or 443) == checked_port
