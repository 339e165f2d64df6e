"""Spend alerts (writes): a limit reached 80 % or 100 % of its period is recorded once
(``spend_alert_raise``, called by billing.limits from the request path through a
thread) and delivered by email and webhook from Celery (``spend_alert_deliver``)."""

from __future__ import annotations

import logging

import httpx
from celery import current_app
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.utils import timezone

from .models import Membership, SpendAlert
from .money import money

logger = logging.getLogger(__name__)

SPEND_ALERT_DELIVER_TASK = "billing.spend_alert_deliver"


def spend_alert_raise(
    *,
    organisation_id: int,
    api_key_id: int | None,
    scope: str,
    period: str,
    period_start,
    threshold: int,
    limit_usd,
    spent_usd,
) -> SpendAlert | None:
    """Record that a limit reached ``threshold`` percent in this period: once (the
    unique constraint); the new alert is delivered by a Celery task after commit.
    Returns the new alert, or None if it was raised already."""
    try:
        with transaction.atomic():
            alert = SpendAlert.objects.create(
                organisation_id=organisation_id,
                api_key_id=api_key_id,
                scope=scope,
                period=period,
                period_start=period_start,
                threshold=threshold,
                limit_usd=limit_usd,
                spent_usd=spent_usd,
            )
    except IntegrityError:
        return None
    transaction.on_commit(lambda: _enqueue_alert(alert.id))
    return alert


def _enqueue_alert(alert_id: int) -> None:
    # By name: billing.tasks imports this module, so importing the task here would be a
    # loop; the name is the contract (tasks.py registers its task under it).
    try:
        current_app.send_task(SPEND_ALERT_DELIVER_TASK, args=[alert_id])
    except Exception:  # the broker is away: beat's spend_alerts_deliver retries it
        logger.warning("spend alert %s not queued", alert_id)


def spend_alert_text(alert: SpendAlert) -> str:
    what = f"API key {alert.api_key.name}" if alert.api_key_id else "The organisation"
    period, kind = ("this month", "monthly") if alert.period == "month" else ("today", "daily")
    verb = "has reached" if alert.threshold >= 100 else f"has used {alert.threshold}% of"
    return (
        f"{what} {verb} its {kind} spend limit of {money(alert.limit_usd)} "
        f"{period} (UTC): {money(alert.spent_usd)} spent."
    )


WEBHOOK_TIMEOUT_S = 5.0


def spend_alert_deliver(*, alert: SpendAlert) -> bool:
    """Send the alert: an email to every owner with an address (Django's email backend)
    and a JSON POST to the organisation's webhook URL, if set. Marks it delivered (True)
    or records the error for the next try (False). Runs in Celery, never on a request."""
    if alert.delivered_at is not None:
        return True
    organisation = alert.organisation
    text = spend_alert_text(alert)
    owners = [
        m.user.email
        for m in organisation.memberships.select_related("user")
        if m.role == Membership.Role.OWNER and m.user.email
    ]
    errors = []
    if owners:
        try:
            send_mail(
                subject=f"UberLLM spend alert: {alert.threshold}% of a limit",
                message=text + "\n",
                from_email=None,
                recipient_list=owners,
            )
        except Exception as exc:
            errors.append(f"email: {exc.__class__.__name__}")
    if organisation.alert_webhook_url:
        payload = {
            "type": "spend_alert",
            "organisation": organisation.slug,
            "scope": "api_key" if alert.api_key_id else "organisation",
            "api_key": alert.api_key.name if alert.api_key_id else None,
            "period": alert.period,
            "period_start": alert.period_start.isoformat(),
            "threshold_percent": alert.threshold,
            "limit_usd": str(alert.limit_usd),
            "spent_usd": str(alert.spent_usd),
            "message": text,
        }
        try:
            response = httpx.post(
                organisation.alert_webhook_url,
                json=payload,
                timeout=WEBHOOK_TIMEOUT_S,
                follow_redirects=False,
            )
            if response.status_code >= 300:
                errors.append(f"webhook: HTTP {response.status_code}")
        except httpx.HTTPError as exc:
            errors.append(f"webhook: {exc.__class__.__name__}")
    if errors:
        alert.delivery_error = "; ".join(errors)[:2000]
        alert.save(update_fields=["delivery_error"])
        return False
    alert.delivered_at = timezone.now()
    alert.delivery_error = ""
    alert.save(update_fields=["delivered_at", "delivery_error"])
    return True
