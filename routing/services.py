"""Writes of routing that are not on the hot path: retention of its history tables."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.utils import timezone

from common import metrics

from .config import gateway_config, live_config
from .models import ProbeResult, SpeedSample

PRUNE_BATCH_SIZE = 5_000


def rows_delete_older(
    *, model: type[models.Model], cutoff, batch_size: int = PRUNE_BATCH_SIZE
) -> int:
    """Delete ``model`` rows created before ``cutoff``, ``batch_size`` at a time (each
    batch its own short statement: no long lock, no huge transaction). Returns the count."""
    deleted = 0
    while True:
        ids = list(
            model.objects.filter(created_at__lt=cutoff)
            .order_by("id")
            .values_list("id", flat=True)[:batch_size]
        )
        if not ids:
            return deleted
        deleted += model.objects.filter(id__in=ids).delete()[0]


def speed_samples_prune(*, batch_size: int = PRUNE_BATCH_SIZE) -> int:
    """Delete speed samples older than SPEED_MAX_AGE_S: they no longer count (R2.1)."""
    cutoff = timezone.now() - timedelta(seconds=gateway_config().speed_max_age_s)
    deleted = rows_delete_older(model=SpeedSample, cutoff=cutoff, batch_size=batch_size)
    metrics.observe_pruned("speed_sample", deleted)
    return deleted


def probe_results_prune(*, batch_size: int = PRUNE_BATCH_SIZE) -> int:
    """Delete probe results older than PROBE_RESULT_MAX_AGE_DAYS (kept for the admin's
    history and platform-cost reports; the routing never reads them)."""
    days = live_config().probe_result_max_age_days
    cutoff = timezone.now() - timedelta(days=days)
    deleted = rows_delete_older(model=ProbeResult, cutoff=cutoff, batch_size=batch_size)
    metrics.observe_pruned("probe_result", deleted)
    return deleted


def history_prune() -> dict[str, int]:
    return {"speed_samples": speed_samples_prune(), "probe_results": probe_results_prune()}
