"""Usage readers, one per upstream dialect: a provider's usage object -> the gateway's form.

The gateway's form is OpenAI's convention, the one billing prices
(``billing.pricing.call_cost``): ``prompt_tokens`` counts the whole prompt, cache reads
(``prompt_tokens_details.cached_tokens``) and cache writes
(``prompt_tokens_details.cache_write_tokens``) included::

    {"prompt_tokens", "completion_tokens", "total_tokens",
     "prompt_tokens_details": {"cached_tokens", "cache_write_tokens"},
     "completion_tokens_details": {"reasoning_tokens"}}

Dialects (docs/api.md "Usage dialects"; /work/shared/reference/provider-dialects.md):

- ``openai``: ``prompt_tokens``, ``prompt_tokens_details.cached_tokens`` and
  ``.cache_write_tokens``, ``completion_tokens``, ``completion_tokens_details.
  reasoning_tokens`` (OpenAI, OpenRouter, Groq, Fireworks, vLLM, ...).
- ``deepseek``: ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens`` (their sum is
  the prompt); no cache writes.
- ``anthropic``: ``input_tokens`` (the uncached part only) + ``cache_read_input_tokens``
  + ``cache_creation_input_tokens`` (or the ``cache_creation.ephemeral_*`` split);
  ``output_tokens``.
- ``none``: the provider's usage is never read; the gateway bills its own count.

Precedence, one rule: the dialect's own fields win; OpenAI's fields are read only for
what the dialect's own fields leave out, and the two are never added. So a DeepSeek
reply carrying both ``prompt_cache_hit_tokens`` and ``prompt_tokens_details.
cached_tokens`` is billed from the hit count, and an ``anthropic`` usage object without
``input_tokens`` is read as OpenAI's.

A count that is not a whole number >= 0 raises ``UnreadableUsage``: the caller bills its
estimate, as when no usage came. Bounds (the context length, cached <= prompt) are the
caller's check (``routing.gateway.relay.credible_usage``). No Django, no I/O.
"""

from __future__ import annotations

from typing import Any

OPENAI = "openai"
DEEPSEEK = "deepseek"
ANTHROPIC = "anthropic"
NO_USAGE = "none"
USAGE_DIALECTS = (OPENAI, DEEPSEEK, ANTHROPIC, NO_USAGE)
USAGE_DIALECT_CHOICES = [
    (OPENAI, "OpenAI (prompt_tokens_details.cached_tokens / cache_write_tokens)"),
    (DEEPSEEK, "DeepSeek (prompt_cache_hit_tokens / prompt_cache_miss_tokens)"),
    (ANTHROPIC, "Anthropic (input_tokens + cache_read / cache_creation_input_tokens)"),
    (NO_USAGE, "No usage (the gateway counts tokens itself; billed as estimated)"),
]
ANTHROPIC_TTL_WRITES = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


class UnreadableUsage(ValueError):
    """A usage object with a count that is not a whole number >= 0."""


def _count(container: Any, key: str) -> int | None:
    """``container[key]`` as a token count; None when absent or null."""
    if not isinstance(container, dict):
        raise UnreadableUsage(f"usage container is {type(container).__name__}")
    value = container.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnreadableUsage(f"{key} is {value!r}")
    if value < 0 or not float(value).is_integer():
        raise UnreadableUsage(f"{key} is {value!r}")
    return int(value)


def _details(usage: dict[str, Any], key: str) -> dict[str, Any]:
    details = usage.get(key)
    if details is None:
        return {}
    if not isinstance(details, dict):
        raise UnreadableUsage(f"{key} is {details!r}")
    return details


def gateway_usage(
    prompt: int, cached: int, written: int, completion: int, reasoning: int = 0
) -> dict[str, Any]:
    """A usage object in the gateway's form."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def read_openai(usage: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's usage: cached and cache-written tokens are part of ``prompt_tokens``."""
    prompt_details = _details(usage, "prompt_tokens_details")
    completion_details = _details(usage, "completion_tokens_details")
    return gateway_usage(
        prompt=_count(usage, "prompt_tokens") or 0,
        cached=_count(prompt_details, "cached_tokens") or 0,
        written=_count(prompt_details, "cache_write_tokens") or 0,
        completion=_count(usage, "completion_tokens") or 0,
        reasoning=_count(completion_details, "reasoning_tokens") or 0,
    )


def read_deepseek(usage: dict[str, Any]) -> dict[str, Any]:
    """DeepSeek's usage: hits and misses make the prompt (``prompt_tokens = hit + miss``).
    With both counts the prompt is their sum (each is billed at its price); the hit count
    wins over ``prompt_tokens_details.cached_tokens``."""
    base = read_openai(usage)
    hit = _count(usage, "prompt_cache_hit_tokens")
    miss = _count(usage, "prompt_cache_miss_tokens")
    details = base["prompt_tokens_details"]
    if hit is not None:
        details["cached_tokens"] = hit
    if hit is not None and miss is not None:
        base["prompt_tokens"] = hit + miss
        base["total_tokens"] = hit + miss + base["completion_tokens"]
    details["cache_write_tokens"] = 0  # DeepSeek's disk cache has no write charge
    return base


def read_anthropic(usage: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's usage: ``input_tokens`` excludes cache reads and writes, so the prompt
    is their sum. Without ``input_tokens`` the object is read as OpenAI's."""
    uncached = _count(usage, "input_tokens")
    if uncached is None:
        return read_openai(usage)
    read = _count(usage, "cache_read_input_tokens") or 0
    written = _count(usage, "cache_creation_input_tokens")
    if written is None:  # only the split by TTL
        split = _details(usage, "cache_creation")
        written = sum(_count(split, key) or 0 for key in ANTHROPIC_TTL_WRITES)
    output_details = _details(usage, "output_tokens_details")
    return gateway_usage(
        prompt=uncached + read + written,
        cached=read,
        written=written,
        completion=_count(usage, "output_tokens") or 0,
        reasoning=_count(output_details, "thinking_tokens") or 0,
    )


_READERS = {OPENAI: read_openai, DEEPSEEK: read_deepseek, ANTHROPIC: read_anthropic}


def read_usage(dialect: str, usage: Any) -> dict[str, Any] | None:
    """The provider's ``usage`` object in the gateway's form; None for the ``none``
    dialect (the provider's report is not read). Raises ``UnreadableUsage``."""
    if dialect == NO_USAGE:
        return None
    if not isinstance(usage, dict):
        raise UnreadableUsage(f"usage is {type(usage).__name__}")
    return _READERS.get(dialect, read_openai)(usage)
