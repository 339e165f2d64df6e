"""Reads for the dashboard and the API. Tenancy is enforced here, in one place:
every queryset of tenant data starts from ``for_organisation``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

from django.db.models import (
    Count,
    DecimalField,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, TruncDate
from django.http import Http404

from .models import (
    Activity,
    ApiKey,
    Invitation,
    Membership,
    Organisation,
    RejectedRequest,
    SpendAlert,
)
from .money import decimal_str
from .savings import Savings

TENANT_MODELS = {Activity: "organisation_id", ApiKey: "organisation_id",
                 Membership: "organisation_id", Invitation: "organisation_id",
                 RejectedRequest: "organisation_id", SpendAlert: "organisation_id"}  # fmt: skip

# The prompt-size buckets of the routing core, in size order (see product.md).
PROMPT_BUCKETS = ("<8k", "8k-32k", "32k-128k", ">128k")
_ZERO_USD = Value(Decimal(0), output_field=DecimalField(max_digits=20, decimal_places=10))


def for_organisation(model, organisation_id: int) -> QuerySet:
    """The only way to query tenant data: scoped to one organisation, fail closed."""
    if not organisation_id:
        return model.objects.none()
    return model.objects.filter(**{TENANT_MODELS[model]: organisation_id})


def organisation_for_user(user) -> Organisation | None:
    membership = membership_for_user(user)
    return membership.organisation if membership else None


def membership_for_user(user) -> Membership | None:
    memberships = Membership.objects.filter(user=user).select_related("organisation")
    return memberships.order_by("id").first()


def month_start(now: datetime | None = None) -> datetime:
    """Midnight UTC on the first day of ``now``'s calendar month (UTC)."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


# --- Activity -------------------------------------------------------------------------


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
_EQUAL_FILTERS = (("model", "model_slug"), ("provider", "provider_slug"),
                  ("api_key_id", "api_key_id"), ("status", "status"))  # fmt: skip


def _matching(queryset: QuerySet, filters: ActivityFilters, names=("model", "provider",
              "api_key_id", "status")) -> QuerySet:  # fmt: skip
    """``queryset`` narrowed by the equality filters among ``names`` that are set (a key
    id of another organisation matches nothing: the queryset is already scoped)."""
    for name, field in _EQUAL_FILTERS:
        value = getattr(filters, name)
        if name in names and value is not None and value != "":
            queryset = queryset.filter(**{field: value})
    return queryset


def _in_days(queryset: QuerySet, filters: ActivityFilters) -> QuerySet:
    """``queryset`` (``created_at``) narrowed to the filters' UTC days, both inclusive."""
    if filters.date_from:
        queryset = queryset.filter(created_at__gte=day_start(filters.date_from))
    if filters.date_to:  # inclusive: up to the end of that day
        queryset = queryset.filter(created_at__lt=day_start(filters.date_to) + timedelta(days=1))
    return queryset


def activity_list(*, organisation_id: int, filters: ActivityFilters | None = None) -> QuerySet:
    queryset = for_organisation(Activity, organisation_id).select_related("api_key")
    if filters is None:
        return queryset
    queryset = _matching(_in_days(queryset, filters), filters)
    if filters.request_id:
        queryset = queryset.filter(request_id=filters.request_id)
    return queryset


def activity_get(*, organisation_id: int, request_id: str) -> Activity:
    activity = (
        for_organisation(Activity, organisation_id)
        .select_related("api_key")
        .prefetch_related("attempts")
        .filter(request_id=request_id)
        .first()
    )
    if activity is None:
        raise Http404("No such generation.")
    return activity


def _savings_sums() -> dict:
    """The sums savings are computed from: only calls whose reference cost is known."""
    return {
        "list_cost": Sum("list_cost_usd"),
        "cost_with_list": Sum("cost_usd", filter=Q(list_cost_usd__isnull=False)),
        "cheapest_cost": Sum("cheapest_cost_usd"),
        "cost_with_cheapest": Sum("cost_usd", filter=Q(cheapest_cost_usd__isnull=False)),
    }


