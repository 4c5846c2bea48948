"""The webhook allow-list (``runtime.webhooks._hosts``): what a run's URL may name at its start,
and where a name may resolve to before each attempt (an injected resolver stands for DNS)."""

from __future__ import annotations

import ipaddress

import pytest

from consentry.errors import InvalidRequestError
from consentry.runtime.webhooks import WebhookHosts
from consentry.runtime.webhooks._hosts import is_public


def _resolving_to(*addresses: str | BaseException) -> WebhookHosts:
    async def resolve(host: str) -> list[str]:
        if isinstance(addresses[0], BaseException):
            raise addresses[0]
        return [str(address) for address in addresses]

    return WebhookHosts(["*.example.com", "10.9.0.0/16"], resolve=resolve)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("10.0.0.1", False),
        ("::ffff:169.254.169.254", False),  # IPv4-mapped
        ("::169.254.169.254", False),  # IPv4-compatible
        ("::8.8.8.8", True),
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
        ("64:ff9b:1::808:808", False),  # the local-use NAT64 prefix, whatever it carries
        ("2002:a9fe:a9fe::1", False),  # 6to4 of 169.254.169.254
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", False),  # Teredo of 10.0.0.1
    ],
)
def test_an_address_is_public_only_when_any_ipv4_address_it_carries_is_too(
    address: str, public: bool
) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


@pytest.mark.parametrize(
    "url",
    [
        "http://a..example.com/hook",  # an empty label
        f"http://{'a' * 64}.example.com/hook",  # a label over 63 characters
        "http://.example.com/hook",
        "http://hooks.example.com/\x7f",  # httpx refuses it (InvalidURL)
        "http://hooks.example.com/\ud800",  # a lone surrogate (JSON can carry one)
    ],
)
def test_a_url_the_resolver_or_the_post_cannot_encode_is_refused_at_the_start(url: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        WebhookHosts(["*.example.com"]).check(url)
    assert refused.value.code == "webhook_invalid"


async def test_a_planted_url_the_start_would_refuse_is_refused_before_an_attempt() -> None:
    hosts = WebhookHosts(["*.example.com"])
    assert await hosts.refusal("http://a..example.com/hook") == "webhook_invalid"
    assert await hosts.refusal("http://a.example.org/hook") == "webhook_not_allowed"


@pytest.mark.parametrize(
    ("addresses", "refusal"),
    [
        (("93.184.215.14",), None),
        (("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"), None),
        (("10.9.3.4",), None),  # a listed network
        (("93.184.215.14", "10.0.0.1"), "address_not_allowed"),  # one private is enough
        (("169.254.169.254",), "address_not_allowed"),
        (("64:ff9b::a9fe:a9fe",), "address_not_allowed"),
        (("::ffff:127.0.0.1",), "address_not_allowed"),
        (("fe80::1%eth0",), "address_not_allowed"),
        ((OSError("no such name"),), "host_not_resolved"),
        ((UnicodeError("label empty or too long"),), "host_not_resolved"),
    ],
)
async def test_a_name_is_posted_to_only_when_it_resolves_to_public_or_listed_addresses(
    addresses: tuple[str | BaseException, ...], refusal: str | None
) -> None:
    assert await _resolving_to(*addresses).refusal("https://hooks.example.com/end") == refusal


async def test_a_name_listed_alone_does_not_take_the_loopback_addresses_it_resolves_to() -> None:
    async def resolve(host: str) -> list[str]:
        return ["127.0.0.1", "::1"]

    by_name = WebhookHosts(["localhost"], resolve=resolve)
    with_addresses = WebhookHosts(["localhost", "127.0.0.1", "::1"], resolve=resolve)
    assert await by_name.refusal("http://localhost:9000/") == "address_not_allowed"
    assert await with_addresses.refusal("http://localhost:9000/") is None
