"""API key format and hashing: ``ullm_<prefix>_<secret>``, only a keyed hash stored."""

import hashlib
import hmac
import secrets
import string
from dataclasses import dataclass

from django.conf import settings

KEY_SCHEME = "ullm"
PREFIX_LENGTH = 8
SECRET_LENGTH = 40
_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class ParsedKey:
    prefix: str
    secret: str


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def generate_key() -> tuple[str, str, str]:
    """Return (plaintext key, prefix, secret hash). The plaintext is shown once, never stored."""
    prefix = _random(PREFIX_LENGTH)
    secret = _random(SECRET_LENGTH)
    return f"{KEY_SCHEME}_{prefix}_{secret}", prefix, hash_secret(secret)


def hash_secret(secret: str) -> str:
    """HMAC-SHA256 with a server-side pepper: keys have ~238 bits of entropy, so no KDF."""
    pepper = settings.SECRET_KEY.encode()
    return hmac.new(pepper, secret.encode(), hashlib.sha256).hexdigest()


def parse_key(raw: str) -> ParsedKey | None:
    parts = raw.split("_")
    if len(parts) != 3 or parts[0] != KEY_SCHEME:
        return None
    prefix, secret = parts[1], parts[2]
    if len(prefix) != PREFIX_LENGTH or len(secret) != SECRET_LENGTH:
        return None
    return ParsedKey(prefix=prefix, secret=secret)


def secret_matches(secret: str, stored_hash: str) -> bool:
    """Constant-time comparison of a presented secret with a stored hash."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)
