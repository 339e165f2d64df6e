"""Savings, defined once (docs/savings.md).

For a call with usage, the same tokens are priced three ways, all at the prices in
force when the call finished:

- ``cost_usd``: what the customer paid (the serving endpoint's prices);
- ``list_cost_usd``: at the model maker's official list prices;
- ``cheapest_cost_usd``: at the enabled endpoint with the lowest input price (what a
  "cheapest provider" router would have used).

Savings vs list = list - cost; vs the cheapest-input route = cheapest - cost (negative
when smart routing paid more for speed). The reference prices are stored on the row,
so a later price change never rewrites history.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from decimal import Decimal

from providers.models import Endpoint, Model

from .pricing import call_cost

CACHE_TTL_S = 5.0
_cache: dict[str, tuple[float, dict]] = {}
_lock = threading.Lock()


def _load_reference_prices(model_slug: str) -> dict:

    model = Model.objects.filter(slug=model_slug).first()
    if model is None:
        return {}
    prices: dict = {}
    if model.list_price_input or model.list_price_output:
        # No list cache price: the maker sells no cache, its cached tokens cost input.
        cache_read = model.list_price_cache_read or model.list_price_input
        prices["list"] = {
            "input": str(model.list_price_input),
            "cache_read": str(cache_read),
            "output": str(model.list_price_output),
        }
    cheapest = (
        Endpoint.objects.filter(model=model, enabled=True, provider__enabled=True)
        .select_related("provider")
        .order_by("price_input", "price_output", "id")
        .first()
    )
    if cheapest is not None:
        prices["cheapest_input"] = {
            "provider": cheapest.provider.slug,
            "input": str(cheapest.price_input),
            "cache_read": str(cheapest.price_cache_read),
            "output": str(cheapest.price_output),
        }
    return prices


def reference_prices(model_slug: str) -> dict:
    """The model's list prices and its cheapest-input route's prices (USD per 1M), read
    at most every CACHE_TTL_S per process (a price change clears the cache)."""
    now = time.monotonic()
    with _lock:
        hit = _cache.get(model_slug)
    if hit and hit[0] > now:
        return hit[1]
    prices = _load_reference_prices(model_slug)
    with _lock:
        _cache[model_slug] = (now + CACHE_TTL_S, prices)
    return prices


def forget_reference_prices() -> None:
    with _lock:
        _cache.clear()


def _cost(prices: dict | None, activity) -> Decimal | None:
    if not prices:
        return None
    return call_cost(
        prices=prices,
        prompt_tokens=activity.prompt_tokens,
        cached_tokens=activity.cached_tokens,
        completion_tokens=activity.completion_tokens,
    )


def fill_savings(activity) -> None:
    """Set ``reference_prices``, ``list_cost_usd`` and ``cheapest_cost_usd`` on a
    finished Activity (not saved). Calls without usage get none."""
    if not (activity.prompt_tokens or activity.completion_tokens):
        return
    prices = reference_prices(activity.model_slug)
    activity.reference_prices = prices
    activity.list_cost_usd = _cost(prices.get("list"), activity)
    activity.cheapest_cost_usd = _cost(prices.get("cheapest_input"), activity)


@dataclass(frozen=True, slots=True)
class Savings:
    """Savings of one call or of a sum of calls (None where unknown)."""

    vs_list: Decimal | None
    vs_list_percent: float | None
    vs_cheapest: Decimal | None

    @classmethod
    def of(cls, *, cost, list_cost, cheapest_cost) -> Savings:
        cost = Decimal(cost or 0)
        vs_list = percent = vs_cheapest = None
        if list_cost is not None and Decimal(list_cost) > 0:
            vs_list = Decimal(list_cost) - cost
            percent = float(vs_list / Decimal(list_cost) * 100)
        if cheapest_cost is not None:
            vs_cheapest = Decimal(cheapest_cost) - cost
        return cls(vs_list=vs_list, vs_list_percent=percent, vs_cheapest=vs_cheapest)

    @property
    def known(self) -> bool:
        return self.vs_list is not None or self.vs_cheapest is not None


def activity_savings(activity) -> Savings:
    return Savings.of(
        cost=activity.cost_usd,
        list_cost=activity.list_cost_usd,
        cheapest_cost=activity.cheapest_cost_usd,
    )
