"""SSRF: the save-time URL check fails closed; the connect-time guard (aiohttp resolver
and socket factory) refuses non-public addresses after resolution (DNS rebinding)."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver
from django.core.exceptions import ValidationError

from providers.netguard import (
    EgressRefused,
    GuardedResolver,
    assert_public_address,
    guarded_connector,
    is_public_address,
)
from providers.validators import validate_upstream_url

from .loopback import RecordingServer

NON_PUBLIC = [
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.254",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "198.18.0.1",
    "192.0.2.1",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::1",
    "2001:db8::1",
    "fec0::1",
    "fe80::1%eth0",
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.fixture
def strict(settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}


@pytest.fixture
def lenient(settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}


@pytest.mark.parametrize("ip", NON_PUBLIC)
def test_non_public_addresses_refused(ip):
    assert not is_public_address(ip)
    with pytest.raises(EgressRefused):
        assert_public_address(ip)


@pytest.mark.parametrize("ip", PUBLIC)
def test_public_addresses_pass(ip):
    assert is_public_address(ip)
    assert_public_address(ip)


def _url(host: str) -> str:
    return f"https://[{host.split('%')[0]}]/v1" if ":" in host else f"https://{host}/v1"


@pytest.mark.parametrize(
    "url",
    [_url(ip) for ip in NON_PUBLIC if "%" not in ip]
    + [
        "http://localhost/v1",
        "http://localhost./v1",
        "http://LOCALHOST:8000/v1",
        "http://api.localhost/v1",
        "http://metadata.google.internal/computeMetadata/v1",
        "http://metadata/v1",
        "http://printer.local/v1",
        "http://db.internal/v1",
        # No DNS answer (.invalid never resolves): cannot be checked, so refused.
        "http://no-such-host.invalid/v1",
        "http://169.254.169.254.nip.invalid/v1",
        # inet_aton forms of 127.0.0.1.
        "http://2130706433/v1",
        "http://0x7f.1/v1",
        "http://0177.0.0.1/v1",
        "http://127.1/v1",
    ],
)
def test_save_time_check_refuses(strict, url):
    with pytest.raises(ValidationError):
        validate_upstream_url(url)


@pytest.mark.parametrize("url", [_url(ip) for ip in PUBLIC])
def test_save_time_check_accepts_public_addresses(strict, url):
    validate_upstream_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8100/v1",
        "http://localhost:8100/v1",
        "http://10.0.0.1/v1",
        "http://no-such-host.invalid/v1",
    ],
)
def test_dev_switch_allows_private_and_unresolvable(lenient, url):
    validate_upstream_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest",
        "http://metadata.google.internal/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://[fd00:ec2::254]/v1",
    ],
)
def test_metadata_refused_even_with_the_dev_switch(lenient, url):
    with pytest.raises(ValidationError, match="metadata"):
        validate_upstream_url(url)


class RebindingDNS(AbstractResolver):
    """A DNS server under an attacker's control, as a resolver: every name resolves to
    ``address`` (public at save time, loopback at connect time is the rebinding case)."""

    def __init__(self, address: str) -> None:
        self.address = address

    async def resolve(self, host, port=0, family=socket.AF_INET):
        return [
            {
                "hostname": host,
                "host": self.address,
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass


async def _get(url: str, connector: aiohttp.BaseConnector) -> int:
    timeout = aiohttp.ClientTimeout(total=5)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(url, timeout=timeout) as response,
    ):
        return response.status


async def test_rebound_name_is_refused_at_connect_time(strict):
    with RecordingServer(status=200) as server:
        resolver = GuardedResolver(RebindingDNS("127.0.0.1"))
        with pytest.raises(aiohttp.ClientConnectorError):
            await _get(
                f"http://api.rebind.example:{server.port}/v1",
                aiohttp.TCPConnector(resolver=resolver),
            )
    assert server.requests == []


async def test_rebound_name_is_allowed_with_the_dev_switch(strict):
    with RecordingServer(status=200) as server:
        resolver = GuardedResolver(RebindingDNS("127.0.0.1"), allow_private=True)
        status = await _get(
            f"http://api.rebind.example:{server.port}/v1", aiohttp.TCPConnector(resolver=resolver)
        )
    assert status == 200 and len(server.requests) == 1


async def test_default_resolver_refuses_localhost_and_allows_it_when_allowed(settings):
    with RecordingServer(status=200) as server:
        url = f"http://localhost:{server.port}/v1"
        settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}
        with pytest.raises(aiohttp.ClientConnectorError):
            await _get(url, guarded_connector())
        assert server.requests == []
        settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
        assert await _get(url, guarded_connector()) == 200
    assert len(server.requests) == 1


async def test_ip_literal_refused_by_the_socket_factory(settings):
    # aiohttp does not ask the resolver about an IP literal: the socket factory does it.
    with RecordingServer(status=200) as server:
        settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}
        with pytest.raises(aiohttp.ClientConnectorError):
            await _get(f"{server.base_url}/v1", guarded_connector())
        assert server.requests == []
        settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
        assert await _get(f"{server.base_url}/v1", guarded_connector()) == 200


async def test_resolver_keeps_only_public_answers(strict):
    class Mixed(RebindingDNS):
        async def resolve(self, host, port=0, family=socket.AF_INET):
            inner = RebindingDNS("10.0.0.7")
            public = RebindingDNS("8.8.8.8")
            return await inner.resolve(host, port) + await public.resolve(host, port)

    results = await GuardedResolver(Mixed("x")).resolve("api.example.com", 443)
    assert [r["host"] for r in results] == ["8.8.8.8"]
