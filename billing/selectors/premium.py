"""What the premium over the cheapest-input route bought (docs/savings.md, "Paid for
speed").

A call costs more than the cheapest-input route when smart routing sent it to a faster,
dearer provider (R2.5, R2.9). The rows hold each call's price at the cheapest-input
route (``cheapest_cost_usd``, with that route's provider in ``reference_prices``) and its
own TTFT, but not the TTFT the cheapest route would have had for that very call. So the
time bought is measured against what the rows do hold: the mean TTFT of the
organisation's own calls that the cheapest-input provider served, for the same model
and prompt-size bucket, in the same period (exploration sends it some, R2.6). Premium
calls of a model and bucket the cheapest route never served in the period count in the
money, not in the seconds (``unmeasured``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal

from django.db.models import Avg, Count, DecimalField, ExpressionWrapper, F, Sum
from django.db.models.fields.json import KT
from django.utils import timezone

from .activity import activity_list
from .common import ActivityFilters

MONEY = DecimalField(max_digits=20, decimal_places=10)
WINDOW_DAYS = 31  # read from the Activity rows: at most the last month of the filters


@dataclass(frozen=True, slots=True)
class SpeedPremium:
    calls: int  # calls that cost more than the cheapest-input route
    paid: Decimal  # what they cost above it, in all
    measured_calls: int  # of those, calls whose cheapest route's TTFT was measured
    ttft_saved_ms: int  # sum over the measured calls of (route's mean TTFT - the call's)
    since: date  # the first day read (the window, or the filters' date_from)

    @property
    def unmeasured(self) -> int:
        return self.calls - self.measured_calls

    @property
    def per_call_ms(self) -> int | None:
        return self.ttft_saved_ms // self.measured_calls if self.measured_calls else None


def _window(filters: ActivityFilters) -> ActivityFilters:
    start = timezone.now().date() - timedelta(days=WINDOW_DAYS - 1)
    if filters.date_from is None or filters.date_from < start:
        return replace(filters, date_from=start)
    return filters


def _premium_groups(organisation_id: int, filters: ActivityFilters) -> list[dict]:
    premium = F("cost_usd") - F("cheapest_cost_usd")
    rows = activity_list(organisation_id=organisation_id, filters=filters).order_by()
    rows = rows.filter(status="success", ttft_ms__isnull=False, cost_usd__gt=F("cheapest_cost_usd"))
    return list(
        rows.annotate(route=KT("reference_prices__cheapest_input__provider"))
        .values("model_slug", "prompt_bucket", "route")
        .annotate(
            calls=Count("id"),
            paid=Sum(ExpressionWrapper(premium, output_field=MONEY)),
            ttft=Sum("ttft_ms"),
        )
    )


def _route_ttft(organisation_id: int, filters: ActivityFilters, group: dict) -> float | None:
    """The mean TTFT of the calls the cheapest-input provider served for the group's
    model and bucket, whatever the provider and status filters."""
    reference = replace(filters, provider="", status="")
    rows = activity_list(organisation_id=organisation_id, filters=reference).order_by()
    return rows.filter(
        status="success",
        model_slug=group["model_slug"],
        prompt_bucket=group["prompt_bucket"],
        provider_slug=group["route"],
        ttft_ms__isnull=False,
    ).aggregate(mean=Avg("ttft_ms"))["mean"]


def speed_premium(*, organisation_id: int, filters: ActivityFilters | None = None) -> SpeedPremium:
    """The premium paid over the cheapest-input route and the first-token time it bought,
    over the filters' calls of the last ``WINDOW_DAYS`` days at most."""
    filters = _window(filters or ActivityFilters())
    calls = measured = saved = 0
    paid = Decimal(0)
    for group in _premium_groups(organisation_id, filters):
        calls += group["calls"]
        paid += group["paid"] or 0
        mean = _route_ttft(organisation_id, filters, group) if group["route"] else None
        if mean is not None:
            measured += group["calls"]
            saved += round(mean * group["calls"] - group["ttft"])
    return SpeedPremium(calls, paid, measured, saved, filters.date_from)
