"""Activity: every call, filtered, totalled, paginated, exported as CSV, and one call's detail."""

from __future__ import annotations

import csv
import itertools
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render

from .. import selectors
from ..forms import ActivityFilterForm
from ..savings import activity_savings
from .common import organisation_required

PAGE_SIZE = 50
CSV_CHUNK_ROWS = 500
# Cells starting with these are formulas to a spreadsheet: neutralised with a quote.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _filtered(request: HttpRequest) -> tuple[ActivityFilterForm, object]:
    """The filter form and the organisation's rows it selects (none if the form is invalid)."""
    organisation_id = request.organisation.id
    form = ActivityFilterForm(request.GET, organisation_id=organisation_id)
    if not form.is_valid():
        return form, selectors.activity_list(organisation_id=organisation_id).none()
    return form, selectors.activity_list(organisation_id=organisation_id, filters=form.filters())


@organisation_required
def activity_list_view(request: HttpRequest) -> HttpResponse:
    form, queryset = _filtered(request)
    context = {
        "form": form,
        "filtered": any(v for k, v in request.GET.items() if k != "page"),
        "nav": "activity",
    }
    if form.rejected:
        context.update(_rejected_context(request, form))
        return render(request, "dashboard/activity.html", context)
    if form.is_valid():  # totals from the daily rollups (docs/operations.md)
        filters = form.filters()
        totals = selectors.usage_totals(organisation_id=request.organisation.id, filters=filters)
        count = selectors.activity_row_count(
            organisation_id=request.organisation.id, filters=filters, totals=totals
        )
        context["premium"] = selectors.speed_premium(
            organisation_id=request.organisation.id, filters=filters
        )
    else:
        totals = selectors.activity_totals(queryset)
        count = totals["calls"]
    # The totals' count is the rows' count (less archived days): no COUNT(*) over every
    # row, and no scan for rows of a filter combination that has none.
    paginator = Paginator(queryset if count else queryset.none(), PAGE_SIZE)
    paginator.count = count
    page = paginator.get_page(request.GET.get("page"))
    for activity in page:
        activity.savings = activity_savings(activity)
    context["page"] = page
    context["totals"] = totals
    context["any_estimated"] = any(activity.usage_estimated for activity in page)
    return render(request, "dashboard/activity.html", context)


def _rejected_context(request: HttpRequest, form: ActivityFilterForm) -> dict:
    """The "rejected" view of Activity: refused requests instead of calls."""
    rejected = selectors.rejected_list(
        organisation_id=request.organisation.id, filters=form.filters()
    )
    page = Paginator(rejected, PAGE_SIZE).get_page(request.GET.get("page"))
    return {"page": page, "rejected": True, "rejected_count": page.paginator.count}


@organisation_required
def activity_detail_view(request: HttpRequest, request_id: str) -> HttpResponse:
    activity = selectors.activity_get(
        organisation_id=request.organisation.id, request_id=request_id
    )
    bodies = selectors.call_body_get(organisation_id=request.organisation.id, request_id=request_id)
    context = {
        "activity": activity,
        "savings": activity_savings(activity),
        "bodies": bodies,
        "logs_bodies": request.organisation.log_bodies,
        "nav": "activity",
    }
    return render(request, "dashboard/activity_detail.html", context)


@organisation_required
def rejected_detail_view(request: HttpRequest, rejected_id: int) -> HttpResponse:
    """One refused request: when, key, model asked, status, error code, message, param."""
    rejected = selectors.rejected_get(
        organisation_id=request.organisation.id, rejected_id=rejected_id
    )
    context = {"rejected": rejected, "nav": "activity"}
    return render(request, "dashboard/rejected_detail.html", context)


class _Echo:
    """A file-like object whose write returns the line, for csv.writer."""

    def write(self, value: str) -> str:
        return value


def _safe(cell):
    if isinstance(cell, str) and cell.startswith(_FORMULA_STARTS):
        return "'" + cell
    return cell


def _csv_lines(rows: Iterable[list], columns=selectors.CSV_COLUMNS) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([_safe(cell) for cell in row])


async def _csv_lines_async(lines: Iterator[str]) -> AsyncIterator[str]:
    """Under ASGI, Django streams only async iterators (it would buffer a sync one):
    pull the rows in chunks on the request's thread, where its database connection is."""
    take = sync_to_async(lambda: list(itertools.islice(lines, CSV_CHUNK_ROWS)))
    while chunk := await take():
        yield "".join(chunk)


@organisation_required
def activity_csv_view(request: HttpRequest) -> HttpResponse:
    form, queryset = _filtered(request)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(e)}" for field, e in form.errors.items())
        return HttpResponse(f"Invalid filter. {errors}\n", status=400, content_type="text/plain")
    if form.rejected:
        rejected = selectors.rejected_list(
            organisation_id=request.organisation.id, filters=form.filters()
        )
        lines = _csv_lines(selectors.rejected_csv_rows(rejected), selectors.REJECTED_CSV_COLUMNS)
    else:
        lines = _csv_lines(selectors.activity_csv_rows(queryset))
    content = _csv_lines_async(lines) if isinstance(request, ASGIRequest) else lines
    response = StreamingHttpResponse(content, content_type="text/csv; charset=utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    filename = f"activity-{request.organisation.slug}-{stamp}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
