"""The gateway's ASGI lifespan: the listener starts at startup; shutdown waits for the
background writes requests left (ledger, learning) before the process exits."""

from __future__ import annotations

import asyncio
import gc

import pytest

from common.aio import run_in_background
from uberllm import lifespan


@pytest.fixture(autouse=True)
def restore_gc_thresholds():
    """Startup sets the collector's thresholds for the whole process: put this test
    process's back."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


async def run_lifespan(messages: list[dict]) -> list[dict]:
    inbox: asyncio.Queue = asyncio.Queue()
    for message in messages:
        inbox.put_nowait(message)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    await lifespan.lifespan({"type": "lifespan"}, inbox.get, send)
    return sent


async def test_shutdown_waits_for_background_writes():
    finished = []

    async def ledger_write() -> None:
        await asyncio.sleep(0.2)
        finished.append("ledger row")

    run_in_background(ledger_write())
    sent = await run_lifespan([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert finished == ["ledger row"]


async def test_shutdown_gives_up_after_the_drain_timeout(settings):
    settings.UBERLLM = {**settings.UBERLLM, "DRAIN_BACKGROUND_TIMEOUT_S": 0.1}
    stuck = run_in_background(asyncio.sleep(30))
    try:
        sent = await run_lifespan([{"type": "lifespan.shutdown"}])
        assert sent == [{"type": "lifespan.shutdown.complete"}]
        assert not stuck.done()
    finally:
        stuck.cancel()


async def test_startup_sets_the_collector_thresholds(settings):
    settings.UBERLLM = {**settings.UBERLLM, "GC_THRESHOLDS": (40_000, 7, 9)}
    gc.set_threshold(700, 10, 10)
    sent = await run_lifespan([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    assert sent[0] == {"type": "lifespan.startup.complete"}
    assert gc.get_threshold() == (40_000, 7, 9)


async def test_an_empty_setting_keeps_the_collector_thresholds(settings):
    settings.UBERLLM = {**settings.UBERLLM, "GC_THRESHOLDS": ()}
    gc.set_threshold(700, 10, 10)
    await run_lifespan([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    assert gc.get_threshold() == (700, 10, 10)
