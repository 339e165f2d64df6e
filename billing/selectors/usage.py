"""Usage of a queryset of Activity rows, read row by row: per day, model, provider, key,
and TTFT percentiles (the rolled-up reads in ``rolled`` give the same figures faster)."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, timedelta
from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDate

from .common import ZERO_USD, savings_of, savings_sums

EMPTY_USAGE = {"calls": 0, "cost": Decimal(0), "prompt": 0, "cached": 0, "completion": 0}


def _usage_sums() -> dict:
    """Calls, spend, tokens and savings sums of a group of Activity rows."""
    return {
        "calls": Count("id"),
        "cost": Coalesce(Sum("cost_usd"), ZERO_USD),
        "prompt": Coalesce(Sum("prompt_tokens"), 0),
        "cached": Coalesce(Sum("cached_tokens"), 0),
        "completion": Coalesce(Sum("completion_tokens"), 0),
        **savings_sums(),
    }


def _usage_row(row: dict) -> dict:
    return {**row, "cost": Decimal(row["cost"]), "savings": savings_of(row)}


def usage_per_day(queryset: QuerySet, *, date_from: date, date_to: date) -> list[dict]:
    """Calls, tokens, spend and savings per UTC day from ``date_from`` to ``date_to``
    (inclusive), days without calls included as zeros."""
    grouped = (
        queryset.order_by()
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day")
        .annotate(**_usage_sums())
    )
    by_day = {row["day"]: row for row in grouped}
    days = []
    day = date_from
    while day <= date_to:
        row = by_day.get(day) or EMPTY_USAGE
        days.append({**_usage_row(row), "day": day})
        day += timedelta(days=1)
    return days


def _usage_by(queryset: QuerySet, *fields: str) -> list[dict]:
    """Sums per value of ``fields``, dearest first (ties by the last field's value)."""
    rows = queryset.order_by().values(*fields).annotate(**_usage_sums())
    return sorted(
        (_usage_row(row) for row in rows),
        key=lambda row: (-row["cost"], -row["calls"], str(row[fields[-1]])),
    )


def usage_per_model(queryset: QuerySet) -> list[dict]:
    """Calls, tokens, spend and savings per model, dearest first."""
    return _usage_by(queryset, "model_slug")


def usage_per_provider(queryset: QuerySet) -> list[dict]:
    """Per serving provider (calls no provider served are under "")."""
    return _usage_by(queryset, "provider_slug")


def usage_per_key(queryset: QuerySet) -> list[dict]:
    """Per API key: ``api_key__name`` and ``api_key_id`` (None for a deleted key)."""
    return _usage_by(queryset, "api_key_id", "api_key__name")


def percentile(values: list[int], share: float) -> int:
    """Nearest-rank percentile of a non-empty list (p50 of [1, 2, 3, 4] is 2)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


def ttft_by_bucket(queryset: QuerySet) -> list[dict]:
    """Time to first token per provider and prompt-size bucket, from every call of this
    organisation that measured one (streamed or not, whatever its outcome): p50, p90
    (nearest rank, computed in Python: the same on SQLite and PostgreSQL) and count.

    Returns one row per provider: ``{"provider", "buckets": {bucket: {"median_ms",
    "p90_ms", "calls"}}}``, providers sorted by name."""
    samples: dict[tuple[str, str], list[int]] = defaultdict(list)
    rows = (
        queryset.order_by()
        .filter(ttft_ms__isnull=False)
        .exclude(provider_slug="")
        .exclude(prompt_bucket="")
        .values_list("provider_slug", "prompt_bucket", "ttft_ms")
    )
    for provider, bucket, ttft_ms in rows.iterator(chunk_size=5000):
        samples[(provider, bucket)].append(ttft_ms)
    providers: dict[str, dict] = {}
    for (provider, bucket), values in samples.items():
        providers.setdefault(provider, {})[bucket] = {
            "median_ms": percentile(values, 0.5),
            "p90_ms": percentile(values, 0.9),
            "calls": len(values),
        }
    return [{"provider": p, "buckets": providers[p]} for p in sorted(providers)]
