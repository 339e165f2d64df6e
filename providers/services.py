"""Catalog writes: import and export of the whole catalog as JSON."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from .credentials import rotate, seal
from .models import Endpoint, Model, ModelAlias, Provider

MODEL_FIELDS = (
    "name",
    "description",
    "context_length",
    "list_price_input",
    "list_price_cache_read",
    "list_price_output",
)
ENDPOINT_FIELDS = (
    "base_url",
    "protocol",
    "usage_dialect",
    "upstream_model",
    "credential_env",
    "context_length",
    "max_output_tokens",
    "supported_parameters",
    "price_input",
    "price_cache_read",
    "price_cache_write",
    "price_output",
    "cache_ttl_s",
    "collects_data",
    "zdr",
    "enabled",
)
PRICE_FIELDS = {f for f in MODEL_FIELDS + ENDPOINT_FIELDS if "price" in f}


def _clean(fields: tuple[str, ...], data: dict[str, Any]) -> dict[str, Any]:
    values = {k: data[k] for k in fields if k in data}
    for key in PRICE_FIELDS & values.keys():
        values[key] = Decimal(str(values[key]))
    return values


def _save(instance):
    instance.full_clean()
    instance.save()
    return instance


@transaction.atomic
def catalog_import(*, data: dict[str, Any], base_url_override: str | None = None) -> dict[str, int]:
    """Create or update providers, models and endpoints from ``data`` (see export format).

    ``base_url_override`` replaces ``{emulator}`` in endpoint URLs (the demo uses it).
    """
    counts = {"providers": 0, "models": 0, "aliases": 0, "endpoints": 0}
    providers = {}
    for item in data.get("providers", []):
        provider, _ = Provider.objects.get_or_create(slug=item["slug"])
        provider.name = item.get("name", item["slug"])
        provider.enabled = item.get("enabled", True)
        providers[provider.slug] = _save(provider)
        counts["providers"] += 1
    for item in data.get("models", []):
        model = Model.objects.filter(slug=item["slug"]).first() or Model(slug=item["slug"])
        for key, value in _clean(MODEL_FIELDS, item).items():
            setattr(model, key, value)
        model.name = model.name or item["slug"]
        _save(model)
        counts["models"] += 1
        if "aliases" in item:
            counts["aliases"] += _set_aliases(model, item["aliases"])
        for ep in item.get("endpoints", []):
            provider = providers.get(ep["provider"]) or Provider.objects.get(slug=ep["provider"])
            endpoint = Endpoint.objects.filter(provider=provider, model=model).first()
            endpoint = endpoint or Endpoint(provider=provider, model=model)
            for key, value in _clean(ENDPOINT_FIELDS, ep).items():
                setattr(endpoint, key, value)
            if base_url_override:
                endpoint.base_url = endpoint.base_url.replace("{emulator}", base_url_override)
            _save(endpoint)
            counts["endpoints"] += 1
    return counts


def _set_aliases(model: Model, names: Any) -> int:
    """Make ``names`` the model's aliases: an alias another model had moves here, the
    model's other aliases go. Each is validated (ValidationError: the import is undone)."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValidationError({"aliases": f"{model.slug}: 'aliases' must be a list of names."})
    model.aliases.exclude(name__in=names).delete()
    for name in dict.fromkeys(names):
        alias = ModelAlias.objects.filter(name=name).first() or ModelAlias(name=name)
        alias.model = model
        _save(alias)
    return len(set(names))


def _plain(value):
    return str(value) if isinstance(value, Decimal) else value


def catalog_export() -> dict[str, Any]:
    """The whole catalog as JSON-ready data. Credentials are never exported: only
    ``credential_env`` names; a stored credential is entered again after an import."""
    providers = [
        {"slug": p.slug, "name": p.name, "enabled": p.enabled} for p in Provider.objects.all()
    ]
    models = []
    for model in Model.objects.prefetch_related("endpoints__provider", "aliases"):
        item = {"slug": model.slug, **{f: _plain(getattr(model, f)) for f in MODEL_FIELDS}}
        item["aliases"] = [alias.name for alias in model.aliases.all()]
        item["endpoints"] = [
            {"provider": ep.provider.slug, **{f: _plain(getattr(ep, f)) for f in ENDPOINT_FIELDS}}
            for ep in model.endpoints.all()
        ]
        models.append(item)
    return {"providers": providers, "models": models}


def endpoint_set_credential(*, endpoint: Endpoint, secret: str | None) -> Endpoint:
    """Store ``secret`` encrypted and bound to the endpoint's current base URL origin
    (None or "" removes the stored credential)."""
    endpoint.credential_encrypted = (
        seal(secret=secret, base_url=endpoint.base_url) if secret else ""
    )
    endpoint.save(update_fields=["credential_encrypted"])
    return endpoint


def credentials_rotate() -> int:
    """Re-encrypt every stored credential with the first key; returns how many."""
    rotated = 0
    for endpoint in Endpoint.objects.exclude(credential_encrypted=""):
        token = rotate(endpoint.credential_encrypted)
        Endpoint.objects.filter(pk=endpoint.pk).update(credential_encrypted=token)
        rotated += 1
    return rotated