def _savings_of(row: dict) -> Savings:
    """Savings of an aggregated row (see billing/savings.py for the definition)."""
    vs_list = Savings.of(cost=row.get("cost_with_list"), list_cost=row.get("list_cost"),
                         cheapest_cost=None)  # fmt: skip
    vs_cheapest = Savings.of(cost=row.get("cost_with_cheapest"), list_cost=None,
                             cheapest_cost=row.get("cheapest_cost"))  # fmt: skip
    return Savings(vs_list=vs_list.vs_list, vs_list_percent=vs_list.vs_list_percent,
                   vs_cheapest=vs_cheapest.vs_cheapest)  # fmt: skip


def activity_totals(queryset: QuerySet) -> dict:
    """Calls, spend, tokens, whether any usage is estimated, and the savings."""
    totals = queryset.order_by().aggregate(
        calls=Count("id"),
        cost=Sum("cost_usd"),
        prompt=Sum("prompt_tokens"),
        cached=Sum("cached_tokens"),
        completion=Sum("completion_tokens"),
        estimated=Count("id", filter=Q(usage_estimated=True)),
        **_savings_sums(),
    )
    totals["cost"] = totals["cost"] or Decimal(0)
    for name in ("prompt", "cached", "completion"):
        totals[name] = totals[name] or 0
    totals["savings"] = _savings_of(totals)
    return totals


def rejected_list(*, organisation_id: int, filters: ActivityFilters | None = None) -> QuerySet:
    """Requests the gateway refused (4xx) for this organisation, newest first; the date,
    model and key filters of Activity apply."""
    queryset = for_organisation(RejectedRequest, organisation_id).select_related("api_key")
    if filters is None:
        return queryset
    return _matching(_in_days(queryset, filters), filters, names=("model", "api_key_id"))


def activity_filter_choices(*, organisation_id: int) -> dict[str, list[str]]:
    """The models and providers this organisation's calls used (for the filter menus)."""
    rows = for_organisation(Activity, organisation_id).order_by()
    models = rows.values_list("model_slug", flat=True).distinct()
    providers = rows.exclude(provider_slug="").values_list("provider_slug", flat=True).distinct()
    return {"models": sorted(models), "providers": sorted(providers)}


CSV_COLUMNS = (
    "request_id", "created_at_utc", "model", "provider", "api_key", "status", "http_status",
    "stream", "input_tokens", "cached_tokens", "output_tokens", "usage_estimated", "cost_usd",
    "list_cost_usd", "cheapest_input_route_cost_usd", "ttft_ms", "total_ms", "attempts",
    "hedged", "routing_strategy", "routing_reason", "prompt_bucket", "error",
)  # fmt: skip


def activity_csv_rows(queryset: QuerySet, *, chunk_size: int = 2000) -> Iterator[list]:
    """The rows of ``queryset`` for the CSV export, newest first, read in chunks by keyset
    (created_at, id) so memory stays flat however many rows match. Money is exact."""
    queryset = queryset.order_by("-created_at", "-id").values_list(
        "id", "request_id", "created_at", "model_slug", "provider_slug", "api_key__name",
        "status", "http_status", "stream", "prompt_tokens", "cached_tokens",
        "completion_tokens", "usage_estimated", "cost_usd", "list_cost_usd",
        "cheapest_cost_usd", "ttft_ms", "total_ms", "attempt_count", "hedged",
        "routing_strategy", "routing_reason", "prompt_bucket", "error_message",
    )  # fmt: skip
    for row in keyset_chunks(queryset, chunk_size=chunk_size):
        _pk, request_id, created_at, *rest = row
        rest = [decimal_str(v) if isinstance(v, Decimal) else v for v in rest]
        yield [request_id, created_at.astimezone(UTC).isoformat(), *rest]


REJECTED_CSV_COLUMNS = ("created_at_utc", "http_status", "code", "message", "model", "api_key")


def rejected_csv_rows(queryset: QuerySet, *, chunk_size: int = 2000) -> Iterator[list]:
    queryset = queryset.order_by("-created_at", "-id").values_list(
        "id", "http_status", "created_at", "code", "message", "model_slug", "api_key__name"
    )
    for row in keyset_chunks(queryset, chunk_size=chunk_size):
        _pk, status, created_at, *rest = row
        yield [created_at.astimezone(UTC).isoformat(), status, *rest]


