"""Credits, balance and the monthly statement of an organisation (docs/dashboard.md,
"Credits and statements").

Every figure is a sum of the ledger's exact Decimal columns: the Activity rows of the
days still in the table, and for days archived by ``billing.retention`` the daily
rollup rows (``UsageDaily``, sums of the same columns at the same 10 decimal places,
never rounded). Credits are the sum of ``CreditEntry`` amounts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db.models import Count, Q, QuerySet, Sum

from ..models import Activity, CreditEntry, UsageDaily
from ..rollups import archived_before
from ..savings import Savings
from .common import day_start, rolled_sums, savings_of, savings_sums

ZERO = Decimal(0)


def _archived_before() -> date:

    return archived_before()


def _archived_days(organisation_id: int, start: datetime | None, end: datetime) -> QuerySet:
    """The daily rollup rows of [start, end) that stand for archived Activity rows."""
    first_kept = _archived_before()
    rows = UsageDaily.objects.for_organisation(organisation_id).filter(
        monthly=False, day__lt=min(first_kept, end.date())
    )
    return rows.filter(day__gte=start.date()) if start else rows


def _live_rows(organisation_id: int, start: datetime | None, end: datetime | None) -> QuerySet:
    """The Activity rows of [start, end) on days not archived."""
    first_kept = _archived_before()
    rows = Activity.objects.for_organisation(organisation_id)
    if first_kept > date.min:
        rows = rows.filter(created_at__gte=day_start(first_kept))
    if start:
        rows = rows.filter(created_at__gte=start)
    if end:
        rows = rows.filter(created_at__lt=end)
    return rows


def organisation_usage_before(*, organisation_id: int, before: datetime | None = None) -> Decimal:
    """What the organisation spent before ``before`` (None: ever), exactly: the credit
    budget's seed (billing.limits) and a statement's opening balance."""
    live = _live_rows(organisation_id, None, before).order_by().aggregate(v=Sum("cost_usd"))["v"]
    rolled = ZERO
    if _archived_before() > date.min:
        end = before or datetime.now(UTC)
        archived = _archived_days(organisation_id, None, end)
        rolled = archived.order_by().aggregate(v=Sum("cost_usd"))["v"] or ZERO
    return (live or ZERO) + rolled


def credits_before(*, organisation_id: int, before: datetime | None = None) -> Decimal:
    """The sum of the organisation's credit entries made before ``before`` (None: all)."""
    entries = CreditEntry.objects.for_organisation(organisation_id)
    if before is not None:
        entries = entries.filter(created_at__lt=before)
    return entries.order_by().aggregate(v=Sum("amount_usd"))["v"] or ZERO


@dataclass(frozen=True, slots=True)
class CreditSummary:
    total_credits: Decimal
    total_usage: Decimal

    @property
    def balance(self) -> Decimal:
        return self.total_credits - self.total_usage


def credit_summary(*, organisation_id: int) -> CreditSummary:
    """Credits and all-time usage, from the ledgers (GET /api/v1/credits)."""
    return CreditSummary(
        total_credits=credits_before(organisation_id=organisation_id),
        total_usage=organisation_usage_before(organisation_id=organisation_id),
    )


def credit_entries(*, organisation_id: int, start: datetime, end: datetime) -> QuerySet:
    """The organisation's credit entries of [start, end), oldest first."""
    entries = CreditEntry.objects.for_organisation(organisation_id)
    return entries.filter(created_at__gte=start, created_at__lt=end).order_by("created_at", "id")


@dataclass(frozen=True, slots=True)
class Statement:
    """One organisation's calendar month (UTC)."""

    month: date  # its first day
    calls: int
    cancelled: int
    hedged: int
    spend: Decimal
    savings: Savings
    topups: Decimal
    adjustments: Decimal
    opening_balance: Decimal
    closing_balance: Decimal
    per_model: list[dict]
    entries: list[CreditEntry]


def _month_bounds(month: date) -> tuple[datetime, datetime]:
    start = day_start(month.replace(day=1))
    following = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    return start, day_start(following)


_STATUS = Activity.Status


def _month_sums(organisation_id: int, start: datetime, end: datetime) -> tuple[dict, list[dict]]:
    """The month's totals and per-model rows: Activity rows plus archived day rollups."""
    live = _live_rows(organisation_id, start, end).order_by()
    sums = {"cost": Sum("cost_usd"), **savings_sums()}
    total = live.aggregate(
        calls=Count("id"),
        cancelled=Count("id", filter=Q(status=_STATUS.CANCELLED)),
        hedged=Count("id", filter=Q(hedged=True)),
        **sums,
    )
    models = {
        r["model_slug"]: r for r in live.values("model_slug").annotate(calls=Count("id"), **sums)
    }
    if _archived_before() > start.date():
        _add_archived(total, models, _archived_days(organisation_id, start, end).order_by())
    per_model = sorted(models.values(), key=lambda r: (-(r["cost"] or ZERO), r["model_slug"]))
    return total, per_model


def _rolled_sums() -> dict:
    """The rollups' sums a statement shows: calls, spend and the savings sums."""
    savings = ("list_cost", "cost_with_list", "cheapest_cost", "cost_with_cheapest")
    return rolled_sums("calls", "cost", *savings)


def _add_archived(total: dict, models: dict, rolled: QuerySet) -> None:
    def add(into: dict, row: dict) -> None:
        for name, value in row.items():
            if name != "model_slug" and value is not None:
                into[name] = (into.get(name) or 0) + value

    add(total, rolled.aggregate(**_rolled_sums()))
    cancelled = rolled.filter(status=_STATUS.CANCELLED).aggregate(v=Sum("calls"))["v"]
    total["cancelled"] += cancelled or 0
    for row in rolled.values("model_slug").annotate(**_rolled_sums()):
        add(models.setdefault(row["model_slug"], {"model_slug": row["model_slug"]}), row)


def monthly_statement(*, organisation_id: int, month: date) -> Statement:
    """The statement of ``month`` (any day of it): calls, spend and savings from the
    ledger's rows, credit entries, and the balance at its start and end."""
    start, end = _month_bounds(month)
    total, per_model = _month_sums(organisation_id, start, end)
    entries = list(credit_entries(organisation_id=organisation_id, start=start, end=end))
    topups = sum((e.amount_usd for e in entries if e.kind == CreditEntry.Kind.TOPUP), ZERO)
    adjustments = sum((e.amount_usd for e in entries if e.kind != CreditEntry.Kind.TOPUP), ZERO)
    opening = credits_before(organisation_id=organisation_id, before=start) - (
        organisation_usage_before(organisation_id=organisation_id, before=start)
    )
    spend = total["cost"] or ZERO
    return Statement(
        month=start.date(),
        calls=total["calls"] or 0,
        cancelled=total["cancelled"] or 0,
        hedged=total.get("hedged") or 0,
        spend=spend,
        savings=savings_of(total),
        topups=topups,
        adjustments=adjustments,
        opening_balance=opening,
        closing_balance=opening + topups + adjustments - spend,
        per_model=[{**row, "cost": row.get("cost") or ZERO} for row in per_model],
        entries=entries,
    )
