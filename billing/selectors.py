"""Reads for the dashboard and the API. Tenancy is enforced here, in one place:
every queryset of tenant data starts from ``for_organisation``.
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, QuerySet, Sum
from django.http import Http404

from .models import Activity, ApiKey, Membership, Organisation

TENANT_MODELS = {Activity: "organisation_id", ApiKey: "organisation_id",
                 Membership: "organisation_id"}  # fmt: skip


def for_organisation(model, organisation_id: int) -> QuerySet:
    """The only way to query tenant data: scoped to one organisation, fail closed."""
    if not organisation_id:
        return model.objects.none()
    return model.objects.filter(**{TENANT_MODELS[model]: organisation_id})


def organisation_for_user(user) -> Organisation | None:
    membership = Membership.objects.filter(user=user).select_related("organisation").first()
    return membership.organisation if membership else None


def membership_for_user(user) -> Membership | None:
    return Membership.objects.filter(user=user).select_related("organisation").first()


def activity_list(*, organisation_id: int) -> QuerySet:
    return for_organisation(Activity, organisation_id).select_related("api_key")


def activity_get(*, organisation_id: int, request_id: str) -> Activity:
    activity = (
        for_organisation(Activity, organisation_id)
        .prefetch_related("attempts")
        .filter(request_id=request_id)
        .first()
    )
    if activity is None:
        raise Http404("No such generation.")
    return activity


def activity_totals(queryset: QuerySet) -> dict:
    totals = queryset.aggregate(
        calls=Count("id"),
        cost=Sum("cost_usd"),
        prompt=Sum("prompt_tokens"),
        cached=Sum("cached_tokens"),
        completion=Sum("completion_tokens"),
    )
    totals["cost"] = totals["cost"] or Decimal(0)
    return totals


def api_key_list(*, organisation_id: int) -> QuerySet:
    return for_organisation(ApiKey, organisation_id)


def api_key_get(*, organisation_id: int, key_id: int) -> ApiKey:
    api_key = for_organisation(ApiKey, organisation_id).filter(id=key_id).first()
    if api_key is None:
        raise Http404("No such key.")
    return api_key
