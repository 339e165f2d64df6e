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
from decimal import Decimal

from django.db import transaction
from django.db.models import Case, Count, F, IntegerField, Min, Q, Sum, When
from django.db.models.functions import Coalesce

from billing.config import billing_config

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


# The summed columns of UsageDaily (and UsageDayTotal), in their order.
USAGE_FIELDS = (
    "calls",
    "cost_usd",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "estimated",
    "list_cost_usd",
    "cost_with_list_usd",
    "cheapest_cost_usd",
    "cost_with_cheapest_usd",
)


def _activity_sums() -> dict:
    """The ``USAGE_FIELDS`` of a group of Activity rows, keyed ``sum_<field>``."""
    return {
        "sum_calls": Count("id"),
        "sum_cost_usd": Coalesce(Sum("cost_usd"), Decimal(0)),
        "sum_prompt_tokens": Coalesce(Sum("prompt_tokens"), 0),
        "sum_cached_tokens": Coalesce(Sum("cached_tokens"), 0),
        "sum_completion_tokens": Coalesce(Sum("completion_tokens"), 0),
        "sum_estimated": Count("id", filter=Q(usage_estimated=True)),
        "sum_list_cost_usd": Sum("list_cost_usd"),
        "sum_cost_with_list_usd": Sum("cost_usd", filter=Q(list_cost_usd__isnull=False)),
        "sum_cheapest_cost_usd": Sum("cheapest_cost_usd"),
        "sum_cost_with_cheapest_usd": Sum("cost_usd", filter=Q(cheapest_cost_usd__isnull=False)),
    }


def _rollup_sums() -> dict:
    """The ``USAGE_FIELDS`` of a group of rollup rows added up, keyed ``sum_<field>``."""
    return {f"sum_{field}": Sum(field) for field in USAGE_FIELDS}


def _built(model, rows, **fixed) -> list:
    """``model`` instances from grouped rows: the group's fields (those not summed) and
    the sums, plus ``fixed`` values (a day, ``monthly``)."""
    out = []
    for row in rows:
        values = {k: v for k, v in row.items() if not k.startswith("sum_")}
        values.update({field: row[f"sum_{field}"] for field in USAGE_FIELDS})
        out.append(model(**values, **fixed))
    return out


USAGE_GROUP = ("organisation_id", "api_key_id", "model_slug", "provider_slug", "status")
TTFT_GROUP = ("organisation_id", "provider_slug", "prompt_bucket")


def rollup_day(day: date) -> int:
    """Rebuild one UTC day's rollups for every organisation; returns the usage rows. A
    day whose Activity rows are archived (``billing.retention``) is left as it is: its
    rollups are all that is left of it."""
    if day < archived_before():
        return 0
    start, end = _day_bounds(day)
    rows = Activity.unscoped_objects.filter(created_at__gte=start, created_at__lt=end).order_by()
    usage = rows.values(*USAGE_GROUP).annotate(**_activity_sums())
    ttft = (
        rows.filter(ttft_ms__isnull=False)
        .exclude(provider_slug="")
        .exclude(prompt_bucket="")
        .annotate(rounded=ttft_rounded())
        .values(*TTFT_GROUP, "rounded")
        .annotate(n=Count("id"))
    )
    with transaction.atomic():
        created = _replace_rows(day, False, usage, ttft, ttft_field="rounded")
        UsageDayTotal.unscoped_objects.filter(day=day).delete()
        UsageDayTotal.unscoped_objects.bulk_create(day_totals(UsageDaily, UsageDayTotal, day=day))
    return len(created)


def day_totals(usage_model, total_model, day: date | None = None) -> list:
    """``total_model`` rows (one per organisation and day) summing the daily
    ``usage_model`` rows of ``day`` (None: of every day). Takes the model classes so that
    migration 0012 can build them from its historical models."""
    rows = usage_model._default_manager.filter(monthly=False)
    if day is not None:
        rows = rows.filter(day=day)
    rows = rows.order_by().values("organisation_id", "day").annotate(**_rollup_sums())
    return _built(total_model, rows)


def month_end(day: date) -> date:
    """The last day of ``day``'s month."""
    following = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return following - timedelta(days=1)


