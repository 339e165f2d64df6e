"""A provider's refusal read: its error shape and its rate-limit headers.

Read once per refused attempt (never on the streaming path), so routing can act on
what the provider said instead of the bare HTTP status (docs/api.md "Refusals and rate
limits"; /work/shared/reference/provider-dialects.md):

- the error body: OpenAI / vLLM / DeepSeek ``{"error": {"message", "type", "code"}}``,
  OpenRouter ``{"error": {"code": <int>, "message", "metadata"}}``, Anthropic
  ``{"type": "error", "error": {"type", "message", "details": {"error_code"}}}``: the
  most specific code found (``insufficient_quota``, ``rate_limit_error``,
  ``overloaded_error``, ``enforced_spend_limit_reached``, ...);
- ``Retry-After`` (seconds or an HTTP date), ``x-ratelimit-remaining-{requests,tokens}``
  and ``x-ratelimit-reset-{requests,tokens}`` (OpenAI and Groq: durations such as
  ``12ms``, ``6m0s``; Together: ``x-ratelimit-remaining`` / ``x-ratelimit-reset`` in
  seconds), Anthropic's ``anthropic-ratelimit-{requests,tokens}-{remaining,reset}``
  (RFC 3339 times).

``retry_after_s``, one rule: the provider's ``Retry-After`` if sent; else, when a
remaining count is 0, the latest reset of the exhausted limits; else None (unknown: back
off as usual). A refusal that is a billing stop (``billing_stop``: HTTP 402, OpenAI's
``insufficient_quota``, Anthropic's ``enforced_spend_limit_reached``) does not end by
waiting, so it has no ``retry_after_s``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import orjson

BILLING_STOP_CODES = frozenset(
    {"insufficient_quota", "enforced_spend_limit_reached", "billing_hard_limit_reached"}
)
LIMITS = ("requests", "tokens")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a provider's refused answer says beyond its status."""

    error_code: str = ""  # the most specific code or type of the error body
    retry_after_s: float | None = None  # when to try this endpoint again (module doc)
    remaining: Mapping[str, int] | None = None  # {"requests": n, "tokens": n}
    reset_s: Mapping[str, float] | None = None  # seconds until each limit resets
    billing_stop: bool = False  # out of credit or over a spend cap: not a rate limit


def error_code(body: bytes) -> str:
    """The most specific error code of an error body (any provider's shape), or ""."""
    try:
        data = orjson.loads(body.strip() or b"null")
    except orjson.JSONDecodeError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return ""
    details = error.get("details")
    if isinstance(details, dict) and isinstance(details.get("error_code"), str):
        return details["error_code"]
    for key in ("code", "type"):
        if isinstance(error.get(key), str) and error[key]:
            return error[key]
    return ""


def duration_s(value: str, now: datetime | None = None) -> float | None:
    """A reset or retry value as seconds from now: plain seconds (``"1"``, ``"0.5"``),
    a duration (``"6m0s"``, ``"12ms"``), an RFC 3339 time or an HTTP date."""
    value = value.strip()
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    parts = _DURATION.findall(value)
    if parts and "".join(n + u for n, u in parts) == value:
        return sum(float(n) * _UNIT_S[u] for n, u in parts)
    return _seconds_until(value, now or datetime.now(UTC))


def _seconds_until(value: str, now: datetime) -> float | None:
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            at = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max((at - now).total_seconds(), 0.0)


def _header(headers: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = headers.get(name)
        if value is not None:
            return value
    return None


def _limits(headers: Mapping[str, str], now: datetime) -> tuple[dict, dict]:
    remaining: dict[str, int] = {}
    reset: dict[str, float] = {}
    for limit in LIMITS:
        left = _header(
            headers, f"x-ratelimit-remaining-{limit}", f"anthropic-ratelimit-{limit}-remaining"
        )
        if left is None and limit == "requests":
            left = headers.get("x-ratelimit-remaining")  # Together
        if left is not None and left.strip().lstrip("-").isdigit():
            remaining[limit] = int(left)
        when = _header(headers, f"x-ratelimit-reset-{limit}", f"anthropic-ratelimit-{limit}-reset")
        if when is None and limit == "requests":
            when = headers.get("x-ratelimit-reset")
        if when is not None and (seconds := duration_s(when, now)) is not None:
            reset[limit] = seconds
    return remaining, reset


def read_refusal(
    status: int, headers: Mapping[str, str], body: bytes, now: datetime | None = None
) -> Refusal:
    """What a refused answer (``status`` >= 400) says: see the module doc."""
    now = now or datetime.now(UTC)
    code = error_code(body)
    remaining, reset = _limits(headers, now)
    billing_stop = status == 402 or code in BILLING_STOP_CODES
    retry_after = None
    if not billing_stop:
        sent = headers.get("retry-after")
        retry_after = duration_s(sent, now) if sent is not None else None
        exhausted = [reset[k] for k, left in remaining.items() if left <= 0 and k in reset]
        if retry_after is None and exhausted:
            retry_after = max(exhausted)
    return Refusal(code, retry_after, remaining or None, reset or None, billing_stop)
