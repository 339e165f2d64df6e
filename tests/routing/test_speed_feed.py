"""The incremental speed feed (routing.memory.SpeedFeed) on the real database: a refresh
reads the rows written since the last one, plus the ids it skipped over (a transaction
of another process committed late), not the whole overlap every time."""

from __future__ import annotations

import pytest

from routing.memory import SpeedFeed
from routing.models import SpeedSample

pytestmark = pytest.mark.django_db


def _write(endpoint, count: int) -> list[int]:
    rows = SpeedSample.objects.bulk_create(
        [SpeedSample(endpoint=endpoint, bucket="<8k", ttft_ms=200) for _ in range(count)]
    )
    return [row.id for row in rows]


def test_a_refresh_reads_only_new_rows_after_the_first_overlap(market) -> None:
    alpha = market["alpha"]
    _write(alpha, 2_000)
    SpeedSample.objects.all().delete()  # older samples gone (retention): holes below
    _write(alpha, 300)
    feed = SpeedFeed()
    feed.load()  # full reload: each window's newest rows only
    assert feed.rows_read < 300
    feed.load()  # the one read of the whole overlap after a full reload
    assert feed.rows_read == 300
    _write(alpha, 7)
    feed.load()
    assert feed.rows_read == 7  # before: the last 5,000 rows every second
    feed.load()
    assert feed.rows_read == 0


def test_a_row_committed_late_below_the_last_id_is_still_read(market) -> None:
    alpha = market["alpha"]
    _write(alpha, 5)
    feed = SpeedFeed()
    feed.load()
    feed.load()
    top = SpeedSample.objects.order_by("-id").first().id
    # Another process's row got id top + 1 but commits after a row with id top + 3.
    SpeedSample.objects.create(id=top + 3, endpoint=alpha, bucket="<8k", ttft_ms=200)
    feed.load()
    assert feed.rows_read == 1 and feed.last_id == top + 3
    SpeedSample.objects.create(id=top + 1, endpoint=alpha, bucket="<8k", ttft_ms=900)
    feed.load()
    assert feed.rows_read == 1  # the gap, asked for by id
    assert top + 1 in feed._seen
    feed.load()
    assert feed.rows_read == 0  # applied once, and the other gap (top + 2) costs nothing


@pytest.mark.django_db(transaction=True)
def test_samples_of_an_endpoint_deleted_while_queued_do_not_block_the_writer(market) -> None:
    """An admin deletes an endpoint while its speed samples wait in the process's
    queue: they are dropped, the others of their batch and every later batch written
    (before, the batch failed on its foreign key and was retried for ever)."""
    import asyncio

    from providers.models import Endpoint
    from routing.outbox import sample_writer

    gone, alpha = market["bravo"], market["alpha"]
    batch = [
        SpeedSample(endpoint_id=gone.id, bucket="<8k", ttft_ms=300),
        SpeedSample(endpoint_id=alpha.id, bucket="<8k", ttft_ms=200),
    ]
    Endpoint.objects.filter(id=gone.id).delete()

    async def write_all() -> None:
        for sample in batch:
            sample_writer.put(sample)
        async with asyncio.timeout(20):  # the first batch is written before the next sample
            while sample_writer.pending():  # noqa: ASYNC110 - polled
                await asyncio.sleep(0.02)
        sample_writer.put(SpeedSample(endpoint_id=alpha.id, bucket="8k-32k", ttft_ms=900))
        async with asyncio.timeout(20):
            while sample_writer.pending():  # noqa: ASYNC110 - polled
                await asyncio.sleep(0.02)

    asyncio.run(write_all())
    written = sorted(SpeedSample.objects.values_list("endpoint_id", "ttft_ms"))
    assert written == [(alpha.id, 200), (alpha.id, 900)]


def test_a_calls_lessons_linger_before_a_quiet_writer_flushes_them() -> None:
    """Round 21: flushed at once, a call's speed sample and prompt prefixes were written
    (a database thread, a Redis round trip) while its client's next request was on its
    way to the upstream: ~0.2 ms of its TTFT at one stream (paired runs). They wait
    ``LESSON_LINGER_S`` for company instead (docs/benchmarks.md, round 21)."""
    from routing.outbox import LESSON_LINGER_S, prefix_writer, sample_writer

    assert LESSON_LINGER_S > 0
    assert sample_writer.linger_s == LESSON_LINGER_S
    assert prefix_writer.linger_s == LESSON_LINGER_S