def keyset_chunks(queryset: QuerySet, *, chunk_size: int) -> Iterator[tuple]:
    """Rows of a ``values_list("id", _, "created_at", ...)`` queryset ordered by
    (-created_at, -id), fetched chunk by chunk after the last row seen."""
    after: tuple[datetime, int] | None = None
    while True:
        chunk = queryset
        if after is not None:
            chunk = chunk.filter(keyset_after(*after))
        rows = list(chunk[:chunk_size])
        yield from rows
        if len(rows) < chunk_size:
            return
        after = (rows[-1][2], rows[-1][0])


def keyset_after(created_at: datetime, pk: int) -> Q:
    """Rows after (older than) ``(created_at, pk)`` in (-created_at, -id) order."""
    return Q(created_at__lt=created_at) | Q(created_at=created_at, id__lt=pk)


def activity_page_after(queryset: QuerySet, *, after: tuple[datetime, int] | None,
                        limit: int) -> tuple[list[Activity], bool]:  # fmt: skip
    """One page of a cursor-paginated listing (newest first) and whether more follow."""
    queryset = queryset.order_by("-created_at", "-id")
    if after is not None:
        queryset = queryset.filter(keyset_after(*after))
    rows = list(queryset[: limit + 1])
    return rows[:limit], len(rows) > limit


# --- Usage ----------------------------------------------------------------------------


def _usage_sums() -> dict:
    """Calls, spend, tokens and savings sums of a group of Activity rows."""
    return {
        "calls": Count("id"),
        "cost": Coalesce(Sum("cost_usd"), _ZERO_USD),
        "prompt": Coalesce(Sum("prompt_tokens"), 0),
        "cached": Coalesce(Sum("cached_tokens"), 0),
        "completion": Coalesce(Sum("completion_tokens"), 0),
        **_savings_sums(),
    }


def _usage_row(row: dict) -> dict:
    return {**row, "cost": Decimal(row["cost"]), "savings": _savings_of(row)}


EMPTY_USAGE = {"calls": 0, "cost": Decimal(0), "prompt": 0, "cached": 0, "completion": 0}


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


def _usage_by(queryset: QuerySet, field: str) -> list[dict]:
    rows = queryset.order_by().values(field).annotate(**_usage_sums())
    return sorted(
        (_usage_row(row) for row in rows),
        key=lambda row: (-row["cost"], -row["calls"], str(row[field])),
    )


def usage_per_model(queryset: QuerySet) -> list[dict]:
    """Calls, tokens, spend and savings per model, dearest first."""
    return _usage_by(queryset, "model_slug")


def usage_per_provider(queryset: QuerySet) -> list[dict]:
    """Per serving provider (calls no provider served are under "")."""
    return _usage_by(queryset, "provider_slug")


def usage_per_key(queryset: QuerySet) -> list[dict]:
    """Per API key: ``api_key__name`` and ``api_key_id`` (None for a deleted key)."""
    rows = queryset.order_by().values("api_key_id", "api_key__name").annotate(**_usage_sums())
    return sorted(
        (_usage_row(row) for row in rows),
        key=lambda row: (-row["cost"], -row["calls"], str(row["api_key__name"])),
    )


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


# --- API keys -------------------------------------------------------------------------


def api_key_list(*, organisation_id: int, now: datetime | None = None) -> QuerySet:
    """The organisation's keys with ``spend_month`` (this calendar month, UTC),
    ``spend_total`` and ``calls_total`` (from the daily rollups and the recent rows)."""
    since = month_start(now)
    return for_organisation(ApiKey, organisation_id).annotate(
        **_rolled_annotations("api_key_id", since=since)
    )


def api_key_choices(*, organisation_id: int) -> QuerySet:
    return for_organisation(ApiKey, organisation_id).order_by("name", "id")


def api_key_get(*, organisation_id: int, key_id: int) -> ApiKey:
    api_key = for_organisation(ApiKey, organisation_id).filter(id=key_id).first()
    if api_key is None:
        raise Http404("No such key.")
    return api_key


