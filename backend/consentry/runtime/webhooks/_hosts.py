"""Which webhook URLs a run may name (``CONSENTRY_WEBHOOK_HOSTS``), checked twice: at the run's
start, by the URL alone (a refusal is a 422 and nothing is stored), and before each attempt, by
the addresses its host resolves to (an allowed name that resolves to an address the list did not
mean is not posted to: no SSRF into the deployment's network).

An entry is a host name (``hooks.example.com``), a wildcard of its subdomains
(``*.example.com``, not the name itself), an IP address (``10.0.0.7``, ``::1``) or a network
(``10.0.0.0/24``). A URL's host must match an entry, and be a name the resolver can encode (IDNA:
no empty or over-long label); at send time each address it resolves to must be a public one, or
one an address or network entry names (the default list, ``localhost,127.0.0.1,::1``, names the
loopback addresses ``localhost`` resolves to). An IPv6 address that carries an IPv4 one (mapped,
IPv4-compatible, 6to4, Teredo, NAT64) is public only when that IPv4 address is too; the local-use
NAT64 prefix ``64:ff9b:1::/48`` never is. Redirects are never followed. The name is resolved
again by the connection itself a moment later: a DNS server that answers differently in between
(rebinding) is not guarded against beyond that.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import SplitResult, urlsplit

import httpx

from consentry.errors import InvalidRequestError

__all__ = ["Resolver", "WebhookHosts", "is_public"]

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

Resolver = Callable[[str], Awaitable[list[str]]]
"""The addresses a host name resolves to (``OSError`` or ``UnicodeError`` when it does not)."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def _invalid(reason: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"`webhook` must be an http(s) URL with a host: {reason}.",
        code="webhook_invalid",
        details={"field": "webhook"},
    )


def _address(host: str) -> _Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 one carries, which is where a packet to it ends up."""
    found = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if address in _NAT64 or address in _IPV4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [v4 for v4 in found if v4 is not None]


def is_public(address: _Address) -> bool:
    """Whether ``address`` is globally reachable, and so is any IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_global
    if address in _LOCAL_NAT64:
        return False
    return address.is_global and all(v4.is_global for v4 in _embedded_ipv4(address))


async def _getaddrinfo(host: str) -> list[str]:
    found = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]


class WebhookHosts:
    def __init__(self, entries: Sequence[str], *, resolve: Resolver = _getaddrinfo) -> None:
        """``resolve``: how a name is resolved before each attempt (the system's resolver;
        tests pass their own)."""
        self._resolve = resolve
        self._names: set[str] = set()
        self._suffixes: list[str] = []
        self._networks: list[_Network] = []
        for raw in entries:
            entry = raw.strip().lower().strip("[]")
            if entry.startswith("*."):
                self._suffixes.append(entry[1:])  # ".example.com"
            elif "/" in entry:
                self._networks.append(ipaddress.ip_network(entry, strict=False))
            elif (address := _address(entry)) is not None:
                self._networks.append(ipaddress.ip_network(address))
            else:
                self._names.add(entry.rstrip("."))

    def check(self, url: str) -> str:
        """``url`` as given, when a run may name it; else 422 ``webhook_invalid`` (not an
        ``http(s)`` URL with a host the resolver can encode, or with credentials in it) or
        ``webhook_not_allowed``."""
        host = self._host(url)
        if not self._allows(host):
            raise InvalidRequestError(
                f"Webhooks may go only to the hosts CONSENTRY_WEBHOOK_HOSTS lists; {host!r} is "
                "not one of them.",
                code="webhook_not_allowed",
                details={"field": "webhook", "host": host},
            )
        return url

    async def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be posted to now (not a URL :meth:`check` takes, its host no
        longer listed, not resolved, or resolving to an address the list does not name), or
        None."""
        try:
            host = self._host(url)
        except InvalidRequestError:
            return "webhook_invalid"
        if not self._allows(host):
            return "webhook_not_allowed"
        if _address(host) is not None:
            return None  # (it matched an address or network entry)
        try:
            found = await self._resolve(host)
        except (OSError, UnicodeError):
            return "host_not_resolved"
        for text in found:
            address = ipaddress.ip_address(text.split("%")[0])
            if not (is_public(address) or self._names_address(address)):
                return "address_not_allowed"
        return None

    @staticmethod
    def _host(url: str) -> str:
        try:
            parts: SplitResult = urlsplit(url)
            port = parts.port
        except ValueError:
            raise _invalid("it cannot be read") from None
        if parts.scheme not in ("http", "https"):
            raise _invalid(f"the scheme is {parts.scheme or 'missing'!r}")
        if not parts.hostname:
            raise _invalid("it names no host")
        if parts.username is not None or parts.password is not None:
            raise _invalid("credentials in the URL are not taken (sign with the secret instead)")
        if port == 0:
            raise _invalid("port 0")
        if any(ch.isspace() for ch in url):
            raise _invalid("it contains spaces")
        host = parts.hostname.rstrip(".")
        if _address(host) is None:
            try:  # what the resolver does with it (an empty or over-long label fails)
                host.encode("idna")
            except UnicodeError:
                raise _invalid("its host is not a valid name") from None
        try:
            httpx.URL(url)  # what the post does with it
        except (httpx.InvalidURL, UnicodeError):
            raise _invalid("it cannot be read") from None
        return host

    def _allows(self, host: str) -> bool:
        address = _address(host)
        if address is not None:
            return self._names_address(address)
        return host in self._names or any(host.endswith(suffix) for suffix in self._suffixes)

    def _names_address(self, address: _Address) -> bool:
        mapped = getattr(address, "ipv4_mapped", None)
        return any(
            candidate in network
            for candidate in (address, mapped)
            if candidate is not None
            for network in self._networks
            if candidate.version == network.version
        )
