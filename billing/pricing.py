"""Exact cost arithmetic in Decimal: the serving endpoint's prices x the reported usage."""

from __future__ import annotations

from decimal import Decimal

PER_MILLION = Decimal(1_000_000)
COST_QUANTUM = Decimal("0.0000000001")


def call_cost(
    *,
    prices: dict[str, Decimal],
    prompt_tokens: int,
    cached_tokens: int,
    completion_tokens: int,
    cache_write_tokens: int = 0,
) -> Decimal:
    """USD for one call: uncached input, cache reads, cache writes and output, each at
    its own price.

    ``prices`` holds USD per 1M tokens under ``input``, ``cache_read``, ``output`` and
    (optional, 0 when missing) ``cache_write``. Cache reads and cache writes are both
    part of ``prompt_tokens`` (OpenAI's usage convention: ``prompt_tokens_details.
    cached_tokens`` / ``cache_write_tokens``); an Anthropic-shaped usage must be
    converted first (``prompt_tokens = input_tokens + cache_read_input_tokens +
    cache_creation_input_tokens``). Each class is clamped to what the prompt has left,
    reads first, so no token is billed twice.
    """
    prompt = max(prompt_tokens, 0)
    cached = min(max(cached_tokens, 0), prompt)
    written = min(max(cache_write_tokens, 0), prompt - cached)
    uncached = prompt - cached - written
    total = (
        Decimal(uncached) * Decimal(prices["input"])
        + Decimal(cached) * Decimal(prices["cache_read"])
        + Decimal(max(completion_tokens, 0)) * Decimal(prices["output"])
    )
    if written:
        total += Decimal(written) * Decimal(prices.get("cache_write", 0))
    return (total / PER_MILLION).quantize(COST_QUANTUM)
