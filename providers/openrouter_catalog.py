"""Seed the catalog from OpenRouter's public JSON: ``GET /api/v1/models`` (``data[]``:
``id``, ``name``, ``context_length``, per-token ``pricing`` strings) and, optionally,
``GET /api/v1/models/{author}/{slug}/endpoints`` (``data.endpoints[]``: ``provider_name``,
``pricing``, ``context_length``, ``max_completion_tokens``).

Prices become USD per 1M tokens (per-token x 10^6, Decimal-exact). A new endpoint has no
base URL: it is created disabled, for the operator to set its URL and credential in the
admin; an existing endpoint keeps its URL, credential and switch (only prices and limits
change). A model OpenRouter prices as variable (negative, e.g. ``openrouter/auto``) is
skipped.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from .models import Endpoint, Model, Provider

MILLION = Decimal(1_000_000)
MODEL_PRICES = {
    "list_price_input": "prompt",
    "list_price_cache_read": "input_cache_read",
    "list_price_output": "completion",
}
ENDPOINT_PRICES = {
    "price_input": "prompt",
    "price_cache_read": "input_cache_read",
    "price_cache_write": "input_cache_write",
    "price_output": "completion",
}


def is_models_list(data: Any) -> bool:
    """OpenRouter's ``/models`` shape: ``{"data": [{"id", "pricing", ...}]}``."""
    items = data.get("data") if isinstance(data, dict) else None
    return isinstance(items, list) and all(isinstance(i, dict) and "pricing" in i for i in items)


def is_endpoints(data: Any) -> bool:
    """OpenRouter's ``/models/{author}/{slug}/endpoints`` shape."""
    inner = data.get("data") if isinstance(data, dict) else None
    return isinstance(inner, dict) and isinstance(inner.get("endpoints"), list)


def per_million(per_token: Any) -> Decimal:
    """A per-token price string as USD per 1M tokens, exact (``"0.00000028"`` -> 0.28)."""
    value = Decimal(str(per_token or "0")) * MILLION
    value = value.normalize()  # 0.2800000 -> 0.28 (the field has 6 decimal places)
    exponent = value.as_tuple().exponent
    return value.quantize(Decimal(1)) if isinstance(exponent, int) and exponent > 0 else value


def _prices(pricing: dict[str, Any], names: dict[str, str]) -> dict[str, Decimal]:
    return {field: per_million(pricing.get(key)) for field, key in names.items()}


def _variable(pricing: dict[str, Any]) -> bool:
    return any(Decimal(str(v or "0")) < 0 for v in pricing.values() if isinstance(v, str | int))


def _save_model(item: dict[str, Any]) -> Model:
    model = Model.objects.filter(slug=item["id"]).first() or Model(slug=item["id"])
    model.name = item.get("name") or item["id"]
    model.description = item.get("description") or model.description
    model.context_length = item.get("context_length") or model.context_length
    for field, value in _prices(item["pricing"], MODEL_PRICES).items():
        setattr(model, field, value)
    model.full_clean()
    model.save()
    return model


def _provider(name: str) -> Provider:
    provider, _ = Provider.objects.get_or_create(slug=slugify(name), defaults={"name": name})
    return provider


def _save_endpoint(model: Model, entry: dict[str, Any]) -> Endpoint:
    provider = _provider(entry["provider_name"])
    endpoint = Endpoint.objects.filter(provider=provider, model=model).first()
    if endpoint is None:  # no base URL yet: off until the operator sets one
        endpoint = Endpoint(provider=provider, model=model, base_url="", enabled=False)
    endpoint.context_length = entry.get("context_length") or model.context_length
    endpoint.max_output_tokens = entry.get("max_completion_tokens") or endpoint.max_output_tokens
    for field, value in _prices(entry.get("pricing") or {}, ENDPOINT_PRICES).items():
        setattr(endpoint, field, value)
    endpoint.full_clean(exclude=["base_url"] if not endpoint.base_url else None)
    endpoint.save()
    return endpoint


@transaction.atomic
def import_openrouter(models: dict[str, Any], endpoints: list[dict[str, Any]]) -> dict[str, int]:
    """Create or update models from a ``/models`` list and endpoints from
    ``/endpoints`` answers (each for a model of the list, or one already in the catalog)."""
    counts = {"models": 0, "skipped": 0, "endpoints": 0}
    for item in models.get("data", []):
        if _variable(item["pricing"]):
            counts["skipped"] += 1
            continue
        _save_model(item)
        counts["models"] += 1
    for answer in endpoints:
        model = Model.objects.get(slug=answer["data"]["id"])
        for entry in answer["data"]["endpoints"]:
            _save_endpoint(model, entry)
            counts["endpoints"] += 1
    return counts
