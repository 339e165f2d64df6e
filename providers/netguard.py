"""Egress guard: upstream calls only ever reach public addresses.

The admin's save-time check (``providers/validators.py``) resolves the host once; a
host can resolve to another address by the time the gateway connects (DNS rebinding),
so the upstream client checks again at connect time, after resolution:

- ``GuardedResolver`` wraps aiohttp's default resolver and drops every non-public
  address it returns (none left: ``EgressRefused``, an ``OSError``, which aiohttp
  reports as a connection error);
- ``guarded_socket_factory`` checks the address of every socket aiohttp opens, which
  also covers IP-literal URLs (aiohttp does not ask the resolver for those);
- ``guarded_connector()`` builds an ``aiohttp.TCPConnector`` with both.

``UBERLLM_ALLOW_PRIVATE_UPSTREAMS`` (the development switch; the emulator runs on
loopback) turns the address checks off. Metadata endpoints stay refused even then.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from providers.config import providers_config

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Not public, whatever ``ipaddress``'s flags say in this Python version: RFC 6890 and
# IANA special-purpose registries (private, loopback, link-local, CGNAT, benchmarking,
# documentation, multicast, reserved, ULA, site-local, Teredo/ORCHID ranges).
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/127",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
# IPv6 ranges that carry an IPv4 address: judged by the address they carry.
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
# Cloud metadata services: refused even with ALLOW_PRIVATE_UPSTREAMS.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.com",
        "metadata.tencentyun.com",
    }
)
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa")


class EgressRefused(OSError):
    """An upstream address or host name the gateway must not connect to."""


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, 6to4 or NAT64 IPv6 address."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def parse_address(value: str | IPAddress) -> IPAddress:
    if isinstance(value, str):
        value = ipaddress.ip_address(value.split("%", 1)[0])  # drop an IPv6 zone id
    return value


def is_metadata_address(value: str | IPAddress) -> bool:
    address = parse_address(value)
    if isinstance(address, ipaddress.IPv6Address):
        address = _carried_ipv4(address) or address
    return address in METADATA_ADDRESSES


def is_public_address(value: str | IPAddress) -> bool:
    """True only for a globally routable unicast address (IPv4-in-IPv6 unwrapped)."""
    address = parse_address(value)
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None:
            return is_public_address(carried)
    if any(address in net for net in BLOCKED_NETWORKS if net.version == address.version):
        return False
    return address.is_global and not address.is_multicast


def assert_public_address(ip: str | IPAddress) -> None:
    """Raise ``EgressRefused`` unless ``ip`` is a public unicast address."""
    if not is_public_address(ip):
        raise EgressRefused(f"refused to connect to a non-public address ({ip})")


def normalise_hostname(host: str) -> str:
    return host.strip().lower().rstrip(".")


def is_blocked_hostname(host: str) -> bool:
    """Names that are local or metadata services by definition, resolved or not."""
    name = normalise_hostname(host)
    return (
        name == "localhost"
        or name in METADATA_NAMES
        or any(name.endswith(suffix) for suffix in LOCAL_SUFFIXES)
    )


def private_upstreams_allowed() -> bool:
    return providers_config().allow_private_upstreams


def check_address(ip: str | IPAddress, *, allow_private: bool) -> None:
    """The connect-time rule for one resolved address."""
    if is_metadata_address(ip):
        raise EgressRefused(f"refused to connect to a metadata address ({ip})")
    if not allow_private:
        assert_public_address(ip)


class GuardedResolver(AbstractResolver):
    """aiohttp's default resolver, minus every address the gateway must not reach.

    ``allow_private`` defaults to ``UBERLLM_ALLOW_PRIVATE_UPSTREAMS`` (read per lookup).
    """

    def __init__(
        self, resolver: AbstractResolver | None = None, *, allow_private: bool | None = None
    ) -> None:
        self._resolver = resolver if resolver is not None else DefaultResolver()
        self._allow_private = allow_private

    def _allowed(self) -> bool:
        if self._allow_private is None:
            return private_upstreams_allowed()
        return self._allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        allow_private = self._allowed()
        if normalise_hostname(host) in METADATA_NAMES or (
            not allow_private and is_blocked_hostname(host)
        ):
            raise EgressRefused(f"refused to resolve a local or metadata host name ({host})")
        results = await self._resolver.resolve(host, port, family)
        kept = []
        for result in results:
            try:
                check_address(result["host"], allow_private=allow_private)
            except EgressRefused:
                continue
            kept.append(result)
        if not kept:
            raise EgressRefused(f"{host} resolves to no address the gateway may connect to")
        return kept

    async def close(self) -> None:
        await self._resolver.close()


def guarded_socket_factory(addr_info: tuple[Any, ...]) -> socket.socket:
    """aiohttp's ``socket_factory``: refuse before connecting to a non-public address."""
    family, sock_type, proto, _canonname, sockaddr = addr_info
    check_address(sockaddr[0], allow_private=private_upstreams_allowed())
    return socket.socket(family=family, type=sock_type, proto=proto)


def guarded_connector(**kwargs: Any) -> aiohttp.TCPConnector:
    """A TCPConnector that checks every resolved address and every socket it opens."""
    return aiohttp.TCPConnector(
        resolver=GuardedResolver(), socket_factory=guarded_socket_factory, **kwargs
    )
