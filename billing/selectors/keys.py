"""One organisation's API keys."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from providers.models import Model

from ..models import ApiKey
from .common import first_or_404, month_start
from .spend import spend_annotations


def api_key_list(*, organisation_id: int, now: datetime | None = None) -> QuerySet:
    """The organisation's keys with ``spend_month`` (this calendar month, UTC),
    ``spend_total`` and ``calls_total`` (from the daily rollups and the recent rows)."""
    annotations = spend_annotations("api_key_id", since=month_start(now))
    return ApiKey.objects.for_organisation(organisation_id).annotate(**annotations)


def api_key_choices(*, organisation_id: int) -> QuerySet:
    return ApiKey.objects.for_organisation(organisation_id).order_by("name", "id")


def api_key_get(*, organisation_id: int, key_id: int) -> ApiKey:
    api_keys = ApiKey.objects.for_organisation(organisation_id)
    return first_or_404(api_keys.filter(id=key_id), "No such key.")


def api_key_names(*, organisation_id: int, ids: list[int]) -> dict[int, str]:
    """The names of the organisation's keys among ``ids``."""
    keys = ApiKey.objects.for_organisation(organisation_id).filter(id__in=ids)
    return dict(keys.values_list("id", "name"))


def catalog_model_slugs() -> list[str]:
    """Every model slug of the catalog (what a key's allowed models may name)."""
    return list(Model.objects.order_by("slug").values_list("slug", flat=True))
