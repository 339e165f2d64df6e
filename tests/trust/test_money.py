"""Cache writes are billed at the endpoint's cache-write price (issue 12, money)."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.pricing import call_cost
from routing.core import request_cost
from routing.core.pricing import _token_cost

from ..core.factories import endpoint

PRICES = {
    "input": Decimal("3"),
    "cache_read": Decimal("0.30"),
    "cache_write": Decimal("3.75"),
    "output": Decimal("15"),
}


def _billed(prompt: int, cached: int, output: int, written: int = 0, prices=PRICES) -> Decimal:
    """billing's cost of one call (``written``: cache-write tokens)."""
    return call_cost(
        prices=prices,
        prompt_tokens=prompt,
        cached_tokens=cached,
        completion_tokens=output,
        cache_write_tokens=written,
    )


def test_cache_writes_billed_at_the_cache_write_price():
    # 10,000 prompt tokens: 2,000 read from the cache, 6,000 written to it, 2,000 plain;
    # 500 output. 2,000 x 3 + 2,000 x 0.30 + 6,000 x 3.75 + 500 x 15 = 36,600 per 1M.
    cost = _billed(10_000, 2_000, 500, written=6_000)
    assert cost == Decimal("0.0366")
    without = _billed(10_000, 2_000, 500)
    assert cost - without == Decimal(6_000) * (Decimal("3.75") - Decimal(3)) / 1_000_000


def test_cache_writes_clamped_to_the_prompt_left_after_reads():
    # 100 prompt tokens, 80 read: at most 20 can have been written.
    clamped = _billed(100, 80, 0, written=500)
    exact = _billed(100, 80, 0, written=20)
    assert clamped == exact == (80 * Decimal("0.30") + 20 * Decimal("3.75")) / 1_000_000


def test_prices_without_a_cache_write_entry_still_work():
    prices = {k: v for k, v in PRICES.items() if k != "cache_write"}
    assert _billed(10, 0, 0, written=10, prices=prices) == Decimal(0)


counts = st.integers(min_value=0, max_value=2_000_000)


@given(prompt=counts, cached=counts, output=counts)
def test_request_cost_unchanged_without_cache_writes(prompt, cached, output):
    info = endpoint(1, price_input=0.27, cache_read=0.07, cache_write=0.5, output=1.1)
    # Bit-identical to the formula without cache writes (the router's rankings).
    expected = _token_cost(prompt, cached, output, 0.27, 0.07, 1.1)
    assert request_cost(info, prompt, cached, output) == expected
    assert request_cost(info, prompt, cached, output, 0) == expected


@given(prompt=counts, cached=counts, written=counts, output=counts)
def test_request_cost_agrees_with_billing(prompt, cached, written, output):
    info = endpoint(1, price_input=0.27, cache_read=0.07, cache_write=0.5, output=1.1)
    prices = {
        "input": Decimal("0.27"),
        "cache_read": Decimal("0.07"),
        "cache_write": Decimal("0.5"),
        "output": Decimal("1.1"),
    }
    billed = _billed(prompt, cached, output, written, prices=prices)
    assert request_cost(info, prompt, cached, output, written) == pytest.approx(
        float(billed), rel=1e-9, abs=1e-9
    )