def api_key_month_spend(*, organisation_id: int, api_key_id: int, now: datetime | None = None):
    """What one key spent this calendar month (UTC), as a Decimal."""
    total = (
        for_organisation(Activity, organisation_id)
        .filter(api_key_id=api_key_id, created_at__gte=month_start(now))
        .order_by()
        .aggregate(total=Sum("cost_usd"))["total"]
    )
    return Decimal(total or 0)


# --- Members --------------------------------------------------------------------------


def membership_list(*, organisation_id: int) -> QuerySet:
    return (
        for_organisation(Membership, organisation_id)
        .select_related("user")
        .order_by("user__username")
    )


def membership_get(*, organisation_id: int, membership_id: int) -> Membership:
    membership = (
        for_organisation(Membership, organisation_id)
        .select_related("user")
        .filter(id=membership_id)
        .first()
    )
    if membership is None:
        raise Http404("No such member.")
    return membership


def invitation_pending_list(*, organisation_id: int) -> QuerySet:
    """The organisation's invitations not yet accepted, revoked or expired."""
    return for_organisation(Invitation, organisation_id).filter(
        accepted_at=None, revoked_at=None, expires_at__gt=datetime.now(UTC)
    )


def invitation_by_token(token: str) -> Invitation | None:
    """The pending invitation a link token stands for, or None (forged, too old, used,
    revoked or expired: one answer for all)."""
    from .invitations import hash_from_token

    secret_hash = hash_from_token(token)
    if secret_hash is None:
        return None
    return (
        Invitation.objects.select_related("organisation")
        .filter(secret_hash=secret_hash, accepted_at=None, revoked_at=None,
                expires_at__gt=datetime.now(UTC))
        .first()
    )  # fmt: skip


def invitation_get(*, organisation_id: int, invitation_id: int) -> Invitation:
    invitation = for_organisation(Invitation, organisation_id).filter(id=invitation_id).first()
    if invitation is None:
        raise Http404("No such invitation.")
    return invitation


# --- Staff (admin) --------------------------------------------------------------------


def organisation_spend(*, now: datetime | None = None) -> QuerySet:
    """Every organisation with its calls, all-time spend, this month's and last month's
    spend (UTC) and last call. Staff only: one of the two cross-tenant reads (the other,
    ``spend_by_model_bucket``, returns sums per model and size bucket only). The sums
    come from the daily rollups and the rows after them (one subquery each)."""
    this_month = month_start(now)
    last_month = month_start(this_month - timedelta(days=1))
    last_call = Activity.objects.filter(organisation_id=OuterRef("pk")).order_by("-created_at")
    return Organisation.objects.annotate(
        **_rolled_annotations("organisation_id", since=this_month, previous=last_month),
        last_call_at=Subquery(last_call.values("created_at")[:1]),
    )


def spend_by_model_bucket(*, since: datetime) -> dict[tuple[str, str], Decimal]:
    """What customers of every organisation paid since ``since``, per (model slug,
    prompt-size bucket): routing's probes by volume weigh a probe against it. A
    cross-tenant read that returns sums only, nothing about any organisation."""
    bounds = (0, 8_000, 32_000, 128_000, None)
    sums = {
        f"b{i}": Sum("cost_usd", filter=Q(prompt_tokens__gte=low)
                     & (Q() if high is None else Q(prompt_tokens__lt=high)))
        for i, (low, high) in enumerate(pairwise(bounds))
    }  # fmt: skip
    rows = Activity.objects.filter(created_at__gte=since).values("model_slug").annotate(**sums)
    return {
        (row["model_slug"], bucket): Decimal(row[f"b{i}"] or 0)
        for row in rows
        for i, bucket in enumerate(PROMPT_BUCKETS)
    }


def spend_since(*, organisation_id: int, api_key_id: int | None, since: datetime) -> Decimal:
    """What an organisation (or one of its keys) spent from ``since`` on, as a Decimal
    (seeds a spend budget's period, billing.limits)."""
    rows = for_organisation(Activity, organisation_id).filter(created_at__gte=since)
    if api_key_id is not None:
        rows = rows.filter(api_key_id=api_key_id)
    total = rows.order_by().aggregate(total=Sum("cost_usd"))["total"]
    return Decimal(total or 0)


