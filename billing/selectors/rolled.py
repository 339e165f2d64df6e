"""Rolled-up reads (docs/operations.md, "Activity at 10 million rows").

Totals, charts and percentiles read the daily rollups (billing.rollups) for the days
they cover and the Activity rows only for the days after: the same figures as the
queryset functions of ``activity`` and ``usage`` (which read every row), in a time that
does not grow with the organisation's history. TTFT percentiles are over values rounded
to two significant digits (within 5 % of the exact ones)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, date, timedelta
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from ..models import TtftDaily, UsageDaily, UsageDayTotal
from ..rollups import archived_before, rolled_rows, rollup_state, ttft_rounded
from .activity import activity_list
from .common import (
    ROLLED_COLUMNS,
    ActivityFilters,
    call_sums,
    day_start,
    matching,
    rolled_sums,
    savings_of,
)
from .keys import api_key_names


@dataclass(frozen=True, slots=True)
class _Split:
    """The rollup rows and the Activity rows that together make one filtered range."""

    rolled: QuerySet | None  # UsageDaily (or UsageDayTotal)
    ttft_rolled: QuerySet | None  # TtftDaily (None: read TTFTs from ``recent``)
    recent: QuerySet  # Activity rows not covered by ``rolled``
    last_rolled: date | None = None  # the last day ``rolled`` covers (None: no rollup)


def _ttft_rolled(organisation_id: int, days: Q, filters: ActivityFilters) -> QuerySet | None:
    """The TtftDaily rows of ``days``, or None when a filter they do not carry is set."""
    if filters.model or filters.api_key_id is not None or filters.status:
        return None
    rows = TtftDaily.objects.for_organisation(organisation_id).filter(days)
    return rows.filter(provider_slug=filters.provider) if filters.provider else rows


def _split(
    organisation_id: int, filters: ActivityFilters | None, *, monthly: bool = True
) -> _Split:
    """``monthly=False``: daily rollup rows only (for per-day groups)."""

    filters = filters or ActivityFilters()
    raw = activity_list(organisation_id=organisation_id, filters=filters).order_by()
    through, months_through, month_to_date = (
        rollup_state() if organisation_id else (None, None, None)
    )
    if through is None or filters.request_id or (filters.date_from and filters.date_from > through):
        return _Split(None, None, raw)
    last = min(filters.date_to, through) if filters.date_to else through
    if not monthly:
        months_through = month_to_date = None
    days = rolled_rows(filters.date_from, last, months_through, month_to_date)
    rolled = matching(UsageDaily.objects.for_organisation(organisation_id).filter(days), filters)
    recent = raw.filter(created_at__gte=day_start(through + timedelta(days=1)))
    return _Split(rolled.order_by(), _ttft_rolled(organisation_id, days, filters), recent, last)


def _add(a: dict | None, b: dict | None) -> dict:
    """Sum two aggregated rows key by key; a null sum stays null only if both are."""
    out = {}
    for key in ROLLED_COLUMNS:  # every sum of call_sums
        x, y = (a or {}).get(key), (b or {}).get(key)
        out[key] = y if x is None else x if y is None else x + y
    return out


def _finish(row: dict) -> dict:
    row["calls"] = row["calls"] or 0
    row["cost"] = Decimal(row["cost"] or 0)
    for name in ("prompt", "cached", "completion", "estimated"):
        row[name] = row[name] or 0
    row["savings"] = savings_of(row)
    return row


def usage_totals(*, organisation_id: int, filters: ActivityFilters | None = None) -> dict:
    """``activity_totals`` of the filtered calls, from the rollups where they apply."""
    split = _split(organisation_id, filters)
    rolled = split.rolled.aggregate(**rolled_sums()) if split.rolled is not None else None
    return _finish(_add(rolled, split.recent.aggregate(**call_sums())))


def activity_row_count(*, organisation_id: int, filters: ActivityFilters, totals: dict) -> int:
    """How many rows the filtered Activity list has, given its ``usage_totals``: their
    calls, less those of the days archived (billing.retention; the rollups keep them in
    the totals, the table no longer has their rows; the pending rows a run left there
    are not counted)."""

    kept_from = archived_before()
    if (
        kept_from == date.min
        or filters.request_id
        or (filters.date_from and filters.date_from >= kept_from)
    ):
        return totals["calls"]
    if filters.date_to and filters.date_to < kept_from:
        return 0
    kept = replace(filters, date_from=kept_from)
    return usage_totals(organisation_id=organisation_id, filters=kept)["calls"]


def _grouped(split: _Split, fields: tuple, raw_qs: QuerySet | None = None) -> dict:
    """Sums per group key (a tuple of the fields' values), rolled and recent added."""
    groups: dict[tuple, dict] = {}
    if split.rolled is not None:
        for row in split.rolled.values(*fields).annotate(**rolled_sums()):
            groups[tuple(row[f] for f in fields)] = row
    recent = raw_qs if raw_qs is not None else split.recent
    for row in recent.values(*fields).annotate(**call_sums()):
        key = tuple(row[f] for f in fields)
        groups[key] = _add(groups.get(key), row)
    return groups


def _day_totals(split: _Split, organisation_id: int, date_from: date) -> QuerySet | None:
    """The ``UsageDayTotal`` rows (one per day) of the rolled days of ``split``."""
    if split.rolled is None or split.last_rolled is None:
        return None
    days = UsageDayTotal.objects.for_organisation(organisation_id)
    return days.filter(day__gte=date_from, day__lte=split.last_rolled).order_by()


def _per_day(groups: dict, date_from: date, date_to: date) -> list[dict]:
    days, day = [], date_from
    while day <= date_to:
        row = _finish(_add(groups.get((day,)), None))
        row.pop("estimated")
        days.append({**row, "day": day})
        day += timedelta(days=1)
    return days


def usage_days(*, organisation_id: int, date_from: date, date_to: date) -> list[dict]:
    """``usage_per_day`` from the rollups (days without calls as zeros): the rolled days
    from ``UsageDayTotal`` (one row a day), the days after from the Activity rows."""
    filters = ActivityFilters(date_from=date_from, date_to=date_to)
    split = _split(organisation_id, filters, monthly=False)
    split = _Split(_day_totals(split, organisation_id, date_from), None, split.recent)
    recent = split.recent.annotate(day=TruncDate("created_at", tzinfo=UTC))
    return _per_day(_grouped(split, ("day",), raw_qs=recent), date_from, date_to)


def _by_rows(organisation_id: int, groups: dict, fields: tuple, by: str) -> list[dict]:
    """Rows of ``usage_by`` from sums per group key (``fields``' values), dearest first."""
    rows = []
    for key, row in groups.items():
        row = _finish(_add(row, None))
        row.pop("estimated")
        rows.append({**row, **dict(zip(fields, key, strict=True))})
    label = by
    if by == "api_key":
        ids = [r["api_key_id"] for r in rows if r["api_key_id"]]
        names = api_key_names(organisation_id=organisation_id, ids=ids)
        for row in rows:
            row["api_key__name"] = names.get(row["api_key_id"])
        label = "api_key__name"
    return sorted(rows, key=lambda row: (-row["cost"], -row["calls"], str(row[label])))


_DIMENSIONS = ("api_key_id", "model_slug", "provider_slug")


def _summary_groups(split: _Split, organisation_id: int, date_from: date) -> tuple[dict, dict]:
    """Sums per (key, model, provider) and per day of ``split``: the rollups grouped by
    the dimensions, the day totals of the rolled days, the recent rows grouped by both."""
    groups: dict[tuple, dict] = {}
    days: dict[tuple, dict] = {}
    if split.rolled is not None:
        for row in split.rolled.values(*_DIMENSIONS).annotate(**rolled_sums()):
            groups[tuple(row[f] for f in _DIMENSIONS)] = row
        day_rows = _day_totals(split, organisation_id, date_from)
        for row in day_rows.values("day").annotate(**rolled_sums()):
            days[(row["day"],)] = row
    recent = split.recent.annotate(day=TruncDate("created_at", tzinfo=UTC))
    for row in recent.values("day", *_DIMENSIONS).annotate(**call_sums()):
        key = tuple(row[f] for f in _DIMENSIONS)
        groups[key] = _add(groups.get(key), row)
        days[(row["day"],)] = _add(days.get((row["day"],)), row)
    return groups, days


def usage_summary(*, organisation_id: int, date_from: date, date_to: date) -> dict:
    """The Usage page's ``totals``, ``per_day``, ``per_model``, ``per_provider`` and
    ``per_key`` over [``date_from``, ``date_to``]: the same figures as ``usage_totals``,
    ``usage_days`` and ``usage_by`` (each of them), from three reads instead of ten: the
    rollups grouped by (key, model, provider), the per-day totals of the rolled days and
    the recent Activity rows grouped by (day, key, model, provider)."""
    split = _split(organisation_id, ActivityFilters(date_from=date_from, date_to=date_to))
    groups, days = _summary_groups(split, organisation_id, date_from)
    totals: dict | None = None
    per: dict[str, dict[tuple, dict]] = {f: {} for f in _DIMENSIONS}
    for key, row in groups.items():
        totals = _add(totals, row)
        for field, value in zip(_DIMENSIONS, key, strict=True):
            per[field][(value,)] = _add(per[field].get((value,)), row)

    def by(field: str, label: str) -> list[dict]:
        return _by_rows(organisation_id, per[field], (field,), label)

    return {
        "totals": _finish(_add(totals, None)),
        "per_day": _per_day(days, date_from, date_to),
        "per_model": by("model_slug", "model_slug"),
        "per_provider": by("provider_slug", "provider_slug"),
        "per_key": by("api_key_id", "api_key"),
    }


def usage_by(*, organisation_id: int, filters: ActivityFilters | None, by: str) -> list[dict]:
    """``usage_per_model`` (``by="model_slug"``), ``usage_per_provider``
    (``"provider_slug"``) or ``usage_per_key`` (``"api_key"``: rows carry
    ``api_key_id`` and ``api_key__name``) from the rollups, dearest first."""
    split = _split(organisation_id, filters)
    fields = ("api_key_id",) if by == "api_key" else (by,)
    return _by_rows(organisation_id, _grouped(split, fields), fields, by)


def percentile_of_counts(counts: list[tuple[int, int]], share: float) -> int:
    """Nearest-rank percentile of values given as (value, how many) pairs."""
    ordered = sorted(counts)
    total = sum(n for _, n in ordered)
    rank, seen = max(1, math.ceil(share * total)), 0
    for value, n in ordered:
        seen += n
        if seen >= rank:
            return value
    raise ValueError("no values")


def _ttft_counts(organisation_id: int, filters: ActivityFilters | None) -> dict:
    """How many calls had each rounded TTFT, per (provider, bucket)."""

    split = _split(organisation_id, filters)
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    recent = split.recent
    if split.ttft_rolled is None:
        recent = activity_list(organisation_id=organisation_id, filters=filters).order_by()
    else:
        rolled = split.ttft_rolled.values_list("provider_slug", "prompt_bucket", "ttft_ms")
        for provider, bucket, value, n in rolled.annotate(n=Sum("calls")):
            counts[(provider, bucket)][value] += n
    recent_counts = (
        recent.filter(ttft_ms__isnull=False)
        .exclude(provider_slug="")
        .exclude(prompt_bucket="")
        .annotate(rounded=ttft_rounded())
        .values_list("provider_slug", "prompt_bucket", "rounded")
        .annotate(n=Count("id"))
    )
    for provider, bucket, value, n in recent_counts:
        counts[(provider, bucket)][value] += n
    return counts


def usage_ttft(*, organisation_id: int, filters: ActivityFilters | None = None) -> list[dict]:
    """``ttft_by_bucket``'s shape from the rollups: p50/p90 over TTFTs rounded to two
    significant digits (``billing.rollups.ttft_rounded``), counted in the database."""
    providers: dict[str, dict] = {}
    for (provider, bucket), values in _ttft_counts(organisation_id, filters).items():
        pairs = list(values.items())
        providers.setdefault(provider, {})[bucket] = {
            "median_ms": percentile_of_counts(pairs, 0.5),
            "p90_ms": percentile_of_counts(pairs, 0.9),
            "calls": sum(values.values()),
        }
    return [{"provider": p, "buckets": providers[p]} for p in sorted(providers)]


def filter_choices(*, organisation_id: int) -> dict[str, list[str]]:
    """``activity_filter_choices`` from the rollups and the recent rows."""
    split = _split(organisation_id, None)
    models, providers = set(), set()
    for part in (split.rolled, split.recent):
        if part is None:
            continue
        models.update(part.values_list("model_slug", flat=True).distinct())
        served = part.exclude(provider_slug="").values_list("provider_slug", flat=True)
        providers.update(served.distinct())
    return {"models": sorted(models), "providers": sorted(providers)}
