"""``common.aio.BatchWriter``: how items become batches (the ledger's and the speed
samples' transactions under load)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from common.aio import WRITERS, BatchWriter


async def _batches_of_trickle(writer_kwargs: dict) -> list[list[str]]:
    """One item, then three more a few milliseconds apart, as calls arrive under load."""
    batches: list[list[str]] = []

    async def flush(batch: list[str]) -> None:
        batches.append(list(batch))

    async def written() -> None:
        while writer.pending():  # noqa: ASYNC110 - polled, as tests/support.py does
            await asyncio.sleep(0.005)

    writer = BatchWriter("test", flush, **writer_kwargs)
    try:
        writer.put("a")
        await written()
        for item in ("b", "c", "d"):
            writer.put(item)
            await asyncio.sleep(0.01)
        await written()
    finally:
        writer._task.cancel()
        WRITERS.remove(writer)
    return batches


def test_a_quiet_writer_flushes_each_item_at_once():
    assert asyncio.run(_batches_of_trickle({})) == [["a"], ["b"], ["c"], ["d"]]


def test_min_interval_gathers_what_arrives_between_flushes():
    # The first item is written at once (nothing was written before); the next three
    # arrive within the interval and share the next flush.
    batches = asyncio.run(_batches_of_trickle({"min_interval_s": 0.5}))
    assert batches == [["a"], ["b", "c", "d"]]


def test_a_linger_gathers_what_arrives_within_it():
    # Round 21: the speed samples and prompt prefixes a call teaches linger before a quiet
    # writer flushes them (routing.outbox.LESSON_LINGER_S), so their write does not run
    # beside the next request of the same client. Items within one linger share a flush.
    batches = asyncio.run(_batches_of_trickle({"linger_s": 0.2}))
    assert batches == [["a"], ["b", "c", "d"]]


def test_a_backlog_of_full_batches_is_written_back_to_back():
    """Round 13: at most one batch per ``min_interval_s`` capped the ledger at batch_size
    / interval items a second (1,000: ~500 calls a second); above that the backlog grew
    without bound (+170 MB in 150 s of unpaced load on SQLite) until the queue's limit
    dropped rows. A full batch waiting is coalesced already: it goes at once."""

    async def run() -> list[list[int]]:
        batches: list[list[int]] = []

        async def flush(batch: list[int]) -> None:
            batches.append(list(batch))

        writer = BatchWriter("test", flush, batch_size=10, min_interval_s=30.0)
        try:
            writer.put(0)
            while writer.pending():  # noqa: ASYNC110 - polled, as above
                await asyncio.sleep(0.005)
            for item in range(1, 36):
                writer.put(item)
            async with asyncio.timeout(10):  # the interval would hold the rest for 30 s
                while writer.pending() > 5:  # noqa: ASYNC110
                    await asyncio.sleep(0.005)
        finally:
            writer._task.cancel()
            WRITERS.remove(writer)
        return batches

    batches = asyncio.run(run())
    assert batches[0] == [0]
    assert [len(b) for b in batches[1:]] == [10, 10, 10]  # the 5 left wait for the interval


@pytest.mark.django_db(transaction=True)
def test_the_ledger_and_the_speed_samples_are_written_from_one_writer_thread(monkeypatch):
    """One thread, so one database connection whose page cache stays valid from batch to
    batch (``common.aio.WRITER_THREAD``), not whichever thread of the default pool."""
    from billing.ledger_writer import _write
    from common import aio
    from routing.outbox import _bulk_create_async

    threads: list[str] = []
    close_old_connections = aio.close_old_connections

    def recording() -> None:
        threads.append(threading.current_thread().name)
        close_old_connections()

    monkeypatch.setattr(aio, "close_old_connections", recording)

    async def write_batches() -> None:
        for _ in range(3):
            await _write([])
            await _bulk_create_async([])

    asyncio.run(write_batches())
    assert len(threads) == 6
    assert set(threads) == {threads[0]}
    assert threads[0].startswith("uberllm-writer")
