"""Celery tasks of billing: thin, they call services."""

from __future__ import annotations

from celery import shared_task

from billing.config import billing_config

from .alerts import SPEND_ALERT_DELIVER_TASK, spend_alert_deliver
from .ledger import activity_reconcile
from .models import SpendAlert
from .retention import activity_archive_expired
from .rollups import rollup_refresh
from .services import call_bodies_purge


@shared_task(name="billing.activity_reconcile")
def activity_reconcile_task() -> int:
    """Close Activity rows left pending by a crashed process (idempotent)."""

    return activity_reconcile(older_than_s=billing_config().reconcile_after_s)


@shared_task(name=SPEND_ALERT_DELIVER_TASK)
def spend_alert_deliver_task(alert_id: int) -> bool:
    """Email and webhook of one spend alert (billing.alerts.spend_alert_deliver)."""

    alert = (
        SpendAlert.unscoped_objects.select_related("organisation", "api_key")
        .filter(id=alert_id)
        .first()
    )
    return alert is not None and spend_alert_deliver(alert=alert)


@shared_task(name="billing.spend_alerts_deliver")
def spend_alerts_deliver_task() -> int:
    """Retry the alerts of the last two days not delivered yet (email or webhook down)."""
    from datetime import timedelta

    from django.utils import timezone

    since = timezone.now() - timedelta(days=2)
    pending = SpendAlert.unscoped_objects.select_related("organisation", "api_key").filter(
        delivered_at=None, created_at__gte=since
    )
    return sum(spend_alert_deliver(alert=alert) for alert in pending[:100])


@shared_task(name="billing.usage_rollup")
def usage_rollup_task() -> int:
    """Roll every finished UTC day not rolled yet into the usage rollups (idempotent;
    at most 31 days a run, so a first run on a large ledger is spread over hours)."""

    return len(rollup_refresh(max_days=31))


@shared_task(name="billing.activity_archive")
def activity_archive_task() -> int:
    """Archive then delete Activity rows past ``ACTIVITY_RETENTION_DAYS`` (0: none), at
    most ~1 M rows a run (billing.retention); returns the rows deleted."""

    return activity_archive_expired(max_rows=1_000_000).deleted


@shared_task(name="billing.call_bodies_purge")
def call_bodies_purge_task() -> int:
    """Delete kept request/reply bodies past their organisation's retention."""

    return call_bodies_purge()
