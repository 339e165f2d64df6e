"""Exact cost arithmetic in Decimal: the serving endpoint's prices x the reported usage."""

from __future__ import annotations

from decimal import Decimal

PER_MILLION = Decimal(1_000_000)
COST_QUANTUM = Decimal("0.0000000001")


def call_cost(
    *, prices: dict[str, Decimal], prompt_tokens: int, cached_tokens: int, completion_tokens: int
) -> Decimal:
    """USD for one call: uncached input, cache reads and output, each at its own price.

    ``prices`` holds USD per 1M tokens under ``input``, ``cache_read`` and ``output``.
    Cached tokens are part of ``prompt_tokens`` (OpenAI's usage convention).
    """
    cached = min(max(cached_tokens, 0), max(prompt_tokens, 0))
    uncached = max(prompt_tokens, 0) - cached
    total = (
        Decimal(uncached) * Decimal(prices["input"])
        + Decimal(cached) * Decimal(prices["cache_read"])
        + Decimal(max(completion_tokens, 0)) * Decimal(prices["output"])
    )
    return (total / PER_MILLION).quantize(COST_QUANTUM)
