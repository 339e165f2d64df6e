"""Provider credentials: encrypted at rest, bound to the endpoint's origin, never shown.

A credential is stored on its ``Endpoint`` as a Fernet token (``credential_encrypted``)
of ``{"origin": ..., "secret": ...}``: the secret together with the origin (scheme,
host, port) of the base URL it was entered for. ``authorization_for`` only returns the
``Authorization`` header when the endpoint's *current* base URL has that same origin,
so moving an endpoint to another host (an edit in the admin, a row changed in the
database) never carries its credential along: the admin must enter it again.
The token is authenticated, so the bound origin cannot be edited without the key.

Keys: ``UBERLLM_CREDENTIAL_KEYS`` (comma-separated Fernet keys; the first encrypts,
every one decrypts, so a new key is put first and ``manage.py rotate_credentials``
re-encrypts everything before the old key is removed). Without it, a key derived from
``DJANGO_SECRET_KEY`` is used: development only, ``check --deploy`` flags it.

Alternatively an endpoint may name an environment variable (``credential_env``), but
only one called ``UBERLLM_PROVIDER_KEY_*``, so no other setting of the process (the
secret key, database passwords) can ever be sent upstream.

Nothing here logs, returns or formats a secret except ``authorization_for``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import os
import re
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError

from providers.config import providers_config


class Credentialed(Protocol):
    """What this module reads of an endpoint (providers.models.Endpoint, or a copy)."""

    pk: Any
    base_url: str
    credential_encrypted: str
    credential_env: str


logger = logging.getLogger(__name__)

ENV_PREFIX = "UBERLLM_PROVIDER_KEY_"
ENV_NAME = re.compile(r"UBERLLM_PROVIDER_KEY_[A-Z0-9_]+")
DEFAULT_PORTS = {"http": 80, "https": 443}


class CredentialError(Exception):
    """A stored credential that cannot be used (wrong key, or bound to another origin)."""


def validate_credential_env(value: str) -> None:
    """Only variables named ``UBERLLM_PROVIDER_KEY_<NAME>`` may hold a provider key."""
    if value and not ENV_NAME.fullmatch(value):
        raise ValidationError(
            f"Only environment variables named {ENV_PREFIX}<NAME> (A-Z, 0-9, _) can hold "
            "a provider credential."
        )


def origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, lower-cased, with the default port made explicit."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def _derived_dev_key() -> bytes:
    digest = hashlib.sha256(b"uberllm provider credentials\0" + settings.SECRET_KEY.encode())
    return base64.urlsafe_b64encode(digest.digest())


@functools.lru_cache(maxsize=4)
def _multi_fernet(keys: tuple[str, ...], dev_key: bytes) -> MultiFernet:
    try:
        fernets = [Fernet(key.strip().encode()) for key in keys if key.strip()]
    except ValueError:
        raise ImproperlyConfigured(
            "UBERLLM_CREDENTIAL_KEYS holds an invalid Fernet key "
            "(32 url-safe base64-encoded bytes: Fernet.generate_key())."
        ) from None
    return MultiFernet(fernets or [Fernet(dev_key)])


def credential_keys_configured() -> bool:
    return any(key.strip() for key in providers_config().credential_keys)


def _fernet() -> MultiFernet:
    keys = tuple(providers_config().credential_keys)
    return _multi_fernet(keys, b"" if credential_keys_configured() else _derived_dev_key())


def seal(*, secret: str, base_url: str) -> str:
    """The stored form of ``secret``, bound to the origin of ``base_url``."""
    payload = orjson.dumps({"origin": origin_of(base_url), "secret": secret})
    return _fernet().encrypt(payload).decode("ascii")


def _unseal(token: str) -> tuple[str, str]:
    try:
        data = orjson.loads(_fernet().decrypt(token.encode("ascii")))
    except (InvalidToken, orjson.JSONDecodeError, UnicodeEncodeError):
        raise CredentialError("the stored credential cannot be decrypted") from None
    return data["origin"], data["secret"]


def stored_secret_for(endpoint: Credentialed) -> str | None:
    """The endpoint's stored secret if it is bound to the endpoint's current origin.

    Raises CredentialError when a credential is stored but unusable."""
    if not endpoint.credential_encrypted:
        return None
    origin, secret = _unseal(endpoint.credential_encrypted)
    if origin != origin_of(endpoint.base_url):
        raise CredentialError("the stored credential was entered for another host")
    return secret


def _env_secret_for(endpoint: Credentialed) -> str | None:
    name = endpoint.credential_env
    if not name:
        return None
    if not ENV_NAME.fullmatch(name):
        raise CredentialError(f"credential_env must be named {ENV_PREFIX}*")
    return os.environ.get(name) or None


def authorization_for(endpoint: Credentialed) -> str | None:
    """The ``Authorization`` header value for calls to ``endpoint``, or None.

    The stored (encrypted) credential wins over ``credential_env``. An unusable
    credential yields None (the upstream then answers 401) and one log line naming the
    endpoint and the reason, never the secret. The caller must send the header only to
    ``endpoint.base_url`` (routing/catalog.py builds the URL from that same base URL,
    and the upstream client follows no redirects).
    """
    try:
        secret = stored_secret_for(endpoint) or _env_secret_for(endpoint)
    except CredentialError as exc:
        logger.error("endpoint %s: credential not used: %s", endpoint.pk, exc)
        return None
    return f"Bearer {secret}" if secret else None


def rotate(token: str) -> str:
    """The same secret re-encrypted with the first key of UBERLLM_CREDENTIAL_KEYS."""
    return _fernet().rotate(token.encode("ascii")).decode("ascii")