def rollup_month(first: date, *, last: date | None = None) -> int:
    """Rebuild one month's rows (``monthly=True``) from its daily rows, for every
    organisation; returns the usage rows. A whole month (``last`` None) is stored with
    ``day`` = ``first``; ``last`` (a day after ``first`` in its month) builds the rows of
    the month to date instead, [``first``, ``last``], stored with ``day`` = ``last``."""
    end = last or month_end(first)
    key = last or first
    days = {"day__gte": first, "day__lte": end, "monthly": False}
    usage = (
        UsageDaily.unscoped_objects.filter(**days)
        .order_by()
        .values(*USAGE_GROUP)
        .annotate(**_rollup_sums())
    )
    ttft = (
        TtftDaily.unscoped_objects.filter(**days)
        .order_by()
        .values(*TTFT_GROUP, "ttft_ms")
        .annotate(n=Sum("calls"))
    )
    with transaction.atomic():
        created = _replace_rows(key, True, usage, ttft, ttft_field="ttft_ms")
    return len(created)


def _replace_rows(day: date, monthly: bool, usage, ttft, *, ttft_field: str) -> list:
    """Replace the usage and TTFT rows stored under (``day``, ``monthly``) with ``usage``
    (grouped sums) and ``ttft`` (TTFT_GROUP, the time under ``ttft_field``, calls ``n``);
    in the caller's transaction. Returns the usage rows created."""
    UsageDaily.unscoped_objects.filter(day=day, monthly=monthly).delete()
    TtftDaily.unscoped_objects.filter(day=day, monthly=monthly).delete()
    created = UsageDaily.unscoped_objects.bulk_create(
        _built(UsageDaily, usage, day=day, monthly=monthly), batch_size=2000
    )
    TtftDaily.unscoped_objects.bulk_create(
        [
            TtftDaily(
                **{f: r[f] for f in TTFT_GROUP},
                day=day,
                monthly=monthly,
                ttft_ms=r[ttft_field],
                calls=r["n"],
            )
            for r in ttft
        ],
        batch_size=5000,
    )
    return created


def _month_to_date(through: date) -> date | None:
    """The day the month-to-date rows should cover: ``through`` unless it is its month's
    first day (its daily rows are as few) or last day (the whole month's rows serve)."""
    if through.day == 1 or through == month_end(through):
        return None
    return through


def _roll_month_to_date() -> date | None:
    """Build the month-to-date rows up to ``through_day`` if not built yet, then publish
    them (``month_to_date``), then delete the generations before the one replaced: a
    read that saw the previous state still finds the rows it names. Returns the day the
    rows cover (None: none are read)."""
    state = UsageRollupState.objects.order_by("id").first()
    if state is None or state.through_day is None:
        return None
    target = _month_to_date(state.through_day)
    previous = state.month_to_date
    if target is not None and target != previous:
        rollup_month(target.replace(day=1), last=target)
    if target != previous:
        UsageRollupState.objects.filter(id=state.id).update(month_to_date=target)
    # Keep the rows of ``target`` and of ``previous``; older generations go, and so does
    # ``previous`` if its month is now whole and not the last whole one (a run past two
    # month ends): ``rolled_rows`` reads whole months as the range of ``day`` from their
    # first days, so no month-to-date row may stay inside it. (A read that saw the state
    # before such a run, and reads the rows after it, would miss that month's days: a
    # window of one run, when beat was down for over a month.)
    keep = [d for d in (target, previous) if d is not None]
    stale = ~Q(day__in=keep)
    if state.months_through is not None:
        stale |= Q(day__lt=state.months_through)
    stale = Q(monthly=True) & ~Q(day__day=1) & stale
    UsageDaily.unscoped_objects.filter(stale).delete()
    TtftDaily.unscoped_objects.filter(stale).delete()
    return target


def _roll_months() -> list[date]:
    """Build the monthly rows of every month complete within the rolled days and not
    built yet (in order), advancing ``months_through``."""
    state = UsageRollupState.objects.order_by("id").first()
    if state is None or state.through_day is None:
        return []
    if state.months_through is not None:
        first = month_end(state.months_through) + timedelta(days=1)
    else:
        oldest = UsageDaily.unscoped_objects.filter(monthly=False).aggregate(d=Min("day"))["d"]
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


