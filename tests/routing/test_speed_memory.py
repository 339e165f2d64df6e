"""What the gateway processes read back from the shared speed samples (issue 10)."""

import pytest

from routing.core.speed import speed_bucket
from routing.memory import load_speed_summary
from routing.models import SpeedSample

pytestmark = pytest.mark.django_db(transaction=True)
BUCKET = "32k-128k"


def test_cached_and_uncached_samples_are_separate_windows(market):
    alpha = market["alpha"]
    SpeedSample.objects.bulk_create(
        [SpeedSample(endpoint=alpha, bucket=BUCKET, ttft_ms=6000, is_probe=True) for _ in range(4)]
        + [SpeedSample(endpoint=alpha, bucket=BUCKET, ttft_ms=1200, cached=True) for _ in range(5)]
    )
    summary = load_speed_summary([alpha.id])
    assert summary.typical(alpha.id, BUCKET) == 6.0
    assert summary.count(alpha.id, BUCKET) == 4
    assert summary.typical(alpha.id, speed_bucket(BUCKET, True)) == 1.2
    assert summary.count(alpha.id, speed_bucket(BUCKET, True)) == 5
    newest = SpeedSample.objects.filter(cached=True).latest("id").created_at.timestamp()
    assert summary.newest(alpha.id, speed_bucket(BUCKET, True)) == pytest.approx(newest)
