"""Usage: spend per day and per model, and TTFT by prompt size per provider."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import selectors
from ..forms import UsageRangeForm
from .common import organisation_required

DEFAULT_DAYS = 30


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


@organisation_required
def usage_view(request: HttpRequest) -> HttpResponse:
    form = UsageRangeForm(request.GET)
    date_from, date_to = _date_range(form)
    requested_from = form.cleaned_data.get("date_from") if form.is_valid() else None
    clamped = requested_from is not None and requested_from < date_from
    if not request.GET:  # show the default range in the inputs
        form = UsageRangeForm(initial={"date_from": date_from, "date_to": date_to})
    queryset = selectors.activity_list(
        organisation_id=request.organisation.id,
        filters=selectors.ActivityFilters(date_from=date_from, date_to=date_to),
    )
    per_day = selectors.usage_per_day(queryset, date_from=date_from, date_to=date_to)
    per_model = selectors.usage_per_model(queryset)
    ttft = selectors.ttft_by_bucket(queryset)
    buckets = selectors.PROMPT_BUCKETS
    chart = {
        "days": [row["day"].isoformat() for row in per_day],
        "dailyCost": [float(row["cost"]) for row in per_day],
        "dailyCalls": [row["calls"] for row in per_day],
        "models": [row["model_slug"] for row in per_model],
        "modelCost": [float(row["cost"]) for row in per_model],
        "buckets": list(buckets),
        "ttft": [
            {
                "provider": row["provider"],
                "medians": [row["buckets"].get(b, {}).get("median_ms") for b in buckets],
            }
            for row in ttft
        ],
    }
    ttft_rows = [
        {"provider": row["provider"], "cells": [row["buckets"].get(b) for b in buckets]}
        for row in ttft
    ]
    context = {
        "form": form,
        "date_from": date_from,
        "date_to": date_to,
        "clamped": clamped,
        "max_days": UsageRangeForm.MAX_DAYS,
        "totals": selectors.activity_totals(queryset),
        "per_day": per_day,
        "per_model": per_model,
        "buckets": buckets,
        "ttft_rows": ttft_rows,
        "chart": chart,
        "nav": "usage",
    }
    return render(request, "dashboard/usage.html", context)
