"""API keys: list with spend, create (shown once, with its limits), revoke, monthly
spend limit; the organisation's limits and alert webhook; this month's spend alerts."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from .. import selectors, services
from ..forms import ApiKeyCreateForm, MonthlyLimitForm, OrganisationLimitsForm
from .common import forbidden, organisation_required, owner_required

ONLY_OWNERS = "Only the organisation's owners manage API keys."


def _render(request: HttpRequest, *, form: ApiKeyCreateForm, new_key: str | None = None,
            status: int = 200, org_form: OrganisationLimitsForm | None = None,
            ) -> HttpResponse:  # fmt: skip
    organisation = request.organisation
    org_form = org_form or OrganisationLimitsForm(initial={
        "monthly_limit_usd": organisation.monthly_limit_usd,
        "daily_limit_usd": organisation.daily_limit_usd,
        "alert_webhook_url": organisation.alert_webhook_url,
    })  # fmt: skip
    context = {
        "keys": selectors.api_key_list(organisation_id=organisation.id),
        "organisation": organisation,
        "org_form": org_form,
        "alerts": selectors.spend_alerts_recent(
            organisation_id=organisation.id, since=selectors.month_start()
        ).select_related("api_key")[:20],
        "now": timezone.now(),
        "form": form,
        "new_key": new_key,
        "is_owner": request.is_owner,
        "month_start": selectors.month_start(),
        "nav": "keys",
    }
    return render(request, "dashboard/keys.html", context, status=status)


@organisation_required
def api_keys_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _render(request, form=ApiKeyCreateForm())
    if not request.is_owner:
        return forbidden(request, ONLY_OWNERS)
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return _render(request, form=form, status=400)
    # Rendered in this response only (not redirected): the plaintext never reaches
    # the session store or the database.
    _, new_key = services.api_key_create(
        organisation=request.organisation, name=form.cleaned_data["name"], **form.limits()
    )
    return _render(request, form=ApiKeyCreateForm(), new_key=new_key)


@require_POST
@organisation_required
@owner_required(ONLY_OWNERS)
def organisation_limits_view(request: HttpRequest) -> HttpResponse:
    form = OrganisationLimitsForm(request.POST)
    if not form.is_valid():
        return _render(request, form=ApiKeyCreateForm(), org_form=form, status=400)
    data = form.cleaned_data
    services.organisation_set_limits(
        organisation=request.organisation, monthly_limit_usd=data["monthly_limit_usd"],
        daily_limit_usd=data["daily_limit_usd"], alert_webhook_url=data["alert_webhook_url"],
    )  # fmt: skip
    messages.success(request, "Organisation limits saved.")
    return redirect("dashboard:keys")


@require_POST
@organisation_required
@owner_required(ONLY_OWNERS)
def api_key_revoke_view(request: HttpRequest, key_id: int) -> HttpResponse:
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    services.api_key_revoke(api_key=api_key)
    messages.success(request, f"Key {api_key.name} revoked.")
    return redirect("dashboard:keys")


@require_POST
@organisation_required
@owner_required(ONLY_OWNERS)
def api_key_limit_view(request: HttpRequest, key_id: int) -> HttpResponse:
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    form = MonthlyLimitForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"Key {api_key.name}: {error}")
        return redirect("dashboard:keys")
    limit = form.cleaned_data["monthly_limit_usd"]
    services.api_key_set_monthly_limit(api_key=api_key, limit_usd=limit)
    if limit is None:
        messages.success(request, f"Key {api_key.name}: no monthly limit.")
    else:
        messages.success(request, f"Key {api_key.name}: monthly limit ${limit:.2f}.")
    return redirect("dashboard:keys")