def rollup_state() -> tuple[date | None, date | None, date | None]:
    """``(through_day, months_through, month_to_date)`` in one read."""
    state = UsageRollupState.objects.order_by("id").first()
    if state is None:
        return None, None, None
    return state.through_day, state.months_through, state.month_to_date


def archived_before() -> date:
    """The first day whose Activity rows are all still there: the days before it were
    archived (``billing.retention``) and are read from the rollups only."""
    state = UsageRollupState.objects.order_by("id").first()
    return state.archived_before if state and state.archived_before else date.min


def rolled_rows(
    date_from: date | None,
    last: date,
    months_through: date | None,
    month_to_date: date | None = None,
) -> Q:
    """The UsageDaily/TtftDaily rows that sum to the days [``date_from``, ``last``]
    (``last`` rolled): the monthly rows of the whole months built, the month-to-date
    rows when they cover exactly the range's last month up to ``last``, the daily rows
    of every other day. Each day is counted once."""
    start = date_from or date.min
    parts = []
    tail = start  # the first day not covered by monthly rows
    if months_through is not None:
        first = start if start.day == 1 else month_end(start) + timedelta(days=1)
        last_whole = last.replace(day=1)
        if month_end(last_whole) != last:
            last_whole = (last_whole - timedelta(days=1)).replace(day=1)
        last_whole = min(last_whole, months_through)
        if first <= last_whole:
            # Index ranges: days before the whole months, the months, days after them.
            # (No month-to-date rows lie in this range: ``_roll_month_to_date``.)
            parts += [
                Q(monthly=False, day__gte=start, day__lt=first),
                Q(monthly=True, day__gte=first, day__lte=last_whole),
            ]
            tail = month_end(last_whole) + timedelta(days=1)
    head = last.replace(day=1)
    if month_to_date is not None and month_to_date == last and last.day > 1 and tail <= head:
        if tail < head:
            parts.append(Q(monthly=False, day__gte=tail, day__lt=head))
        parts.append(Q(monthly=True, day=last))
        return _any(parts)
    parts.append(Q(monthly=False, day__gte=tail, day__lte=last))
    return _any(parts)


def _any(parts: list[Q]) -> Q:
    out = parts[0]
    for part in parts[1:]:
        out |= part
    return out


def rollup_months_through() -> date | None:
    """The first day of the last month whose monthly rows are built."""
    state = UsageRollupState.objects.order_by("id").first()
    return state.months_through if state else None


def last_final_day(now: datetime | None = None) -> date:
    """The last UTC day no row of which can still change."""
    now = now or datetime.now(UTC)
    settle = timedelta(seconds=billing_config().reconcile_after_s) + SETTLE_MARGIN
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
        first = Activity.unscoped_objects.aggregate(first=Min("created_at"))["first"]
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
    _roll_month_to_date()
    return rolled


def _in_flight(day: date, now: datetime) -> bool:
    """Whether a call of ``day`` is still running: its row pending, with a heartbeat
    the reconciler would not call dead yet (the partial index on pending rows)."""
    start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    alive = now - timedelta(seconds=billing_config().reconcile_after_s)
    return Activity.unscoped_objects.filter(
        status=Activity.Status.PENDING,
        created_at__gte=start,
        created_at__lt=start + timedelta(days=1),
        heartbeat_at__gte=alive,
    ).exists()


def rollup_rebuild(*, date_from: date, date_to: date) -> int:
    """Rebuild already-rolled days in [date_from, date_to] (after a correction or a bulk
    load into the past); days after the rolled ones are left to ``rollup_refresh``."""
    through = rollup_through_day()
    if through is None:
        return 0
    day, count = max(date_from, archived_before()), 0
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
    _, _, month_to_date = rollup_state()
    if month_to_date is not None and date_from <= month_to_date:
        rollup_month(month_to_date.replace(day=1), last=month_to_date)  # its days changed
    _roll_month_to_date()
    return count


def _set_through(day: date) -> None:
    updated = UsageRollupState.objects.update(through_day=day)
    if not updated:
        UsageRollupState.objects.create(through_day=day)
