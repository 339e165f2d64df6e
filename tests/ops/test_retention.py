"""Retention: speed samples past SPEED_MAX_AGE_S and old probe results are deleted in
batches by the beat task; newer rows stay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from routing.config import gateway_config, live_config
from routing.models import ProbeResult, SpeedSample
from routing.services import speed_samples_prune
from routing.tasks import prune_history_task

pytestmark = pytest.mark.django_db(transaction=True)


def speed_samples(endpoint, ages_s: list[float]) -> list[int]:
    rows = SpeedSample.objects.bulk_create(
        SpeedSample(endpoint=endpoint, bucket="<8k", ttft_ms=100) for _ in ages_s
    )
    now = timezone.now()
    for row, age in zip(rows, ages_s, strict=True):
        SpeedSample.objects.filter(id=row.id).update(created_at=now - timedelta(seconds=age))
    return [row.id for row in rows]


def test_the_beat_task_prunes_old_samples_and_probe_results(market):
    max_age = gateway_config().speed_max_age_s
    endpoint = market["alpha"]
    old = speed_samples(endpoint, [max_age + 60] * 3)
    fresh = speed_samples(endpoint, [max_age - 60, 1])
    days = live_config().probe_result_max_age_days
    for cycle, age_days in ((1, days + 1), (2, days - 1)):
        probe = ProbeResult.objects.create(
            cycle=cycle, endpoint=endpoint, prompt_tokens=20_000, status="ok"
        )
        ProbeResult.objects.filter(id=probe.id).update(
            created_at=timezone.now() - timedelta(days=age_days)
        )
    assert prune_history_task() == {"speed_samples": 3, "probe_results": 1}
    assert sorted(SpeedSample.objects.values_list("id", flat=True)) == sorted(fresh)
    assert not SpeedSample.objects.filter(id__in=old).exists()
    assert list(ProbeResult.objects.values_list("cycle", flat=True)) == [2]
    assert prune_history_task() == {"speed_samples": 0, "probe_results": 0}


def test_pruning_goes_in_batches_until_none_is_left(market):
    max_age = gateway_config().speed_max_age_s
    speed_samples(market["bravo"], [max_age + 1] * 7)
    assert speed_samples_prune(batch_size=2) == 7
    assert not SpeedSample.objects.exists()
