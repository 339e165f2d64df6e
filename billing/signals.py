"""Signals of billing.

Price history: every save of an Endpoint or a Model that changes a price writes
PriceChange rows (admin, import_catalog, shell alike). The admin sets
``instance._price_changed_by`` to the operator's username.

API keys: an ``api_key.changed`` event (revoked, limits edited; common/events.py) drops
the key from this process's caches, whichever process published it."""

from __future__ import annotations

from decimal import Decimal

from django.db.models.signals import post_save, pre_save

from common import events
from providers.models import Endpoint, Model

from .auth import forget_cached_key
from .limits import forget_key_spend
from .services import price_changes_record

ENDPOINT_PRICES = ("price_input", "price_cache_read", "price_cache_write", "price_output")
MODEL_PRICES = ("list_price_input", "list_price_cache_read", "list_price_output")


def _fields(sender) -> tuple[str, ...]:
    return ENDPOINT_PRICES if sender.__name__ == "Endpoint" else MODEL_PRICES


def _as_decimal(value):
    return None if value is None else Decimal(str(value))


def remember_old_prices(sender, instance, **kwargs) -> None:
    fields = _fields(sender)
    old = {}
    if instance.pk:
        row = sender.objects.filter(pk=instance.pk).values(*fields).first()
        old = row or {}
    instance._old_prices = {name: _as_decimal(value) for name, value in old.items()}


def record_price_changes(sender, instance, created, raw=False, **kwargs) -> None:
    if raw:  # fixtures load history as is
        return

    fields = _fields(sender)
    for name in fields:  # compare Decimals, whatever type the caller assigned
        setattr(instance, name, _as_decimal(getattr(instance, name)))
    price_changes_record(
        instance=instance,
        fields=fields,
        old={} if created else getattr(instance, "_old_prices", {}),
        changed_by=getattr(instance, "_price_changed_by", ""),
    )


def forget_api_key(payload: dict) -> None:
    """Drop a changed key's cached row and cached spend (only caches: idempotent)."""

    if payload.get("prefix"):
        forget_cached_key(payload["prefix"])
    if payload.get("api_key_id") is not None:
        forget_key_spend(int(payload["api_key_id"]))


def connect() -> None:

    events.register(events.API_KEY_CHANGED, forget_api_key)
    for model in (Endpoint, Model):
        pre_save.connect(remember_old_prices, sender=model, dispatch_uid=f"prices-old-{model}")
        post_save.connect(record_price_changes, sender=model, dispatch_uid=f"prices-{model}")
