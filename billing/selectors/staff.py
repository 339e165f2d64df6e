"""The cross-tenant reads: staff pages and routing's weights. Every function here is
named ``unscoped_…`` and reads through ``unscoped_objects`` (docs/security.md, "The
tenancy gate")."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from itertools import pairwise

from django.db.models import OuterRef, Q, QuerySet, Subquery, Sum

from ..models import Activity, Organisation
from .common import PROMPT_BUCKETS, month_start
from .spend import spend_annotations


def unscoped_organisation_spend(*, now: datetime | None = None) -> QuerySet:
    """Every organisation with its calls, all-time spend, this month's and last month's
    spend (UTC) and last call. Staff only. The sums come from the daily rollups and the
    rows after them (one subquery each)."""
    this_month = month_start(now)
    last_month = month_start(this_month - timedelta(days=1))
    last_call = Activity.unscoped_objects.filter(organisation_id=OuterRef("pk"))
    last_call = last_call.order_by("-created_at").values("created_at")[:1]
    return Organisation.objects.annotate(
        **spend_annotations("organisation_id", since=this_month, previous=last_month),
        last_call_at=Subquery(last_call),
    )


def _bucket_sum(low: int, high: int | None) -> Sum:
    """Spend of the calls whose prompt has ``low`` tokens or more, less than ``high``."""
    below = Q() if high is None else Q(prompt_tokens__lt=high)
    return Sum("cost_usd", filter=Q(prompt_tokens__gte=low) & below)


def unscoped_spend_by_model_bucket(*, since: datetime) -> dict[tuple[str, str], Decimal]:
    """What customers of every organisation paid since ``since``, per (model slug,
    prompt-size bucket): routing's probes by volume weigh a probe against it. Sums
    only, nothing about any organisation."""
    bounds = (0, 8_000, 32_000, 128_000, None)
    sums = {f"b{i}": _bucket_sum(low, high) for i, (low, high) in enumerate(pairwise(bounds))}
    rows = Activity.unscoped_objects.filter(created_at__gte=since).values("model_slug")
    return {
        (row["model_slug"], bucket): Decimal(row[f"b{i}"] or 0)
        for row in rows.annotate(**sums)
        for i, bucket in enumerate(PROMPT_BUCKETS)
    }
