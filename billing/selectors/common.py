"""What the selector modules share: UTC periods, the Activity filters, the sums of calls
and savings, one row or 404."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db.models import Count, DecimalField, Model, Q, QuerySet, Sum, Value
from django.http import Http404

from ..savings import Savings

# The prompt-size buckets of the routing core, in size order (see product.md).
PROMPT_BUCKETS = ("<8k", "8k-32k", "32k-128k", ">128k")
ZERO_USD = Value(Decimal(0), output_field=DecimalField(max_digits=20, decimal_places=10))


def first_or_404(queryset: QuerySet, message: str) -> Model:
    """The first row of ``queryset`` (already scoped to one organisation); ``Http404``
    with ``message`` when it has none (another organisation's row, or no such row)."""
    row = queryset.first()
    if row is None:
        raise Http404(message)
    return row


def for_organisation(model: type, organisation_id: int | None) -> QuerySet:
    """``model.objects.for_organisation(organisation_id)``: the model's rows of one
    organisation, none without one (billing/tenancy.py)."""
    return model.objects.for_organisation(organisation_id)


def month_start(now: datetime | None = None) -> datetime:
    """Midnight UTC on the first day of ``now``'s calendar month (UTC)."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ActivityFilters:
    """Validated filters of the Activity page (all optional; dates are UTC days)."""

    date_from: date | None = None
    date_to: date | None = None
    model: str = ""
    provider: str = ""
    api_key_id: int | None = None
    status: str = ""
    request_id: str = ""


# The filters matched by equality, and the field of Activity (and of the rollups) each
# one matches.
EQUAL_FILTERS = (
    ("model", "model_slug"),
    ("provider", "provider_slug"),
    ("api_key_id", "api_key_id"),
    ("status", "status"),
)
ALL_EQUAL_FILTERS = tuple(name for name, _ in EQUAL_FILTERS)


def matching(
    queryset: QuerySet, filters: ActivityFilters, names: tuple[str, ...] = ALL_EQUAL_FILTERS
) -> QuerySet:
    """``queryset`` narrowed by the equality filters among ``names`` that are set (a key
    id of another organisation matches nothing: the queryset is already scoped)."""
    for name, field in EQUAL_FILTERS:
        value = getattr(filters, name)
        if name in names and value is not None and value != "":
            queryset = queryset.filter(**{field: value})
    return queryset


def in_days(queryset: QuerySet, filters: ActivityFilters) -> QuerySet:
    """``queryset`` (``created_at``) narrowed to the filters' UTC days, both inclusive."""
    if filters.date_from:
        queryset = queryset.filter(created_at__gte=day_start(filters.date_from))
    if filters.date_to:  # inclusive: up to the end of that day
        queryset = queryset.filter(created_at__lt=day_start(filters.date_to) + timedelta(days=1))
    return queryset


def savings_sums() -> dict:
    """The sums savings are computed from: only calls whose reference cost is known."""
    return {
        "list_cost": Sum("list_cost_usd"),
        "cost_with_list": Sum("cost_usd", filter=Q(list_cost_usd__isnull=False)),
        "cheapest_cost": Sum("cheapest_cost_usd"),
        "cost_with_cheapest": Sum("cost_usd", filter=Q(cheapest_cost_usd__isnull=False)),
    }


def call_sums() -> dict:
    """The sums of Activity rows behind ``activity_totals``: calls, spend, tokens, calls
    with estimated usage, and the savings sums."""
    return {
        "calls": Count("id"),
        "cost": Sum("cost_usd"),
        "prompt": Sum("prompt_tokens"),
        "cached": Sum("cached_tokens"),
        "completion": Sum("completion_tokens"),
        "estimated": Count("id", filter=Q(usage_estimated=True)),
        **savings_sums(),
    }


# The column of the daily rollups (UsageDaily) that keeps each sum of ``call_sums``.
ROLLED_COLUMNS = {
    "calls": "calls",
    "cost": "cost_usd",
    "prompt": "prompt_tokens",
    "cached": "cached_tokens",
    "completion": "completion_tokens",
    "estimated": "estimated",
    "list_cost": "list_cost_usd",
    "cost_with_list": "cost_with_list_usd",
    "cheapest_cost": "cheapest_cost_usd",
    "cost_with_cheapest": "cost_with_cheapest_usd",
}


def rolled_sums(*names: str) -> dict:
    """``call_sums`` of daily rollup rows, under the same names: all of them, or only
    ``names``."""
    return {name: Sum(ROLLED_COLUMNS[name]) for name in names or ROLLED_COLUMNS}


def savings_of(row: dict) -> Savings:
    """Savings of an aggregated row (see billing/savings.py for the definition)."""
    vs_list = Savings.of(
        cost=row.get("cost_with_list"), list_cost=row.get("list_cost"), cheapest_cost=None
    )
    vs_cheapest = Savings.of(
        cost=row.get("cost_with_cheapest"), list_cost=None, cheapest_cost=row.get("cheapest_cost")
    )
    return Savings(
        vs_list=vs_list.vs_list,
        vs_list_percent=vs_list.vs_list_percent,
        vs_cheapest=vs_cheapest.vs_cheapest,
    )
