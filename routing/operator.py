"""The operator's overview (``/operator/``, and ``/`` for staff without an
organisation): every endpoint's health (routing's selectors), the catalog and every
organisation's spend, on one page, with links into the admin for the details. Routed
from uberllm/urls.py: routing stands above billing, so billing's ``/`` redirects here
by URL name instead of importing it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from billing import selectors
from billing.views.common import forbidden

from .health import HEALTH_WINDOW, health_overview


def _catalog(overview: list[dict]) -> list[dict]:
    """The models with their endpoints (provider and prices), from the overview rows."""
    models: dict[str, dict] = {}
    for row in overview:
        endpoint = row["endpoint"]
        entry = models.setdefault(endpoint.model.slug, {"model": endpoint.model, "endpoints": []})
        entry["endpoints"].append(endpoint)
    return list(models.values())


@login_required
def operator_overview_view(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        return forbidden(request, "The operator overview is for staff.")
    overview = health_overview()
    context = {
        "overview": overview,
        "buckets": selectors.PROMPT_BUCKETS,
        "window_hours": int(HEALTH_WINDOW.total_seconds() // 3600),
        "catalog": _catalog(overview),
        "organisations": selectors.unscoped_organisation_spend().order_by("-spend_month", "slug"),
        "nav": "operator",
    }
    return render(request, "dashboard/operator.html", context)
