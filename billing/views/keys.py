"""API keys: list with spend and every setting, create (post/redirect/get: the secret is
shown once, after the redirect), edit every setting, revoke; the organisation's limits,
alert webhook and key policy; this month's spend alerts.

Who may do what (docs/dashboard.md "API keys"): owners and admins create, edit and
revoke keys; members create keys when the organisation allows it; only owners set the
organisation's limits and policy."""

from __future__ import annotations

import time

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from .. import selectors, services
from ..forms import (
    ApiKeyCreateForm,
    ApiKeySettingsForm,
    BodyLoggingForm,
    MonthlyLimitForm,
    OrganisationLimitsForm,
)
from .common import forbidden, key_manager_post, organisation_required, owner_post

ONLY_OWNERS = "Only the organisation's owners set its limits and who may create keys."
ONLY_OWNERS_BODIES = "Only the organisation's owners switch body logging on or off."
ONLY_MANAGERS = "Only the organisation's owners and admins edit and revoke API keys."
NO_CREATE = (
    "Only the organisation's owners and admins create API keys (an owner can let "
    "members create them too)."
)
NEW_KEY = "new_api_key"  # the session entry that carries the secret across the redirect
NEW_KEY_MAX_AGE_S = 300  # a secret not shown within this long is dropped unseen


def _org_form(organisation) -> OrganisationLimitsForm:
    return OrganisationLimitsForm(
        initial={
            "monthly_limit_usd": organisation.monthly_limit_usd,
            "daily_limit_usd": organisation.daily_limit_usd,
            "alert_webhook_url": organisation.alert_webhook_url,
            "members_create_keys": organisation.members_create_keys,
        }
    )


def _keys_with_forms(request: HttpRequest) -> list:
    keys = list(selectors.api_key_list(organisation_id=request.organisation.id))
    for api_key in keys:
        if request.manages_keys and not api_key.revoked_at:
            initial = ApiKeySettingsForm.initial_for(api_key)
            api_key.settings_form = ApiKeySettingsForm(initial=initial, prefix=f"k{api_key.id}")
    return keys


def _render(
    request: HttpRequest,
    *,
    form: ApiKeyCreateForm,
    status: int = 200,
    org_form: OrganisationLimitsForm | None = None,
    bodies_form: BodyLoggingForm | None = None,
) -> HttpResponse:
    organisation = request.organisation
    context = {
        "keys": _keys_with_forms(request),
        "organisation": organisation,
        "org_form": org_form or _org_form(organisation),
        "bodies_form": bodies_form or BodyLoggingForm.for_organisation(organisation),
        "alerts": selectors.spend_alerts_recent(
            organisation_id=organisation.id, since=selectors.month_start()
        ).select_related("api_key")[:20],
        "now": timezone.now(),
        "form": form,
        "new_key": _pop_new_key(request),
        "is_owner": request.is_owner,
        "manages_keys": request.manages_keys,
        "creates_keys": request.creates_keys,
        "month_start": selectors.month_start(),
        "nav": "keys",
    }
    return render(request, "dashboard/keys.html", context, status=status)


def _pop_new_key(request: HttpRequest) -> dict | None:
    """The secret of the key this member just created, once: it is deleted from the
    session as it is read (a reload shows nothing), and never shown when stale."""
    new_key = request.session.pop(NEW_KEY, None)
    if new_key and time.time() - new_key["at"] <= NEW_KEY_MAX_AGE_S:
        return new_key
    return None


def _see_other(to: str) -> HttpResponse:
    """A 303 to ``to``: the browser GETs it, and a reload re-posts nothing."""
    response = redirect(to)
    response.status_code = 303
    return response


@organisation_required
def api_keys_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _render(request, form=ApiKeyCreateForm.fresh())
    if not request.creates_keys:
        return forbidden(request, NO_CREATE)
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return _render(request, form=form, status=400)
    api_key, plaintext = services.api_key_create_once(
        organisation=request.organisation,
        name=form.cleaned_data["name"],
        creation_token=form.cleaned_data["creation_token"],
        **form.limits(),
    )
    if plaintext is None:
        message = (
            f"Key {api_key.name} was already created by this form (its secret was shown once)."
        )
        messages.info(request, message)
    else:
        # Across the redirect in the session; deleted as the next page reads it.
        request.session[NEW_KEY] = {"key": plaintext, "name": api_key.name, "at": time.time()}
    return _see_other("dashboard:keys")


@key_manager_post(ONLY_MANAGERS)
def api_key_settings_view(request: HttpRequest, key_id: int) -> HttpResponse:
    """Edit every setting of a key at once (the table row's "Edit" form)."""
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    form = ApiKeySettingsForm(
        request.POST, prefix=f"k{api_key.id}", current_expiry=api_key.expires_at
    )
    if not form.is_valid():
        for field, errors in form.errors.items():
            where = form.fields[field].label if field in form.fields else "settings"
            for error in errors:
                messages.error(request, f"Key {api_key.name}, {where}: {error}")
        return redirect("dashboard:keys")
    services.api_key_update(api_key=api_key, **form.limits())
    messages.success(request, f"Key {api_key.name}: settings saved.")
    return redirect("dashboard:keys")


def _organisation_settings_saved(
    request: HttpRequest, form: forms.Form, form_name: str, save, saved: str
) -> HttpResponse:
    """An owner's organisation settings form: the keys page again with its errors (400),
    or ``save(organisation=..., **cleaned_data)`` and back with ``saved``."""
    if not form.is_valid():
        return _render(request, form=ApiKeyCreateForm.fresh(), status=400, **{form_name: form})
    save(organisation=request.organisation, **form.cleaned_data)
    messages.success(request, saved)
    return redirect("dashboard:keys")


@owner_post(ONLY_OWNERS)
def organisation_limits_view(request: HttpRequest) -> HttpResponse:
    form = OrganisationLimitsForm(request.POST)
    return _organisation_settings_saved(
        request, form, "org_form", services.organisation_set_limits, "Organisation limits saved."
    )


@owner_post(ONLY_OWNERS_BODIES)
def organisation_body_logging_view(request: HttpRequest) -> HttpResponse:
    """Switch keeping the calls' request and reply bodies on or off, and its retention."""
    form = BodyLoggingForm(request.POST)
    state = "on" if form.is_valid() and form.cleaned_data["log_bodies"] else "off"
    return _organisation_settings_saved(
        request,
        form,
        "bodies_form",
        services.organisation_set_body_logging,
        f"Body logging {state}.",
    )


@key_manager_post(ONLY_MANAGERS)
def api_key_revoke_view(request: HttpRequest, key_id: int) -> HttpResponse:
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    services.api_key_revoke(api_key=api_key)
    messages.success(request, f"Key {api_key.name} revoked.")
    return redirect("dashboard:keys")


@key_manager_post(ONLY_MANAGERS)
def api_key_limit_view(request: HttpRequest, key_id: int) -> HttpResponse:
    """The monthly limit alone (kept for scripts and older pages; the row's "Edit" form
    sets every setting)."""
    api_key = selectors.api_key_get(organisation_id=request.organisation.id, key_id=key_id)
    form = MonthlyLimitForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"Key {api_key.name}: {error}")
        return redirect("dashboard:keys")
    limit = form.cleaned_data["monthly_limit_usd"]
    services.api_key_update(api_key=api_key, monthly_limit_usd=limit)
    if limit is None:
        messages.success(request, f"Key {api_key.name}: no monthly limit.")
    else:
        messages.success(request, f"Key {api_key.name}: monthly limit ${limit:.2f}.")
    return redirect("dashboard:keys")
