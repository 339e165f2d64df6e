"""The Activity list of one organisation: calls, rejections, CSV rows, cursor pages."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

from django.db.models import Q, QuerySet

from ..models import Activity, CallBody, RejectedRequest
from ..money import decimal_str
from .common import ActivityFilters, call_sums, first_or_404, in_days, matching, savings_of


def activity_list(*, organisation_id: int, filters: ActivityFilters | None = None) -> QuerySet:
    queryset = Activity.objects.for_organisation(organisation_id).select_related("api_key")
    if filters is None:
        return queryset
    queryset = matching(in_days(queryset, filters), filters)
    if filters.request_id:
        queryset = queryset.filter(request_id=filters.request_id)
    return queryset


def activity_get(*, organisation_id: int, request_id: str) -> Activity:
    activities = Activity.objects.for_organisation(organisation_id).select_related("api_key")
    activities = activities.prefetch_related("attempts").filter(request_id=request_id)
    return first_or_404(activities, "No such generation.")


def call_body_get(*, organisation_id: int, request_id: str) -> CallBody | None:
    """The kept request and reply of one of the organisation's calls (None: not kept:
    body logging off, expired, or another organisation's call)."""
    bodies = CallBody.objects.for_organisation(organisation_id)
    return bodies.filter(request_id=request_id).first()


def generation_get(*, organisation_id: int, request_id: str) -> Activity | None:
    """One call's row for ``GET /generation`` with its attempts as ``attempt_rows``, as
    the database has it (final or pending); None when it has none
    (billing.generations.generation_record adds this process's just-finished calls)."""
    activity = (
        Activity.objects.for_organisation(organisation_id)
        .select_related("api_key")
        .filter(request_id=request_id)
        .first()
    )
    if activity is not None:
        activity.attempt_rows = list(activity.attempts.all())
    return activity


def activity_totals(queryset: QuerySet) -> dict:
    """Calls, spend, tokens, whether any usage is estimated, and the savings."""
    totals = queryset.order_by().aggregate(**call_sums())
    totals["cost"] = totals["cost"] or Decimal(0)
    for name in ("prompt", "cached", "completion"):
        totals[name] = totals[name] or 0
    totals["savings"] = savings_of(totals)
    return totals


def rejected_list(*, organisation_id: int, filters: ActivityFilters | None = None) -> QuerySet:
    """Requests the gateway refused (4xx) for this organisation, newest first; the date,
    model and key filters of Activity apply."""
    queryset = RejectedRequest.objects.for_organisation(organisation_id)
    queryset = queryset.select_related("api_key")
    if filters is None:
        return queryset
    return matching(in_days(queryset, filters), filters, names=("model", "api_key_id"))


def rejected_get(*, organisation_id: int, rejected_id: int) -> RejectedRequest:
    """One refused request of this organisation; 404 for another's (or none)."""
    refused = RejectedRequest.objects.for_organisation(organisation_id).select_related("api_key")
    return first_or_404(refused.filter(id=rejected_id), "No such rejected request.")


def activity_filter_choices(*, organisation_id: int) -> dict[str, list[str]]:
    """The models and providers this organisation's calls used (for the filter menus)."""
    rows = Activity.objects.for_organisation(organisation_id).order_by()
    models = rows.values_list("model_slug", flat=True).distinct()
    providers = rows.exclude(provider_slug="").values_list("provider_slug", flat=True).distinct()
    return {"models": sorted(models), "providers": sorted(providers)}


CSV_COLUMNS = (
    "request_id",
    "created_at_utc",
    "model",
    "provider",
    "api_key",
    "status",
    "http_status",
    "stream",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "usage_estimated",
    "cost_usd",
    "list_cost_usd",
    "cheapest_input_route_cost_usd",
    "ttft_ms",
    "total_ms",
    "attempts",
    "hedged",
    "routing_strategy",
    "routing_reason",
    "prompt_bucket",
    "error",
)
# The Activity fields of the CSV columns after the first two, in their order.
_CSV_FIELDS = (
    "model_slug",
    "provider_slug",
    "api_key__name",
    "status",
    "http_status",
    "stream",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "usage_estimated",
    "cost_usd",
    "list_cost_usd",
    "cheapest_cost_usd",
    "ttft_ms",
    "total_ms",
    "attempt_count",
    "hedged",
    "routing_strategy",
    "routing_reason",
    "prompt_bucket",
    "error_message",
)


def activity_csv_rows(queryset: QuerySet, *, chunk_size: int = 2000) -> Iterator[list]:
    """The rows of ``queryset`` for the CSV export, newest first, read in chunks by keyset
    (created_at, id) so memory stays flat however many rows match. Money is exact."""
    queryset = queryset.order_by("-created_at", "-id")
    queryset = queryset.values_list("id", "request_id", "created_at", *_CSV_FIELDS)
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


def activity_page_after(
    queryset: QuerySet, *, after: tuple[datetime, int] | None, limit: int
) -> tuple[list[Activity], bool]:
    """One page of a cursor-paginated listing (newest first) and whether more follow."""
    queryset = queryset.order_by("-created_at", "-id")
    if after is not None:
        queryset = queryset.filter(keyset_after(*after))
    rows = list(queryset[: limit + 1])
    return rows[:limit], len(rows) > limit


CALL_KIND, REJECTED_KIND = "call", "rejected"
# A mixed listing's cursor: the last row's creation time, kind and id.
MixedCursor = tuple[datetime, str, int]


def _mixed_after(kind: str, after: MixedCursor) -> Q:
    """Rows of ``kind`` after ``after`` in the mixed order: newest first; at one instant
    calls before rejections, each by id, newest first."""
    created_at, after_kind, pk = after
    older = Q(created_at__lt=created_at)
    if kind == after_kind:
        return older | Q(created_at=created_at, id__lt=pk)
    if after_kind == CALL_KIND:  # the rejections of that instant come after its calls
        return older | Q(created_at=created_at)
    return older  # after a rejection: the calls of its instant came before it


def mixed_page_after(
    calls: QuerySet, rejected: QuerySet, *, after: MixedCursor | None, limit: int
) -> tuple[list[Activity | RejectedRequest], bool]:
    """One page of calls and refused requests in one listing (``include_rejected``),
    newest first, and whether more follow: ``limit + 1`` rows of each, merged."""
    rows: list[Activity | RejectedRequest] = []
    for kind, queryset in ((CALL_KIND, calls), (REJECTED_KIND, rejected)):
        queryset = queryset.order_by("-created_at", "-id")
        if after is not None:
            queryset = queryset.filter(_mixed_after(kind, after))
        rows += list(queryset[: limit + 1])
    rows.sort(key=lambda r: (r.created_at, isinstance(r, Activity), r.id), reverse=True)
    return rows[:limit], len(rows) > limit


def row_kind(row: Activity | RejectedRequest) -> str:
    return REJECTED_KIND if isinstance(row, RejectedRequest) else CALL_KIND
