"""Invitation links: ``<secret>:<timestamp>:<signature>`` (Django's TimestampSigner).

The signature (``DJANGO_SECRET_KEY``) and its age are checked before the database is
asked; the database holds only a SHA-256 of the secret, so a copy of it gives no
working link. A link works once (``accepted_at``) and until it expires.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.core import signing

from billing.config import billing_config

SALT = "billing.invitation"


def max_age() -> timedelta:
    return timedelta(hours=billing_config().invitation_max_age_h)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token() -> tuple[str, str]:
    """(token for the link, hash to store)."""
    secret = secrets.token_urlsafe(24)
    return signing.TimestampSigner(salt=SALT).sign(secret), secret_hash(secret)


def hash_from_token(token: str) -> str | None:
    """The stored hash this token stands for, or None if forged, mangled or too old."""
    try:
        secret = signing.TimestampSigner(salt=SALT).unsign(token, max_age=max_age())
    except signing.BadSignature:  # SignatureExpired is one
        return None
    return secret_hash(secret)
