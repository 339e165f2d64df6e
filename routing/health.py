"""Endpoint health for the operator (admin): what routing sees of one endpoint.

- TTFT p50/p90 per prompt-size bucket over the current speed window (the newest
  ``SPEED_WINDOW_SIZE`` samples per bucket within ``SPEED_MAX_AGE_S``, after a
  confirmed probe shift), with the sample counts and how many were probes;
- attempt outcomes over the last ``HEALTH_WINDOW``: error, 429 and cut rates;
- the current unusable mark (R2.7) from the shared store, with the last refusal as why;
- the last probes (R5) and what they cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from asgiref.sync import async_to_sync
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from billing.models import Attempt
from billing.selectors import PROMPT_BUCKETS, percentile
from providers.models import Endpoint

from .config import gateway_config
from .core.types import bucket_for
from .models import ProbeResult, SpeedSample
from .shared import key, shared_kv

HEALTH_WINDOW = timedelta(hours=24)
LAST_PROBES = 12


def speed_by_bucket(endpoint_id: int) -> list[dict]:
    """One row per bucket: p50, p90, samples, probes (None where no sample)."""
    config = gateway_config()
    since = timezone.now() - timedelta(seconds=config.speed_max_age_s)
    rows = []
    for bucket in PROMPT_BUCKETS:
        newest = SpeedSample.objects.filter(
            endpoint_id=endpoint_id, bucket=bucket, created_at__gte=since
        ).order_by("-id")[: config.speed_window_size]
        values, probes = [], 0
        for ttft_ms, is_probe, restarts in newest.values_list(
            "ttft_ms", "is_probe", "restarts_window"
        ):
            values.append(ttft_ms)
            probes += is_probe
            if restarts:  # older samples predate a confirmed shift
                break
        rows.append(
            {
                "bucket": bucket,
                "samples": len(values),
                "probes": probes,
                "p50_ms": percentile(values, 0.5) if values else None,
                "p90_ms": percentile(values, 0.9) if values else None,
            }
        )
    return rows


def attempt_rates(endpoint_id: int, *, since: datetime | None = None) -> dict:
    """Attempts at this endpoint since ``since`` (default: the last 24 h) and the share
    that failed (any ``*_error``), were refused with 429, or were cut mid-stream."""
    since = since or timezone.now() - HEALTH_WINDOW
    counts = Attempt.unscoped_objects.filter(
        endpoint_id=endpoint_id, activity__created_at__gte=since
    )
    counts = counts.order_by().aggregate(
        total=Count("id"),
        success=Count("id", filter=Q(outcome="success")),
        errors=Count("id", filter=Q(outcome__endswith="_error")),
        rate_limited=Count("id", filter=Q(http_status=429)),
        cut=Count("id", filter=Q(outcome="cut")),
    )
    total = counts["total"]
    for name in ("errors", "rate_limited", "cut"):
        counts[f"{name}_rate"] = counts[name] / total if total else None
    return counts


@dataclass(frozen=True, slots=True)
class UnusableMark:
    until: datetime | None  # None: usable now
    strikes: int
    why: str


def unusable_mark(endpoint_id: int) -> UnusableMark:
    """The shared R2.7 mark (what every gateway process skips) and the last refusal."""
    until, strikes = None, 0
    try:
        values = async_to_sync(shared_kv().get_many)([key("unusable", endpoint_id)])
        raw = next(iter(values.values()), None) if values else None
        if raw:
            until_s, strikes_s = raw.split("|")
            strikes = int(strikes_s)
            if float(until_s) > time.time():
                until = datetime.fromtimestamp(float(until_s), tz=UTC)
    except Exception as exc:  # the page still shows everything else
        return UnusableMark(until=None, strikes=0, why=f"shared store unavailable: {exc}")
    last = (
        Attempt.unscoped_objects.filter(endpoint_id=endpoint_id, outcome__endswith="_error")
        .order_by("-id")
        .first()
    )
    why = ""
    if last is not None:
        status = f" {last.http_status}" if last.http_status else ""
        why = f"{last.outcome}{status}: {last.error_message[:200]}".strip()
    return UnusableMark(until=until, strikes=strikes, why=why)


def last_probes(endpoint_id: int, limit: int = LAST_PROBES) -> list[ProbeResult]:
    return list(ProbeResult.objects.filter(endpoint_id=endpoint_id).order_by("-id")[:limit])


def endpoint_health(endpoint_id: int) -> dict:
    probes = last_probes(endpoint_id)
    return {
        "speed": speed_by_bucket(endpoint_id),
        "rates": attempt_rates(endpoint_id),
        "mark": unusable_mark(endpoint_id),
        "probes": probes,
        "probes_cost": sum((p.cost_usd for p in probes), Decimal(0)),
        "window_hours": int(HEALTH_WINDOW.total_seconds() // 3600),
    }


def probe_spend_today(now: datetime | None = None) -> Decimal:
    """What probes cost since 00:00 UTC today (the daily probe budget's spend)."""
    now = now or timezone.now()
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    total = ProbeResult.objects.filter(created_at__gte=start).aggregate(cost=Sum("cost_usd"))
    return Decimal(total["cost"] or 0)


def probe_spend_by_model_bucket(*, since: datetime) -> dict[tuple[str, str], Decimal]:
    """What probes cost since ``since``, per (model slug, prompt-size bucket)."""
    rows = (
        ProbeResult.objects.filter(created_at__gte=since)
        .values("endpoint__model__slug", "prompt_tokens")
        .annotate(cost=Sum("cost_usd"))
    )
    spend: dict[tuple[str, str], Decimal] = {}
    for row in rows:
        key = (row["endpoint__model__slug"], bucket_for(row["prompt_tokens"]))
        spend[key] = spend.get(key, Decimal(0)) + Decimal(row["cost"] or 0)
    return spend


def probe_spend_per_day(*, days: int = 30) -> list[dict]:
    """Probe cost (platform cost, never billed) per UTC day and model, newest first."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        ProbeResult.objects.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", "endpoint__model__slug")
        .annotate(probes=Count("id"), cost=Sum("cost_usd"))
        .order_by("-day", "endpoint__model__slug")
    )
    return [
        {
            "day": r["day"],
            "model": r["endpoint__model__slug"],
            "probes": r["probes"],
            "cost": Decimal(r["cost"] or 0),
        }
        for r in rows
    ]


def _success_rates(since: datetime) -> dict[int, dict]:
    """Attempts and successes per endpoint since ``since`` (one grouped query)."""
    rows = (
        Attempt.unscoped_objects.filter(activity__created_at__gte=since)
        .values("endpoint_id")
        .order_by()
        .annotate(total=Count("id"), success=Count("id", filter=Q(outcome="success")))
    )
    return {row["endpoint_id"]: row for row in rows}


def _marked_until(endpoint_ids: list[int]) -> dict[int, datetime]:
    """The endpoints the shared store marks unusable now, with until when (one read)."""
    keys = {key("unusable", endpoint_id): endpoint_id for endpoint_id in endpoint_ids}
    try:
        values = async_to_sync(shared_kv().get_many)(list(keys)) if keys else {}
    except Exception:  # the overview still shows rates and speed
        return {}
    marks = {}
    for name, raw in (values or {}).items():
        until_s = float(raw.split("|")[0]) if raw else 0.0
        if until_s > time.time():
            marks[keys[name]] = datetime.fromtimestamp(until_s, tz=UTC)
    return marks


def health_overview() -> list[dict]:
    """Every endpoint for the operator's overview: its recent success rate (attempts of
    the last ``HEALTH_WINDOW``), TTFT p50 per prompt-size bucket and its unusable mark."""

    endpoints = list(
        Endpoint.objects.select_related("provider", "model").order_by("model__slug", "id")
    )
    rates = _success_rates(timezone.now() - HEALTH_WINDOW)
    marks = _marked_until([e.id for e in endpoints])
    overview = []
    for endpoint in endpoints:
        rate = rates.get(endpoint.id, {"total": 0, "success": 0})
        overview.append(
            {
                "endpoint": endpoint,
                "attempts": rate["total"],
                "success_rate": rate["success"] / rate["total"] if rate["total"] else None,
                "p50_ms": [row["p50_ms"] for row in speed_by_bucket(endpoint.id)],
                "unusable_until": marks.get(endpoint.id),
            }
        )
    return overview
