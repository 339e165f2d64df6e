"""Validation of admin-entered upstream URLs (the save-time half of the SSRF guard).

Fails closed: a host that does not resolve, or resolves to any non-public address
(private, loopback, link-local, CGNAT, multicast, reserved, ULA, IPv4-in-IPv6 of
those), a local name (``localhost.``, ``*.internal``, ...) or a cloud metadata name is
refused. ``UBERLLM_ALLOW_PRIVATE_UPSTREAMS`` allows the non-public ones (development);
metadata names and addresses stay refused. The connect-time half is
``providers/netguard.py`` (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import SplitResult, urlsplit

from django.core.exceptions import ValidationError

from .netguard import (
    METADATA_NAMES,
    is_blocked_hostname,
    is_metadata_address,
    is_public_address,
    normalise_hostname,
    private_upstreams_allowed,
)

ALLOW_HINT = "(set UBERLLM_ALLOW_PRIVATE_UPSTREAMS to allow it)"
# inet_aton's forms (2130706433, 0x7f.1, 0177.0.0.1): resolvers read them as addresses,
# people read them as names. Only canonical dotted quads are accepted.
NUMERIC_HOST = re.compile(r"(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]*|[0-9]*))*\.?", re.IGNORECASE)
# Paths that already name the operation: the gateway appends /chat/completions itself.
OPERATION_SUFFIX = re.compile(r"/(chat/completions|completions|messages|responses)/?$")


def _resolve(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [info[4][0] for info in infos]


def _addresses(host: str) -> list[str]:
    """The host's addresses: itself if it is an IP literal, else resolved (may be [])."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    if NUMERIC_HOST.fullmatch(host):
        raise ValidationError("Upstream URL host must be a name or a canonical IP address.")
    return _resolve(host)


def check_upstream_host(host: str) -> None:
    """Refuse a host the gateway must not call (see the module docstring)."""
    name = normalise_hostname(host)
    if name in METADATA_NAMES:
        raise ValidationError("Upstream URL points to a cloud metadata service.")
    allow_private = private_upstreams_allowed()
    if is_blocked_hostname(name) and not allow_private:
        raise ValidationError(f"Upstream URL points to a local host name {ALLOW_HINT}.")
    addresses = _addresses(name)
    if any(is_metadata_address(a) for a in addresses):
        raise ValidationError("Upstream URL points to a cloud metadata service.")
    if allow_private:
        return
    if not addresses:
        raise ValidationError(
            f"Upstream URL host {name!r} does not resolve, so it cannot be checked {ALLOW_HINT}."
        )
    if not all(is_public_address(a) for a in addresses):
        raise ValidationError(f"Upstream URL points to an internal address {ALLOW_HINT}.")


def _check_unambiguous(value: str, parts: SplitResult) -> None:
    """Refuse what parsers disagree on (so the host checked here, the host a credential
    is bound to and the host the HTTP client connects to are one and the same)."""
    if any(ch.isspace() or ch == "\\" for ch in value) or not value.isascii():
        raise ValidationError("Upstream URL must not contain spaces, backslashes or non-ASCII.")
    if "@" in parts.netloc:
        raise ValidationError("Upstream URL must not contain a user name or password.")
    if parts.query or parts.fragment or "?" in value or "#" in value:
        raise ValidationError("Upstream URL must not have a query string or fragment.")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise ValidationError("Upstream URL has an invalid port.") from None


def _check_base_path(parts: SplitResult) -> None:
    match = OPERATION_SUFFIX.search(parts.path)
    if match:
        base = parts.path[: match.start()] or "/"
        raise ValidationError(
            f"Enter the base URL without the operation: the gateway appends "
            f"/chat/completions itself (use {parts.scheme}://{parts.netloc}{base})."
        )


def validate_upstream_url(value: str) -> None:
    """An http(s) base URL, unambiguous, not ending in an operation, on a public host
    (non-public hosts only when ``UBERLLM_ALLOW_PRIVATE_UPSTREAMS`` is on)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Upstream URL must be an http(s) URL with a host.")
    _check_unambiguous(value, parts)
    _check_base_path(parts)
    check_upstream_host(parts.hostname)
