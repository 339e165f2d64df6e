"""``uberllm.aio.BatchWriter``: how items become batches (the ledger's and the speed
samples' transactions under load)."""

from __future__ import annotations

import asyncio

from uberllm.aio import WRITERS, BatchWriter


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
