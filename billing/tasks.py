"""Celery tasks of billing: thin, they call services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="billing.activity_reconcile")
def activity_reconcile_task() -> int:
    """Close Activity rows left pending by a crashed process (idempotent)."""
    from django.conf import settings

    from .ledger import activity_reconcile

    return activity_reconcile(older_than_s=settings.UBERLLM["RECONCILE_AFTER_S"])


@shared_task(name="billing.usage_rollup")
def usage_rollup_task() -> int:
    """Roll every finished UTC day not rolled yet into the usage rollups (idempotent;
    at most 31 days a run, so a first run on a large ledger is spread over hours)."""
    from .rollups import rollup_refresh

    return len(rollup_refresh(max_days=31))
