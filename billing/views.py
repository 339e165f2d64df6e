"""Dashboard pages (server-rendered). Thin: resolve the organisation, call selectors
and services. Every page is scoped to the logged-in member's organisation."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from . import selectors, services
from .models import Membership


def organisation_required(view):
    """Log-in required; sets ``request.organisation`` and ``request.membership``."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        membership = selectors.membership_for_user(request.user)
        if membership is None:
            return render(request, "dashboard/no_organisation.html", status=403)
        request.membership = membership
        request.organisation = membership.organisation
        return view(request, *args, **kwargs)

    return wrapper


@organisation_required
def activity_list_view(request: HttpRequest) -> HttpResponse:
    queryset = selectors.activity_list(organisation_id=request.organisation.id)
    page = Paginator(queryset, 50).get_page(request.GET.get("page"))
    context = {"page": page, "totals": selectors.activity_totals(queryset), "nav": "activity"}
    return render(request, "dashboard/activity.html", context)


@organisation_required
def activity_detail_view(request: HttpRequest, request_id: str) -> HttpResponse:
    activity = selectors.activity_get(
        organisation_id=request.organisation.id, request_id=request_id
    )
    return render(request, "dashboard/activity_detail.html", {"activity": activity})


@organisation_required
def api_keys_view(request: HttpRequest) -> HttpResponse:
    is_owner = request.membership.role == Membership.Role.OWNER
    new_key = None
    if request.method == "POST":
        if not is_owner:
            return HttpResponse("Only owners manage keys.", status=403)
        name = (request.POST.get("name") or "").strip()[:128] or "key"
        _, new_key = services.api_key_create(organisation=request.organisation, name=name)
    keys = selectors.api_key_list(organisation_id=request.organisation.id)
    context = {"keys": keys, "new_key": new_key, "is_owner": is_owner, "nav": "keys"}
    return render(request, "dashboard/keys.html", context)


@require_POST
@organisation_required
def api_key_revoke_view(request: HttpRequest, key_id: int) -> HttpResponse:
    if request.membership.role != Membership.Role.OWNER:
        return HttpResponse("Only owners manage keys.", status=403)
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    services.api_key_revoke(api_key=api_key)
    messages.success(request, f"Key {api_key.name} revoked.")
    return redirect("dashboard:keys")
