"""Provider error text made safe to show a customer and to store (Activity, logs).

A provider's error body goes into the customer's error message: it is often the most
useful thing in it ("context length exceeded"). But a provider may echo the credential
it was sent (OpenAI's 401 does, masked; a misconfigured or hostile one need not mask
it), and the credential belongs to the operator, not to whoever made the call
(docs/security.md). So the call's own credential is replaced wherever it appears, and so
is anything shaped like a bearer token or a provider key.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8  # a shorter "secret" would blank ordinary words
_KEY_LIKE = re.compile(
    r"(?i)(?P<scheme>\bbearer\s+)[^\s\"',;]+"
    r"|\b(?:sk|rk|pk|ak)[-_][A-Za-z0-9_\-]{16,}"
    r"|\bsk-ant-[A-Za-z0-9_\-]{8,}"
)


def _key_like(match: re.Match[str]) -> str:
    return (match.group("scheme") or "") + REDACTED


def redact(text: str, authorization: str | None = None) -> str:
    """``text`` without ``authorization`` (the ``Authorization`` value sent: ``Bearer
    <key>``, so the key alone too) and without anything that looks like a key."""
    if authorization:
        scheme, _, token = authorization.partition(" ")
        for secret in (authorization, token if scheme.lower() == "bearer" else ""):
            if len(secret) >= MIN_SECRET_CHARS:
                text = text.replace(secret, REDACTED)
    return _KEY_LIKE.sub(_key_like, text)
