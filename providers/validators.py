"""Validation of admin-entered upstream URLs (SSRF guard)."""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError


def _is_internal(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if address.is_private or address.is_loopback or address.is_link_local:
            return True
        if address.is_reserved or address.is_multicast or address.is_unspecified:
            return True
    return False


def _check_unambiguous(value: str, parts) -> None:
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


def validate_upstream_url(value: str) -> None:
    """Accept http(s) URLs only; internal addresses only when the setting allows them."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Upstream URL must be an http(s) URL with a host.")
    _check_unambiguous(value, parts)
    if not settings.UBERLLM["ALLOW_PRIVATE_UPSTREAMS"] and _is_internal(parts.hostname):
        raise ValidationError(
            "Upstream URL points to an internal address "
            "(set UBERLLM_ALLOW_PRIVATE_UPSTREAMS to allow it)."
        )
