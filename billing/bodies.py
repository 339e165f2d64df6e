"""Opt-in request and response bodies (docs/dashboard.md, "Request and response
bodies"): what is kept of a call when its organisation switched body logging on.

Each body is redacted (``providers.redact``: bearer tokens and provider-key shapes,
plus UberLLM's own ``ullm_…`` keys) and then capped at ``BODY_MAX_CHARS`` characters.
The gateway prepares them in its background writer's thread, after the call
(routing.gateway.bodies); ``billing.services.call_bodies_store`` writes them.
Bodies never go to the logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from providers.redact import REDACTED, redact

BODY_MAX_CHARS = 64 * 1024  # per body (request, reply), after redaction
RETENTION_DAYS_DEFAULT = 7
RETENTION_DAYS_MAX = 90
TRUNCATED_MARK = "\n… [truncated]"
_GATEWAY_KEY = re.compile(r"\bullm_[A-Za-z0-9]{4,}_[A-Za-z0-9]{8,}")


@dataclass(frozen=True, slots=True)
class CallBodies:
    """A call's bodies as text, ready to store (``prepared``)."""

    organisation_id: int
    request_id: str
    request_text: str
    response_text: str
    created_at: datetime
    response_cut: bool = False  # the reply was cut while captured (routing.gateway.bodies)


@dataclass(frozen=True, slots=True)
class StoredText:
    text: str
    truncated: bool


def redacted(text: str) -> str:
    """``text`` without anything shaped like a key or bearer token."""
    return _GATEWAY_KEY.sub(REDACTED, redact(text))


def capped(text: str, truncated: bool = False) -> StoredText:
    """``text`` redacted and cut to ``BODY_MAX_CHARS`` with a "[truncated]" mark at the
    end (``truncated``: it was cut before, while captured)."""
    text = redacted(text)
    if not truncated and len(text) <= BODY_MAX_CHARS:
        return StoredText(text, False)
    return StoredText(text[: BODY_MAX_CHARS - len(TRUNCATED_MARK)] + TRUNCATED_MARK, True)