def spend_alerts_recent(*, organisation_id: int, since: datetime) -> QuerySet:
    """The organisation's spend alerts raised from ``since`` on, newest first."""
    return for_organisation(SpendAlert, organisation_id).filter(created_at__gte=since)


def _rolled_annotations(field: str, *, since: datetime, previous: datetime | None = None) -> dict:
    """Per-row subqueries (``field`` = OuterRef("pk")) of calls and spend: ``calls``/
    ``calls_total``, ``spend_total``, ``spend_month`` (from ``since``) and, with
    ``previous``, ``spend_last_month`` (from ``previous`` to ``since``)."""
    from .models import UsageDaily
    from .rollups import rolled_rows, rollup_state

    through, months_through, month_to_date = rollup_state()
    rolled = UsageDaily.objects.filter(**{field: OuterRef("pk")})
    recent = Activity.objects.filter(**{field: OuterRef("pk")})
    if through is not None:
        recent = recent.filter(created_at__gte=day_start(through + timedelta(days=1)))
    else:
        rolled = rolled.none()

    def rolled_days(start: date | None, end: date | None = None) -> Q:
        """Rollup rows of [start, end) within the rolled days."""
        if through is None:
            return Q()
        last = min(end - timedelta(days=1), through) if end else through
        return rolled_rows(start, last, months_through, month_to_date)

    def total(queryset: QuerySet, value, output) -> Coalesce:
        sub = queryset.order_by().values(field).annotate(v=value).values("v")[:1]
        return Coalesce(Subquery(sub, output_field=output), Value(0), output_field=output)

    usd = DecimalField(max_digits=24, decimal_places=10)
    calls = IntegerField()

    def spend(start: datetime | None, end: datetime | None = None):
        days = rolled_days(start.date() if start else None, end.date() if end else None)
        rows = Q()
        if start:
            rows &= Q(created_at__gte=start)
        if end:
            rows &= Q(created_at__lt=end)
        return total(rolled.filter(days), Sum("cost_usd"), usd) + total(
            recent.filter(rows), Sum("cost_usd"), usd
        )

    count = total(rolled.filter(rolled_days(None)), Sum("calls"), calls) + total(
        recent, Count("id"), calls
    )
    annotations = {"spend_total": spend(None), "spend_month": spend(since)}
    if previous is not None:
        annotations["calls"] = count
        annotations["spend_last_month"] = spend(previous, since)
    else:
        annotations["calls_total"] = count
    return annotations


# --- Rolled-up reads (docs/operations.md, "Activity at 10 million rows") ---------------
#
# Totals, charts and percentiles read the daily rollups (billing.rollups) for the days
# they cover and the Activity rows only for the days after: the same figures as the
# queryset functions above (which read every row), in a time that does not grow with
# the organisation's history. TTFT percentiles are over values rounded to two
# significant digits (within 5 % of the exact ones).


@dataclass(frozen=True, slots=True)
class _Split:
    """The rollup rows and the Activity rows that together make one filtered range."""

    rolled: QuerySet | None  # UsageDaily
    ttft_rolled: QuerySet | None  # TtftDaily (None: read TTFTs from ``recent``)
    recent: QuerySet  # Activity rows not covered by ``rolled``
    last_rolled: date | None = None  # the last day ``rolled`` covers (None: no rollup)


def _split(
    organisation_id: int, filters: ActivityFilters | None, *, monthly: bool = True
) -> _Split:
    """``monthly=False``: daily rollup rows only (for per-day groups)."""
    from .models import TtftDaily, UsageDaily
    from .rollups import rolled_rows, rollup_state

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
    rolled = _matching(UsageDaily.objects.filter(days, organisation_id=organisation_id), filters)
    ttft_rolled = None
    if not (filters.model or filters.api_key_id is not None or filters.status):
        ttft_rolled = TtftDaily.objects.filter(days, organisation_id=organisation_id)
        if filters.provider:
            ttft_rolled = ttft_rolled.filter(provider_slug=filters.provider)
    recent = raw.filter(created_at__gte=day_start(through + timedelta(days=1)))
    return _Split(rolled.order_by(), ttft_rolled, recent, last)


