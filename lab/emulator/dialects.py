"""The usage object in each provider's dialect (the profile's ``usage_dialect``), so the
gateway's usage readers (``providers.protocols.usage``) each meet their provider on
real HTTP:

- ``openai``: ``prompt_tokens`` with ``prompt_tokens_details.cached_tokens`` in it;
- ``deepseek``: ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens`` (their sum is
  ``prompt_tokens``), the older replies' form, without OpenAI's details;
- ``anthropic``: Anthropic's native counts on an OpenAI-shaped reply (``input_tokens``
  excludes the cached part; ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
  ``output_tokens``);
- ``none``: no usage at all, even when the request asks for it.

The Messages route (``/v1/messages``) always reports Anthropic's own usage, whatever the
profile says.
"""

from __future__ import annotations

from typing import Any

USAGE_DIALECTS = ("openai", "deepseek", "anthropic", "none")


def in_dialect(report: dict[str, Any], dialect: str) -> dict[str, Any] | None:
    """``report`` (OpenAI's usage object) in ``dialect``; None for ``none``."""
    if dialect == "none":
        return None
    prompt, completion = report["prompt_tokens"], report["completion_tokens"]
    cached = report["prompt_tokens_details"]["cached_tokens"]
    if dialect == "deepseek":
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_cache_hit_tokens": cached,
            "prompt_cache_miss_tokens": prompt - cached,
            "completion_tokens_details": report["completion_tokens_details"],
        }
    if dialect == "anthropic":
        return {
            "input_tokens": prompt - cached,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
            "output_tokens": completion,
        }
    return report
