"""The public model pages (HTML, no login): ``/models/`` lists the models a customer can
call, ``/models/<author>/<name>`` (the model's slug) shows one with each provider's
prices, TTFT by prompt size and uptime (``routing.model_page``). Nothing of any
organisation is read."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from billing.selectors import PROMPT_BUCKETS

from .model_page import public_model_list, public_model_page


@require_safe
def public_models_view(request: HttpRequest) -> HttpResponse:
    context = {"models": public_model_list(), "nav": "models"}
    return render(request, "models/list.html", context)


@require_safe
def public_model_view(request: HttpRequest, slug: str) -> HttpResponse:
    page = public_model_page(slug)
    if page is None:
        raise Http404("No such model.")
    context = {"page": page, "buckets": PROMPT_BUCKETS, "nav": "models"}
    return render(request, "models/model.html", context)
