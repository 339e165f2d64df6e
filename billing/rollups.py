"""Daily rollups of the ledger (writes): ``UsageDaily`` and ``TtftDaily`` rebuilt per UTC
day from the Activity rows, for the dashboard's totals, charts and percentiles at
millions of rows (docs/operations.md, "Activity at 10 million rows").

A day is rolled once it can no longer change: its end is older than the reconciler's
bound (a pending row is closed after ``UBERLLM_RECONCILE_AFTER_S``) plus a margin.
Rebuilding a day is idempotent (delete its rollup rows, insert them again, in one
transaction), so a late correction is fixed by ``rollup_rebuild`` for its days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, F, IntegerField, Min, Q, Sum, When

from .models import Activity, TtftDaily, UsageDaily, UsageRollupState

SETTLE_MARGIN = timedelta(minutes=15)


def ttft_rounded(field: str = "ttft_ms") -> Case:
    """SQL (SQLite and PostgreSQL) rounding ``field`` (int ms) to two significant digits;
    integer division on both. 1234 -> 1200, 995 -> 1000, 87 -> 87."""
    whens = [When(**{f"{field}__lt": 100}, then=F(field))]
    for limit, unit in ((1000, 10), (10_000, 100), (100_000, 1000), (1_000_000, 10_000)):
        whens.append(When(**{f"{field}__lt": limit}, then=(F(field) + unit // 2) / unit * unit))
    default = (F(field) + 50_000) / 100_000 * 100_000
    return Case(*whens, default=default, output_field=IntegerField())


def round_ttft(value: int) -> int:
    """The same rounding in Python (for tests and the raw part of a range)."""
    for limit, unit in ((100, 1), (1000, 10), (10_000, 100), (100_000, 1000), (1_000_000, 10_000)):
        if value < limit:
            return (value + unit // 2) // unit * unit
    return (value + 50_000) // 100_000 * 100_000


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def rollup_day(day: date) -> int:
    """Rebuild one UTC day's rollups for every organisation; returns the usage rows."""
    start, end = _day_bounds(day)
    rows = Activity.objects.filter(created_at__gte=start, created_at__lt=end).order_by()
    usage = rows.values("organisation_id", "api_key_id", "model_slug", "provider_slug",
                        "status").annotate(
        n=Count("id"), cost=Sum("cost_usd"), prompt=Sum("prompt_tokens"),
        cached=Sum("cached_tokens"), completion=Sum("completion_tokens"),
        est=Count("id", filter=Q(usage_estimated=True)), list_cost=Sum("list_cost_usd"),
        cost_with_list=Sum("cost_usd", filter=Q(list_cost_usd__isnull=False)),
        cheapest_cost=Sum("cheapest_cost_usd"),
        cost_with_cheapest=Sum("cost_usd", filter=Q(cheapest_cost_usd__isnull=False)),
    )  # fmt: skip
    ttft = (
        rows.filter(ttft_ms__isnull=False)
        .exclude(provider_slug="")
        .exclude(prompt_bucket="")
        .annotate(rounded=ttft_rounded())
        .values("organisation_id", "provider_slug", "prompt_bucket", "rounded")
        .annotate(n=Count("id"))
    )
    with transaction.atomic():
        UsageDaily.objects.filter(day=day).delete()
        TtftDaily.objects.filter(day=day).delete()
        created = UsageDaily.objects.bulk_create(
            [
                UsageDaily(
                    organisation_id=r["organisation_id"],
                    day=day,
                    api_key_id=r["api_key_id"],
                    model_slug=r["model_slug"],
                    provider_slug=r["provider_slug"],
                    status=r["status"],
                    calls=r["n"],
                    cost_usd=r["cost"] or 0,
                    prompt_tokens=r["prompt"] or 0,
                    cached_tokens=r["cached"] or 0,
                    completion_tokens=r["completion"] or 0,
                    estimated=r["est"],
                    list_cost_usd=r["list_cost"],
                    cost_with_list_usd=r["cost_with_list"],
                    cheapest_cost_usd=r["cheapest_cost"],
                    cost_with_cheapest_usd=r["cost_with_cheapest"],
                )
                for r in usage
            ],
            batch_size=2000,
        )
        TtftDaily.objects.bulk_create(
            [
                TtftDaily(
                    organisation_id=r["organisation_id"],
                    day=day,
                    provider_slug=r["provider_slug"],
                    prompt_bucket=r["prompt_bucket"],
                    ttft_ms=r["rounded"],
                    calls=r["n"],
                )
                for r in ttft
            ],
            batch_size=5000,
        )
    return len(created)


def last_final_day(now: datetime | None = None) -> date:
    """The last UTC day no row of which can still change."""
    now = now or datetime.now(UTC)
    settle = timedelta(seconds=settings.UBERLLM["RECONCILE_AFTER_S"]) + SETTLE_MARGIN
    return (now - settle).astimezone(UTC).date() - timedelta(days=1)


def rollup_through_day() -> date | None:
    """The last day the rollups cover (None: no rollup; read Activity rows only)."""
    state = UsageRollupState.objects.order_by("id").first()
    return state.through_day if state else None


def rollup_refresh(*, now: datetime | None = None, max_days: int | None = None) -> list[date]:
    """Roll every final day after the last one rolled (from the first Activity day on a
    first run); returns the days rolled. Safe to run concurrently with itself only in
    the sense that a day rebuilt twice ends the same; beat runs it from one place."""
    last = last_final_day(now)
    through = rollup_through_day()
    if through is None:
        first = Activity.objects.aggregate(first=Min("created_at"))["first"]
        if first is None:
            _set_through(last)
            return []
        day = first.astimezone(UTC).date()
    else:
        day = through + timedelta(days=1)
    rolled = []
    while day <= last and (max_days is None or len(rolled) < max_days):
        rollup_day(day)
        _set_through(day)
        rolled.append(day)
        day += timedelta(days=1)
    return rolled


def rollup_rebuild(*, date_from: date, date_to: date) -> int:
    """Rebuild already-rolled days in [date_from, date_to] (after a correction or a bulk
    load into the past); days after the rolled ones are left to ``rollup_refresh``."""
    through = rollup_through_day()
    if through is None:
        return 0
    day, count = date_from, 0
    while day <= min(date_to, through):
        rollup_day(day)
        day += timedelta(days=1)
        count += 1
    return count


def _set_through(day: date) -> None:
    updated = UsageRollupState.objects.update(through_day=day)
    if not updated:
        UsageRollupState.objects.create(through_day=day)
