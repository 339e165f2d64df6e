"""Catalog edits are pushed to every gateway process: a saved or deleted provider, model,
endpoint or model alias publishes ``catalog.changed`` after commit (common/events.py)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from common.events import CATALOG_CHANGED, publish_on_commit

from .models import Endpoint, Model, ModelAlias, Provider


def _on_catalog_row_changed(sender: type, instance: Any, **_kwargs: Any) -> None:
    publish_on_commit(CATALOG_CHANGED, {"reason": f"{sender.__name__} {instance.pk}"})


def connect_catalog_changed() -> None:
    """Wire the row signals (from ProvidersConfig.ready)."""
    for model in (Provider, Model, ModelAlias, Endpoint):
        for name, signal in (("save", post_save), ("delete", post_delete)):
            signal.connect(
                _on_catalog_row_changed,
                sender=model,
                dispatch_uid=f"common.events.{model.__name__}.{name}",
            )
