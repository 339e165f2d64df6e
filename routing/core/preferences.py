"""OpenRouter's performance preferences: ``preferred_max_latency`` (seconds to the first
token) and ``preferred_min_throughput`` (output tokens per second).

Each is a number (a cutoff on the p50) or ``{"p50", "p75", "p90", "p99"}`` (every cutoff
given must hold). An endpoint whose measured figures miss a cutoff is moved behind the
ones that do not, keeping the plan's order within each group; it is never excluded
(OpenRouter: "deprioritized, not excluded").

What is measured, for this request:

- latency p50 is the typical TTFT routing expects at the endpoint for this prompt's
  size bucket (cached or not: ``Candidate.typical``); p75 / p90 / p99 are the quantiles
  of that bucket's window (the cached one when it has samples and this turn is mostly
  cached there, else the uncached one), scaled by typical / the window's own typical
  (when the estimate came from another window, e.g. a smaller bucket's);
- throughput is per endpoint (output speed, not bucketed): p50 is its median, p75 / p90
  / p99 the speed that 75 / 90 / 99% of its calls reached (the low quantiles).

An endpoint without a figure for a cutoff (no samples, or only the model's typical
value standing in for its own: O8) is not judged on it: only a measured miss moves an
endpoint back.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .candidate import Candidate, Ranked
from .speed import SpeedSummary, speed_bucket
from .types import RoutingError

PERCENTILES = {"p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99}
Cutoffs = tuple[tuple[str, float], ...]  # (percentile, cutoff), e.g. (("p90", 3.0),)
_OPTION = {"latency": "preferred_max_latency", "throughput": "preferred_min_throughput"}
PREFERRED = "preferred performance"


def parse_cutoffs(value: object, kind: str) -> Cutoffs:
    """A number (the p50 cutoff) or an object of percentile cutoffs (null ones are
    left out); RoutingError(400) on anything else."""
    name = f"provider.{_OPTION[kind]}"
    if value is None:
        return ()
    if not isinstance(value, dict):
        return (("p50", _cutoff(value, name)),)
    unknown = sorted(set(value) - PERCENTILES.keys())
    if unknown:
        raise _bad(f"{name} takes p50, p75, p90 and p99, not {', '.join(unknown)}")
    return tuple(
        (p, _cutoff(value[p], f"{name}.{p}")) for p in PERCENTILES if value.get(p) is not None
    )


def _cutoff(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(f"{name} must be a number or an object of percentile cutoffs")
    if not math.isfinite(value) or value < 0:
        raise _bad(f"{name} must be a finite number >= 0, got {value}")
    return float(value)


def _bad(message: str) -> RoutingError:
    return RoutingError(400, "invalid_provider_options", message)


def quantile(ordered: tuple[float, ...], q: float) -> float:
    """The ``q`` quantile of ascending values (the index rule of ``speed.slow_tail``)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_s(
    candidate: Candidate, percentile: str, speed: SpeedSummary, bucket: str
) -> float | None:
    """The endpoint's expected TTFT at ``percentile`` for this request (None: unknown)."""
    typical = None if candidate.prior else candidate.typical
    if typical is None or percentile == "p50":
        return typical
    endpoint_id = candidate.endpoint_id
    samples = speed.samples_by_key
    key = (endpoint_id, speed_bucket(bucket, True))
    if not (candidate.cached_here and samples.get(key)):
        key = (endpoint_id, bucket)
    ordered, window_typical = samples.get(key), speed.typical_by_key.get(key)
    if not ordered or not window_typical:
        return None
    return quantile(ordered, PERCENTILES[percentile]) * typical / window_typical


def throughput(candidate: Candidate, percentile: str, speed: SpeedSummary) -> float | None:
    """The endpoint's output tokens/s that ``percentile`` of its calls reached."""
    if percentile == "p50":
        return candidate.throughput
    ordered = speed.throughput_samples_by_endpoint.get(candidate.endpoint_id)
    if not ordered:
        return None
    return quantile(ordered, 1.0 - PERCENTILES[percentile])


def misses(
    candidate: Candidate,
    max_latency_s: Cutoffs,
    min_throughput: Cutoffs,
    speed: SpeedSummary,
    bucket: str,
) -> list[str]:
    """The cutoffs the endpoint's measured figures miss (``"latency p90"``, ...)."""
    missed = []
    for percentile, cutoff in max_latency_s:
        value = latency_s(candidate, percentile, speed, bucket)
        if value is not None and value > cutoff:
            missed.append(f"latency {percentile}")
    for percentile, cutoff in min_throughput:
        value = throughput(candidate, percentile, speed)
        if value is not None and value < cutoff:
            missed.append(f"throughput {percentile}")
    return missed


def prefer_performance(
    ranked: Ranked,
    max_latency_s: Cutoffs,
    min_throughput: Cutoffs,
    speed: SpeedSummary,
    bucket: str,
    group: Callable[[Candidate], int] = lambda candidate: 0,
) -> Ranked:
    """``ranked`` with, inside each ``group`` (the plan's tiers: the customer's order,
    the rest, the last resorts), the endpoints that miss a cutoff moved behind those
    that do not; order otherwise kept, nothing removed. Unchanged without cutoffs."""
    if not (max_latency_s or min_throughput) or not ranked:
        return ranked
    missed = [misses(c, max_latency_s, min_throughput, speed, bucket) for c, _ in ranked]
    keyed = sorted(range(len(ranked)), key=lambda i: (group(ranked[i][0]), bool(missed[i]), i))
    result: Ranked = []
    for i in keyed:
        candidate, reason = ranked[i]
        if missed[i]:
            reason = f"{reason} (misses preferred {', '.join(missed[i])})"
        result.append((candidate, reason))
    if keyed[0] != 0:
        first, reason = result[0]
        result[0] = (first, f"{PREFERRED}: {reason.removeprefix('fallback: ')}")
    return result