_SUM_KEYS = ("calls", "cost", "prompt", "cached", "completion", "estimated", "list_cost",
             "cost_with_list", "cheapest_cost", "cost_with_cheapest")  # fmt: skip


def _rolled_sums() -> dict:
    return {
        "calls": Sum("calls"), "cost": Sum("cost_usd"), "prompt": Sum("prompt_tokens"),
        "cached": Sum("cached_tokens"), "completion": Sum("completion_tokens"),
        "estimated": Sum("estimated"), "list_cost": Sum("list_cost_usd"),
        "cost_with_list": Sum("cost_with_list_usd"), "cheapest_cost": Sum("cheapest_cost_usd"),
        "cost_with_cheapest": Sum("cost_with_cheapest_usd"),
    }  # fmt: skip


def _raw_sums() -> dict:
    return {
        "calls": Count("id"), "cost": Sum("cost_usd"), "prompt": Sum("prompt_tokens"),
        "cached": Sum("cached_tokens"), "completion": Sum("completion_tokens"),
        "estimated": Count("id", filter=Q(usage_estimated=True)), **_savings_sums(),
    }  # fmt: skip


def _add(a: dict | None, b: dict | None) -> dict:
    """Sum two aggregated rows key by key; a null sum stays null only if both are."""
    out = {}
    for key in _SUM_KEYS:
        x, y = (a or {}).get(key), (b or {}).get(key)
        out[key] = y if x is None else x if y is None else x + y
    return out


def _finish(row: dict) -> dict:
    row["calls"] = row["calls"] or 0
    row["cost"] = Decimal(row["cost"] or 0)
    for name in ("prompt", "cached", "completion", "estimated"):
        row[name] = row[name] or 0
    row["savings"] = _savings_of(row)
    return row


def usage_totals(*, organisation_id: int, filters: ActivityFilters | None = None) -> dict:
    """``activity_totals`` of the filtered calls, from the rollups where they apply."""
    split = _split(organisation_id, filters)
    rolled = split.rolled.aggregate(**_rolled_sums()) if split.rolled is not None else None
    return _finish(_add(rolled, split.recent.aggregate(**_raw_sums())))


def activity_row_count(*, organisation_id: int, filters: ActivityFilters, totals: dict) -> int:
    """How many rows the filtered Activity list has, given its ``usage_totals``: their
    calls, less those of the days archived (billing.retention; the rollups keep them in
    the totals, the table no longer has their rows; the pending rows a run left there
    are not counted)."""
    from .rollups import archived_before

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


def _grouped(split: _Split, rolled_fields: tuple, raw_fields: tuple, raw_qs=None) -> dict:
    """Sums per group key (a tuple of the fields' values), rolled and recent added."""
    groups: dict[tuple, dict] = {}
    if split.rolled is not None:
        for row in split.rolled.values(*rolled_fields).annotate(**_rolled_sums()):
            groups[tuple(row[f] for f in rolled_fields)] = row
    recent = raw_qs if raw_qs is not None else split.recent
    for row in recent.values(*raw_fields).annotate(**_raw_sums()):
        key = tuple(row[f] for f in raw_fields)
        groups[key] = _add(groups.get(key), row)
    return groups


def _day_totals(split: _Split, organisation_id: int, date_from: date) -> QuerySet | None:
    """The ``UsageDayTotal`` rows (one per day) of the rolled days of ``split``."""
    from .models import UsageDayTotal

    if split.rolled is None or split.last_rolled is None:
        return None
    return UsageDayTotal.objects.filter(
        organisation_id=organisation_id, day__gte=date_from, day__lte=split.last_rolled
    ).order_by()


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
    return _per_day(_grouped(split, ("day",), ("day",), raw_qs=recent), date_from, date_to)


def _by_rows(groups: dict, fields: tuple, by: str) -> list[dict]:
    """Rows of ``usage_by`` from sums per group key (``fields``' values), dearest first."""
    rows = []
    for key, row in groups.items():
        row = _finish(_add(row, None))
        row.pop("estimated")
        rows.append({**row, **dict(zip(fields, key, strict=True))})
    if by == "api_key":
        names = dict(
            ApiKey.objects.filter(id__in=[r["api_key_id"] for r in rows if r["api_key_id"]])
            .values_list("id", "name")
        )  # fmt: skip
        for row in rows:
            row["api_key__name"] = names.get(row["api_key_id"])
        label = "api_key__name"
    else:
        label = by
    return sorted(rows, key=lambda row: (-row["cost"], -row["calls"], str(row[label])))


