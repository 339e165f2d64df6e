"""Daily rollups of the ledger (writes): ``UsageDaily`` and ``TtftDaily`` rebuilt per UTC
day from the Activity rows, for the dashboard's totals, charts and percentiles at
millions of rows (docs/operations.md, "Activity at 10 million rows").

A day is rolled once it can no longer change: its end is older than the reconciler's
bound (a pending row is closed ``UBERLLM_RECONCILE_AFTER_S`` after its last heartbeat)
plus a margin, and none of its calls is still running (a call in flight heartbeats its
pending row: a stream begun before midnight and going on for hours delays the day).
Rebuilding a day is idempotent (delete its rollup rows, insert them again, in one
transaction), so a late correction is fixed by ``rollup_rebuild`` for its days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, F, IntegerField, Min, Q, Sum, When

from .models import Activity, TtftDaily, UsageDaily, UsageDayTotal, UsageRollupState

# Longer than any call (a live one keeps its row pending), plus the reconciler's run.
SETTLE_MARGIN = timedelta(hours=2)


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
        UsageDaily.objects.filter(day=day, monthly=False).delete()
        TtftDaily.objects.filter(day=day, monthly=False).delete()
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
        UsageDayTotal.objects.filter(day=day).delete()
        UsageDayTotal.objects.bulk_create(day_totals(UsageDaily, UsageDayTotal, day=day))
    return len(created)


def day_totals(usage_model, total_model, day: date | None = None) -> list:
    """``total_model`` rows (one per organisation and day) summing the daily
    ``usage_model`` rows of ``day`` (None: of every day). Takes the model classes so that
    migration 0012 can build them from its historical models."""
    rows = usage_model.objects.filter(monthly=False)
    if day is not None:
        rows = rows.filter(day=day)
    rows = (
        rows.order_by()
        .values("organisation_id", "day")
        .annotate(
            n=Sum("calls"), cost=Sum("cost_usd"), prompt=Sum("prompt_tokens"),
            cached=Sum("cached_tokens"), completion=Sum("completion_tokens"),
            est=Sum("estimated"), list_cost=Sum("list_cost_usd"),
            cost_with_list=Sum("cost_with_list_usd"), cheapest_cost=Sum("cheapest_cost_usd"),
            cost_with_cheapest=Sum("cost_with_cheapest_usd"),
        )
    )  # fmt: skip
    return [
        total_model(
            organisation_id=r["organisation_id"], day=r["day"], calls=r["n"],
            cost_usd=r["cost"], prompt_tokens=r["prompt"], cached_tokens=r["cached"],
            completion_tokens=r["completion"], estimated=r["est"],
            list_cost_usd=r["list_cost"], cost_with_list_usd=r["cost_with_list"],
            cheapest_cost_usd=r["cheapest_cost"], cost_with_cheapest_usd=r["cost_with_cheapest"],
        )
        for r in rows
    ]  # fmt: skip


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    following = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return following - timedelta(days=1)


def rollup_month(first: date) -> int:
    """Rebuild one month's rows (``monthly=True``, ``day`` = ``first``) from its daily
    rows, for every organisation; returns the usage rows."""
    days = {"day__gte": first, "day__lte": month_end(first), "monthly": False}
    usage = (
        UsageDaily.objects.filter(**days)
        .order_by()
        .values("organisation_id", "api_key_id", "model_slug", "provider_slug", "status")
        .annotate(
            n=Sum("calls"), cost=Sum("cost_usd"), prompt=Sum("prompt_tokens"),
            cached=Sum("cached_tokens"), completion=Sum("completion_tokens"),
            est=Sum("estimated"), list_cost=Sum("list_cost_usd"),
            cost_with_list=Sum("cost_with_list_usd"), cheapest_cost=Sum("cheapest_cost_usd"),
            cost_with_cheapest=Sum("cost_with_cheapest_usd"),
        )
    )  # fmt: skip
    ttft = (
        TtftDaily.objects.filter(**days)
        .order_by()
        .values("organisation_id", "provider_slug", "prompt_bucket", "ttft_ms")
        .annotate(n=Sum("calls"))
    )
    with transaction.atomic():
        UsageDaily.objects.filter(day=first, monthly=True).delete()
        TtftDaily.objects.filter(day=first, monthly=True).delete()
        created = UsageDaily.objects.bulk_create(
            [
                UsageDaily(
                    organisation_id=r["organisation_id"], day=first, monthly=True,
                    api_key_id=r["api_key_id"], model_slug=r["model_slug"],
                    provider_slug=r["provider_slug"], status=r["status"], calls=r["n"],
                    cost_usd=r["cost"], prompt_tokens=r["prompt"], cached_tokens=r["cached"],
                    completion_tokens=r["completion"], estimated=r["est"],
                    list_cost_usd=r["list_cost"], cost_with_list_usd=r["cost_with_list"],
                    cheapest_cost_usd=r["cheapest_cost"],
                    cost_with_cheapest_usd=r["cost_with_cheapest"],
                )
                for r in usage
            ],
            batch_size=2000,
        )  # fmt: skip
        TtftDaily.objects.bulk_create(
            [
                TtftDaily(organisation_id=r["organisation_id"], day=first, monthly=True,
                          provider_slug=r["provider_slug"], prompt_bucket=r["prompt_bucket"],
                          ttft_ms=r["ttft_ms"], calls=r["n"])
                for r in ttft
            ],
            batch_size=5000,
        )  # fmt: skip
    return len(created)


def _roll_months() -> list[date]:
    """Build the monthly rows of every month complete within the rolled days and not
    built yet (in order), advancing ``months_through``."""
    state = UsageRollupState.objects.order_by("id").first()
    if state is None or state.through_day is None:
        return []
    if state.months_through is not None:
        first = month_end(state.months_through) + timedelta(days=1)
    else:
        oldest = UsageDaily.objects.filter(monthly=False).aggregate(d=Min("day"))["d"]
        if oldest is None:
            return []
        first = oldest.replace(day=1)
    built = []
    while month_end(first) <= state.through_day:
        rollup_month(first)
        UsageRollupState.objects.filter(id=state.id).update(months_through=first)
        built.append(first)
        first = month_end(first) + timedelta(days=1)
    return built


def rollup_state() -> tuple[date | None, date | None]:
    """``(through_day, months_through)`` in one read."""
    state = UsageRollupState.objects.order_by("id").first()
    return (state.through_day, state.months_through) if state else (None, None)


def rolled_rows(date_from: date | None, last: date, months_through: date | None) -> Q:
    """The UsageDaily/TtftDaily rows that sum to the days [``date_from``, ``last``]
    (``last`` rolled): the monthly rows of the whole months built, the daily rows of
    every other day. Each day is counted once."""
    start = date_from or date.min
    daily = Q(monthly=False, day__gte=start, day__lte=last)
    if months_through is None:
        return daily
    first = start if start.day == 1 else month_end(start) + timedelta(days=1)
    last_whole = last.replace(day=1)
    if month_end(last_whole) != last:
        last_whole = (last_whole - timedelta(days=1)).replace(day=1)
    last_whole = min(last_whole, months_through)
    if first > last_whole:
        return daily
    # Three index ranges: days before the whole months, the months, days after them.
    return (
        Q(monthly=False, day__gte=start, day__lt=first)
        | Q(monthly=True, day__gte=first, day__lte=last_whole)
        | Q(monthly=False, day__gt=month_end(last_whole), day__lte=last)
    )


def rollup_months_through() -> date | None:
    """The first day of the last month whose monthly rows are built."""
    state = UsageRollupState.objects.order_by("id").first()
    return state.months_through if state else None


def last_final_day(now: datetime | None = None) -> date:
    """The last UTC day no row of which can still change."""
    now = now or datetime.now(UTC)
    settle = timedelta(seconds=settings.UBERLLM["RECONCILE_AFTER_S"]) + SETTLE_MARGIN
    return (now - settle).astimezone(UTC).date() - timedelta(days=1)


def rollup_through_day() -> date | None:
    """The last day the daily rollups cover (None: no rollup; read Activity rows only)."""
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
        if _in_flight(day, now or datetime.now(UTC)):
            break  # a call of that day is still running: roll the day once it ended
        rollup_day(day)
        _set_through(day)
        rolled.append(day)
        day += timedelta(days=1)
    _roll_months()
    return rolled


def _in_flight(day: date, now: datetime) -> bool:
    """Whether a call of ``day`` is still running: its row pending, with a heartbeat
    the reconciler would not call dead yet (the partial index on pending rows)."""
    start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    alive = now - timedelta(seconds=settings.UBERLLM["RECONCILE_AFTER_S"])
    return Activity.objects.filter(
        status=Activity.Status.PENDING, created_at__gte=start,
        created_at__lt=start + timedelta(days=1), heartbeat_at__gte=alive,
    ).exists()  # fmt: skip


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
    months_through = rollup_months_through()
    month = date_from.replace(day=1)
    while months_through is not None and month <= min(date_to, months_through):
        rollup_month(month)  # its daily rows changed
        month = month_end(month) + timedelta(days=1)
    _roll_months()
    return count


def _set_through(day: date) -> None:
    updated = UsageRollupState.objects.update(through_day=day)
    if not updated:
        UsageRollupState.objects.create(through_day=day)
