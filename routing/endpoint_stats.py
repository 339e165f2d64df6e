"""What the gateway measured of its endpoints, in OpenRouter's ``PublicEndpoint`` terms
(``GET /api/v1/models/{slug}/endpoints``):

- ``latency_last_30m``: time to first token (ms) at p50 / p75 / p90 / p99 over the
  speed samples of the last 30 minutes (real calls and probes, every prompt size:
  ``ttft_by_bucket`` has them per size);
- ``throughput_last_30m``: output tokens per second over the same samples, as OpenRouter
  gives it: p90 is the speed 90% of the calls reached (so p50 >= p75 >= p90 >= p99);
- ``uptime_last_5m`` / ``_30m`` / ``_1d``: successful attempts / (successful + failed,
  cut streams included) x 100, 429s left out; null without any such attempt.

Sums over every organisation's attempts, nothing about any of them (an ``unscoped_``
read, docs/security.md). The newest ``MAX_SAMPLES`` speed samples of the model are read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from billing.models import Attempt

from .models import SpeedSample

LATENCY_WINDOW = timedelta(minutes=30)
UPTIME_WINDOWS = {
    "uptime_last_5m": timedelta(minutes=5),
    "uptime_last_30m": timedelta(minutes=30),
    "uptime_last_1d": timedelta(days=1),
}
PERCENTILES = {"p50": 0.5, "p75": 0.75, "p90": 0.9, "p99": 0.99}
MAX_SAMPLES = 5_000


def nearest_rank(ordered: list[float], share: float) -> float:
    """Nearest-rank percentile of ascending values."""
    return ordered[max(1, math.ceil(share * len(ordered))) - 1]


def percentiles(values: list[float], *, low: bool = False) -> dict[str, float] | None:
    """p50 / p75 / p90 / p99 (``low``: the value that share of them reach, for speeds);
    None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return {
        name: round(nearest_rank(ordered, 1.0 - share if low else share), 2)
        for name, share in PERCENTILES.items()
    }


def speed_stats(endpoint_ids: list[int], now: datetime | None = None) -> dict[int, dict]:
    """Per endpoint: ``latency_last_30m`` (ms) and ``throughput_last_30m`` (tokens/s)."""
    since = (now or timezone.now()) - LATENCY_WINDOW
    rows = (
        SpeedSample.objects.filter(endpoint_id__in=endpoint_ids, created_at__gte=since)
        .order_by("-id")
        .values_list("endpoint_id", "ttft_ms", "output_tokens_per_s")[:MAX_SAMPLES]
    )
    ttfts: dict[int, list[float]] = defaultdict(list)
    speeds: dict[int, list[float]] = defaultdict(list)
    for endpoint_id, ttft_ms, tokens_per_s in rows:
        ttfts[endpoint_id].append(float(ttft_ms))
        if tokens_per_s:
            speeds[endpoint_id].append(tokens_per_s)
    return {
        endpoint_id: {
            "latency_last_30m": percentiles(ttfts[endpoint_id]),
            "throughput_last_30m": percentiles(speeds[endpoint_id], low=True),
        }
        for endpoint_id in endpoint_ids
    }


def _counts(since: datetime) -> dict[str, Count]:
    recent = Q(activity__created_at__gte=since)
    failed = (Q(outcome__endswith="_error") | Q(outcome="cut")) & ~Q(http_status=429)
    return {
        "ok": Count("id", filter=recent & Q(outcome="success")),
        "failed": Count("id", filter=recent & failed),
    }


def unscoped_uptime(endpoint_ids: list[int], now: datetime | None = None) -> dict[int, dict]:
    """Per endpoint: OpenRouter's ``uptime_last_5m`` / ``_30m`` / ``_1d`` (percent)."""
    now = now or timezone.now()
    counts = {
        f"{name}_{part}": count
        for name, window in UPTIME_WINDOWS.items()
        for part, count in _counts(now - window).items()
    }
    rows = (
        Attempt.unscoped_objects.filter(
            endpoint_id__in=endpoint_ids,
            activity__created_at__gte=now - max(UPTIME_WINDOWS.values()),
        )
        .order_by()
        .values("endpoint_id")
        .annotate(**counts)
    )
    by_endpoint = {row["endpoint_id"]: row for row in rows}
    return {
        endpoint_id: {
            name: _share(by_endpoint.get(endpoint_id, {}), name) for name in UPTIME_WINDOWS
        }
        for endpoint_id in endpoint_ids
    }


def _share(row: dict, name: str) -> float | None:
    ok, failed = row.get(f"{name}_ok", 0), row.get(f"{name}_failed", 0)
    return None if ok + failed == 0 else round(100.0 * ok / (ok + failed), 2)


def measured(endpoint_ids: list[int]) -> dict[int, dict]:
    """Both reads, per endpoint (sync: runs in a database thread)."""
    now = timezone.now()
    speed, uptime = speed_stats(endpoint_ids, now), unscoped_uptime(endpoint_ids, now)
    return {eid: {**uptime[eid], **speed[eid]} for eid in endpoint_ids}


NOT_MEASURED = {
    **dict.fromkeys(UPTIME_WINDOWS),
    "latency_last_30m": None,
    "throughput_last_30m": None,
}
