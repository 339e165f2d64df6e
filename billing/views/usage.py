"""Usage: spend, calls, tokens and savings by day, provider, key and model; TTFT p50/p90
by provider and prompt size; every table exportable as CSV."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors
from ..forms import UsageRangeForm
from ..money import decimal_str
from ..provider_colours import provider_colours
from .common import organisation_required

DEFAULT_DAYS = 30
EXPORTS = ("day", "provider", "key", "model", "ttft")


def _date_range(form: UsageRangeForm):
    today = datetime.now(UTC).date()
    data = form.cleaned_data if form.is_valid() else {}
    date_from, date_to = data.get("date_from"), data.get("date_to")
    if date_to is None:
        date_to = max(today, date_from) if date_from else today
    if date_from is None:
        date_from = date_to - timedelta(days=DEFAULT_DAYS - 1)
    # At most MAX_DAYS days (one row per day is built for the chart).
    date_from = max(date_from, date_to - timedelta(days=UsageRangeForm.MAX_DAYS - 1))
    return date_from, date_to


def _usage(request: HttpRequest, form: UsageRangeForm) -> dict:
    date_from, date_to = _date_range(form)
    organisation_id = request.organisation.id
    filters = selectors.ActivityFilters(date_from=date_from, date_to=date_to)
    return {
        "date_from": date_from,
        "date_to": date_to,
        **selectors.usage_summary(
            organisation_id=organisation_id, date_from=date_from, date_to=date_to
        ),
        "ttft": selectors.usage_ttft(organisation_id=organisation_id, filters=filters),
    }


def _chart(usage: dict, buckets) -> dict:
    per_day, per_model, ttft = usage["per_day"], usage["per_model"], usage["ttft"]
    per_provider = usage["per_provider"]

    def cells(row, name):
        return [row["buckets"].get(b, {}).get(name) for b in buckets]

    return {
        "days": [row["day"].isoformat() for row in per_day],
        "dailyCost": [float(row["cost"]) for row in per_day],
        "dailySaved": [float(row["savings"].vs_list or 0) for row in per_day],
        "dailyCalls": [row["calls"] for row in per_day],
        "models": [row["model_slug"] for row in per_model],
        "modelCost": [float(row["cost"]) for row in per_model],
        "providers": [row["provider_slug"] or "(none)" for row in per_provider],
        "providerCost": [float(row["cost"]) for row in per_provider],
        "providerColours": provider_colours(
            [row["provider_slug"] for row in per_provider] + [row["provider"] for row in ttft]
        ),
        "buckets": list(buckets),
        "ttft": [
            {
                "provider": row["provider"],
                "medians": cells(row, "median_ms"),
                "p90s": cells(row, "p90_ms"),
            }
            for row in ttft
        ],
    }


@organisation_required
def usage_view(request: HttpRequest) -> HttpResponse:
    form = UsageRangeForm(request.GET)
    usage = _usage(request, form)
    requested_from = form.cleaned_data.get("date_from") if form.is_valid() else None
    clamped = requested_from is not None and requested_from < usage["date_from"]
    if not request.GET:  # show the default range in the inputs
        form = UsageRangeForm(
            initial={"date_from": usage["date_from"], "date_to": usage["date_to"]}
        )
    buckets = selectors.PROMPT_BUCKETS
    ttft_rows = [
        {"provider": row["provider"], "cells": [row["buckets"].get(b) for b in buckets]}
        for row in usage["ttft"]
    ]
    context = {
        **usage,
        "form": form,
        "clamped": clamped,
        "max_days": UsageRangeForm.MAX_DAYS,
        "buckets": buckets,
        "ttft_rows": ttft_rows,
        "chart": _chart(usage, buckets),
        "query": request.GET.urlencode(),
        "nav": "usage",
    }
    return render(request, "dashboard/usage.html", context)


SUM_COLUMNS = [
    "calls",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "cost_usd",
    "saved_vs_list_usd",
    "saved_vs_cheapest_input_route_usd",
]


def _sum_cells(row: dict) -> list:
    savings = row["savings"]
    return [
        row["calls"],
        row["prompt"],
        row["cached"],
        row["completion"],
        decimal_str(row["cost"]),
        "" if savings.vs_list is None else decimal_str(savings.vs_list),
        "" if savings.vs_cheapest is None else decimal_str(savings.vs_cheapest),
    ]


def _export_rows(usage: dict, by: str) -> tuple[list[str], list[list]]:
    if by == "day":
        rows = [[r["day"].isoformat(), *_sum_cells(r)] for r in usage["per_day"]]
        return ["day_utc", *SUM_COLUMNS], rows
    if by == "provider":
        rows = [[r["provider_slug"], *_sum_cells(r)] for r in usage["per_provider"]]
        return ["provider", *SUM_COLUMNS], rows
    if by == "key":
        rows = [[r["api_key__name"] or "", *_sum_cells(r)] for r in usage["per_key"]]
        return ["api_key", *SUM_COLUMNS], rows
    if by == "model":
        rows = [[r["model_slug"], *_sum_cells(r)] for r in usage["per_model"]]
        return ["model", *SUM_COLUMNS], rows
    rows = [
        [row["provider"], bucket, cell["calls"], cell["median_ms"], cell["p90_ms"]]
        for row in usage["ttft"]
        for bucket in selectors.PROMPT_BUCKETS
        if (cell := row["buckets"].get(bucket))
    ]
    return ["provider", "prompt_bucket", "calls", "ttft_p50_ms", "ttft_p90_ms"], rows


@organisation_required
def usage_csv_view(request: HttpRequest) -> HttpResponse:
    """``/usage.csv?by=day|provider|key|model|ttft`` for the page's date range."""
    by = request.GET.get("by", "day")
    form = UsageRangeForm(request.GET)
    if by not in EXPORTS or (request.GET and not form.is_valid()):
        return HttpResponse(
            f"Invalid export: 'by' is one of {', '.join(EXPORTS)}; dates are YYYY-MM-DD.\n",
            status=400,
            content_type="text/plain",
        )
    usage = _usage(request, form)
    header, rows = _export_rows(usage, by)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    name = f"usage-by-{by}-{usage['date_from']:%Y%m%d}-{usage['date_to']:%Y%m%d}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["Cache-Control"] = "no-store"
    return response