_DIMENSIONS = ("api_key_id", "model_slug", "provider_slug")


def usage_summary(*, organisation_id: int, date_from: date, date_to: date) -> dict:
    """The Usage page's ``totals``, ``per_day``, ``per_model``, ``per_provider`` and
    ``per_key`` over [``date_from``, ``date_to``]: the same figures as ``usage_totals``,
    ``usage_days`` and ``usage_by`` (each of them), from three reads instead of ten: the
    rollups grouped by (key, model, provider), the per-day totals of the rolled days and
    the recent Activity rows grouped by (day, key, model, provider)."""
    filters = ActivityFilters(date_from=date_from, date_to=date_to)
    split = _split(organisation_id, filters)
    groups: dict[tuple, dict] = {}
    days: dict[tuple, dict] = {}
    if split.rolled is not None:
        for row in split.rolled.values(*_DIMENSIONS).annotate(**_rolled_sums()):
            groups[tuple(row[f] for f in _DIMENSIONS)] = row
        day_rows = _day_totals(split, organisation_id, date_from)
        for row in day_rows.values("day").annotate(**_rolled_sums()):
            days[(row["day"],)] = row
    recent = (
        split.recent.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", *_DIMENSIONS)
        .annotate(**_raw_sums())
    )
    for row in recent:
        key = tuple(row[f] for f in _DIMENSIONS)
        groups[key] = _add(groups.get(key), row)
        days[(row["day"],)] = _add(days.get((row["day"],)), row)
    totals: dict | None = None
    per: dict[str, dict[tuple, dict]] = {f: {} for f in _DIMENSIONS}
    for key, row in groups.items():
        totals = _add(totals, row)
        for field, value in zip(_DIMENSIONS, key, strict=True):
            per[field][(value,)] = _add(per[field].get((value,)), row)
    return {
        "totals": _finish(_add(totals, None)),
        "per_day": _per_day(days, date_from, date_to),
        "per_model": _by_rows(per["model_slug"], ("model_slug",), "model_slug"),
        "per_provider": _by_rows(per["provider_slug"], ("provider_slug",), "provider_slug"),
        "per_key": _by_rows(per["api_key_id"], ("api_key_id",), "api_key"),
    }


def usage_by(*, organisation_id: int, filters: ActivityFilters | None, by: str) -> list[dict]:
    """``usage_per_model`` (``by="model_slug"``), ``usage_per_provider``
    (``"provider_slug"``) or ``usage_per_key`` (``"api_key"``: rows carry
    ``api_key_id`` and ``api_key__name``) from the rollups, dearest first."""
    split = _split(organisation_id, filters)
    fields = ("api_key_id",) if by == "api_key" else (by,)
    return _by_rows(_grouped(split, fields, fields), fields, by)


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


def usage_ttft(*, organisation_id: int, filters: ActivityFilters | None = None) -> list[dict]:
    """``ttft_by_bucket``'s shape from the rollups: p50/p90 over TTFTs rounded to two
    significant digits (``billing.rollups.ttft_rounded``), counted in the database."""
    from .rollups import ttft_rounded

    split = _split(organisation_id, filters)
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    if split.ttft_rolled is not None:
        rolled = split.ttft_rolled.values_list("provider_slug", "prompt_bucket", "ttft_ms")
        for provider, bucket, value, n in rolled.annotate(n=Sum("calls")):
            counts[(provider, bucket)][value] += n
        recent = split.recent
    else:
        recent = activity_list(organisation_id=organisation_id, filters=filters).order_by()
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
    providers: dict[str, dict] = {}
    for (provider, bucket), values in counts.items():
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
        providers.update(part.exclude(provider_slug="").values_list("provider_slug", flat=True)
                         .distinct())  # fmt: skip
    return {"models": sorted(models), "providers": sorted(providers)}
