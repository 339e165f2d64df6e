"""The customer's choice (R2.10): provider.order / only / ignore / sort and suffixes."""

from __future__ import annotations

from collections.abc import Callable

from .candidate import Candidate, Ranked, cost_key
from .filters import matches_any, provider_matches
from .options import RoutingOptions
from .smart import rank_smart

YOUR_ORDER = "your order"
YOUR_PROVIDER_LIST = "your provider list: cheapest"
SORTED_BY = {
    "price": "sorted by price",
    "latency": "sorted by latency",
    "throughput": "sorted by throughput",
}
NO_DATA_SUFFIX = " (no data)"

SortKey = Callable[[Candidate], tuple]


def _latency_key(candidate: Candidate) -> tuple:
    typical = candidate.typical
    return (typical is None, 0.0 if typical is None else typical, *cost_key(candidate))


def _throughput_key(candidate: Candidate) -> tuple:
    throughput = candidate.throughput
    return (throughput is None, -(throughput or 0.0), *cost_key(candidate))


_SORT_KEYS: dict[str, SortKey] = {
    "price": cost_key,
    "latency": _latency_key,
    "throughput": _throughput_key,
}


def _has_data(candidate: Candidate, sort: str) -> bool:
    if sort == "latency":
        return candidate.typical is not None
    if sort == "throughput":
        return candidate.throughput is not None
    return True


def rank_sorted(candidates: list[Candidate], sort: str) -> Ranked:
    """sort=price: by this request's cost; latency: by typical TTFT in the bucket;
    throughput: by tokens/s, highest first. Endpoints without data go after, cheapest first."""
    reason = SORTED_BY[sort]
    ranked = sorted(candidates, key=_SORT_KEYS[sort])
    return [(c, reason if _has_data(c, sort) else reason + NO_DATA_SUFFIX) for c in ranked]


def _rank_order(candidates: list[Candidate], options: RoutingOptions) -> Ranked:
    taken: set[int] = set()
    ranked: Ranked = []
    for slug in options.order:
        listed = [
            c for c in candidates if provider_matches(c.slug, slug) and c.endpoint_id not in taken
        ]
        listed.sort(key=cost_key)
        ranked += [(c, YOUR_ORDER) for c in listed]
        taken.update(c.endpoint_id for c in listed)
    rest = [c for c in candidates if c.endpoint_id not in taken]
    ranked += _as_fallbacks(rank_sorted(rest, options.sort) if options.sort else rank_smart(rest))
    return ranked


def _as_fallbacks(ranked: Ranked) -> Ranked:
    return [(c, r if r.startswith("fallback") else f"fallback: {r}") for c, r in ranked]


def rank_customer(candidates: list[Candidate], options: RoutingOptions) -> Ranked:
    """Order candidates (already filtered by only/ignore) as the customer asked:
    ``order`` first (then the rest by ``sort`` or smart routing, as fallbacks);
    else ``sort``; else (only/ignore alone) the cheapest for this request first."""
    if not candidates:
        return []
    if options.order:
        return _rank_order(candidates, options)
    if options.sort:
        return rank_sorted(candidates, options.sort)
    return [(c, YOUR_PROVIDER_LIST) for c in sorted(candidates, key=cost_key)]


def restrict_to_listed(ranked: Ranked, options: RoutingOptions) -> Ranked:
    """allow_fallbacks=false: with ``order``, only the ordered providers; else with
    ``only``, the allowed list (already filtered); otherwise only the first choice."""
    if options.allow_fallbacks or not ranked:
        return ranked
    if options.order:
        return [(c, r) for c, r in ranked if matches_any(c.slug, options.order)]
    if options.only:
        return ranked
    return ranked[:1]
