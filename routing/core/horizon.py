"""Conversation placement by horizon (issue 43), pure.

A conversation's request is judged by the turns it is expected to be followed by, not by
itself alone: one cold turn wherever it moves to, then warm ones (cache reads) there.

- R2.4 applies to the steady turns: a conversation's request is fast enough at an
  endpoint when that endpoint's warm (cached) TTFT is within 2x of the fastest warm one,
  or under 1 s (``plan._candidates`` judges ``judged`` = the warm estimate).
- The price is the horizon's: this turn where it is served (cold there, unless the
  conversation is already warm there) plus the expected follow-up turns as cache reads
  (``plan._ranking_costs``). So the one cold read a move needs is paid for in the
  comparison, and a move wins only when the saving over the remaining turns outweighs it.
- O7: a conversation stays where its cache is warm unless another endpoint is *clearly*
  cheaper over the horizon: at most ``1 - move_min_saving`` of staying
  (``keep_warm_home``).
- An endpoint without cached samples of its own is not judged by another provider's
  cached/uncached ratio (which is mostly that provider's fixed latency): its cached TTFT
  is its own base latency plus its own uncached prefill time divided by the model's
  typical cache speed-up (``own_cached_estimate``, ``model_cache_speedup``). An endpoint
  whose cache reads cost its input price has no cache: its warm turn is its cold one.
"""

from __future__ import annotations

from statistics import median

from .candidate import Candidate, Ranked
from .speed import SpeedSummary, speed_bucket
from .types import BUCKETS, EndpointInfo

STAYS_WARM = "stays where its cache is warm (O7): not clearly cheaper elsewhere"
MAX_SPEEDUP = 50.0  # a cached turn's prefill is at most this much faster (noise guard)
SMALLEST_BUCKET = BUCKETS[0]


def has_cache(endpoint: EndpointInfo) -> bool:
    """True when the endpoint lists a cache-read discount (it keeps a prompt cache)."""
    return endpoint.price_cache_read < endpoint.price_input


def base_latency_s(speed: SpeedSummary, endpoint_id: int, bucket: str) -> float:
    """The endpoint's fixed latency before prefill: its own typical TTFT for short
    uncached prompts (the smallest bucket), 0 when unknown or for that bucket itself."""
    if bucket == SMALLEST_BUCKET:
        return 0.0
    base = speed.typical_by_key.get((endpoint_id, SMALLEST_BUCKET))
    uncached = speed.typical_by_key.get((endpoint_id, bucket))
    if base is None or uncached is None:
        return 0.0
    return min(base, uncached)


def _speedup(speed: SpeedSummary, endpoint_id: int, bucket: str) -> float:
    """One endpoint's cached prefill speed-up in ``bucket`` (both windows known): its
    uncached over its cached TTFT, each less its base latency."""
    typicals = speed.typical_by_key
    base = base_latency_s(speed, endpoint_id, bucket)
    uncached = typicals[(endpoint_id, bucket)] - base
    cached = typicals[(endpoint_id, speed_bucket(bucket, True))] - base
    if uncached <= 0:
        return 1.0
    return min(MAX_SPEEDUP, max(1.0, uncached / max(cached, uncached / MAX_SPEEDUP)))


def model_cache_speedup(
    speed: SpeedSummary, endpoint_ids: list[int], bucket: str, min_samples: int
) -> float | None:
    """The model's typical cache speed-up in ``bucket``: the median over ``endpoint_ids``
    with ``min_samples`` in both windows of ``_speedup``; None without any (computed
    once per speed snapshot)."""
    memo_key = ("cache_speedup", bucket, min_samples, tuple(endpoint_ids))
    if memo_key in speed.derived:
        return speed.derived[memo_key]
    counts, cached_bucket = speed.count_by_key, speed_bucket(bucket, True)
    speedups = [
        _speedup(speed, e, bucket)
        for e in endpoint_ids
        if counts.get((e, cached_bucket), 0) >= min_samples
        and counts.get((e, bucket), 0) >= min_samples
    ]
    value = median(speedups) if speedups else None
    speed.derived[memo_key] = value
    return value


def own_cached_estimate(
    speed: SpeedSummary, endpoint: EndpointInfo, bucket: str, speedup: float | None
) -> float | None:
    """A cached turn's TTFT at ``endpoint`` from its own uncached window: its base
    latency plus its uncached prefill time / ``speedup`` (none without a cache: the
    uncached value, an upper bound without a speed-up); None without uncached data."""
    uncached = speed.typical_by_key.get((endpoint.endpoint_id, bucket))
    if uncached is None:
        return None
    if speedup is None or not has_cache(endpoint):
        return uncached
    base = base_latency_s(speed, endpoint.endpoint_id, bucket)
    return base + (uncached - base) / speedup


def keep_warm_home(ranked: Ranked, move_min_saving: float) -> Ranked:
    """O7 over a smart ranking (fast-enough endpoints first, cheapest over the horizon
    first): the endpoint where this conversation is warm goes first unless the normal
    first choice costs at most ``1 - move_min_saving`` of staying there. The warm one
    must itself be usable and fast enough (R2.4 on warm turns), else the move stands."""
    if len(ranked) < 2:
        return ranked
    first = ranked[0][0]
    home = next((c for c, _ in ranked if c.cached_here), None)
    if home is None or home is first or not _may_stay(home):
        return ranked
    if first.cost <= (1.0 - move_min_saving) * home.cost:
        return ranked
    rest = [(c, r if c is not first else f"fallback: {r}") for c, r in ranked if c is not home]
    return [(home, STAYS_WARM), *rest]


def _may_stay(home: Candidate) -> bool:
    return home.usable and home.fast_enough
