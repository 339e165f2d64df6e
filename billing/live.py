"""Live Activity updates: the ledger tells the organisation's open dashboards through
the channel layer (billing/consumers.py forwards to the browser)."""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def activity_group(organisation_id: int) -> str:
    """The channel-layer group of one organisation's dashboards."""
    return f"activity.org.{organisation_id}"


def notify_activity(organisation_id: int, payload: dict) -> None:
    """Send ``payload`` to every dashboard of the organisation. Best effort: a channel
    layer failure is logged, never raised into the ledger."""
    layer = get_channel_layer()
    if layer is None or not organisation_id:
        return
    try:
        async_to_sync(layer.group_send)(
            activity_group(organisation_id), {"type": "activity.update", "payload": payload}
        )
    except Exception:  # the dashboard falls back to periodic refresh
        logger.warning("live activity notification failed", exc_info=True)


def activity_payload(activity) -> dict:
    return {
        "event": "activity",
        "request_id": activity.request_id,
        "status": activity.status,
        "model": activity.model_slug,
        "provider": activity.provider_slug,
    }


def activity_changed(activity) -> None:
    """Notify once the current transaction commits (the page then reads the new row)."""
    payload = activity_payload(activity)
    organisation_id = activity.organisation_id
    transaction.on_commit(lambda: notify_activity(organisation_id, payload))


def activity_opened(*, organisation_id: int, request_id: str, model_slug: str) -> None:
    """For the gateway after ``activity_open`` (a call, e.g. a stream, is in progress):
    the organisation's Activity pages show the pending row at once."""
    payload = {"event": "activity", "request_id": request_id, "status": "pending",
               "model": model_slug, "provider": ""}  # fmt: skip
    transaction.on_commit(lambda: notify_activity(organisation_id, payload))
