"""Micro-benchmark: SSE parsing of an upstream chat stream, httpx-sse vs ``SSESplitter``.

``python -m lab.benchmark.sse`` feeds the same 52-event stream (role, 50 tokens,
finish; the emulator's bytes) through an ``httpx.Response`` and reports microseconds
of CPU per event for each way of getting the events' data out of it:

- ``httpx-sse``: ``EventSource(response).aiter_sse()`` (text decoding, a line splitter
  and a Python call per line), as providers/upstream.py did before;
- ``splitter``: ``response.aiter_bytes()`` into ``providers.upstream.SSESplitter``.

Two arrival patterns: ``paced`` (one event per network read, as from a real LLM) and
``burst`` (the whole stream in one read, as from the unpaced emulator).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import orjson

from providers.upstream import SSESplitter


def stream_events(tokens: int = 50) -> list[bytes]:
    head = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": "m"}

    def event(delta: dict, finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return b"data: " + orjson.dumps({**head, "choices": [choice]}) + b"\n\n"

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": f" lorem{i}"}) for i in range(tokens)]
    events.append(event({}, "stop"))
    return [*events, b"data: [DONE]\n\n"]


class Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read


def response(reads: list[bytes]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(reads))


async def with_httpx_sse(reads: list[bytes]) -> int:
    from httpx_sse import EventSource

    count = 0
    async for event in EventSource(response(reads)).aiter_sse():
        count += len(event.data) > 0
    return count


async def with_splitter(reads: list[bytes]) -> int:
    splitter, count = SSESplitter(), 0
    async for chunk in response(reads).aiter_bytes():
        count += len(splitter.feed(chunk))
    return count


async def measure(parse, reads: list[bytes], events: int, rounds: int) -> float:
    assert await parse(reads) == events
    start = time.process_time()
    for _ in range(rounds):
        await parse(reads)
    return (time.process_time() - start) / rounds / events * 1e6


async def main(rounds: int = 2000) -> None:
    events = stream_events()
    patterns = {"paced": events, "burst": [b"".join(events)]}
    parsers = {"splitter": with_splitter}
    try:
        import httpx_sse  # noqa: F401

        parsers = {"httpx-sse": with_httpx_sse, **parsers}
    except ImportError:
        print("httpx-sse is not installed: only the splitter is measured")
    print(f"CPU microseconds per event ({len(events)} events per stream, {rounds} streams)")
    for pattern, reads in patterns.items():
        figures = {
            name: await measure(fn, reads, len(events), rounds) for name, fn in parsers.items()
        }
        line = "  ".join(f"{name} {us:6.2f}" for name, us in figures.items())
        print(f"  {pattern:6} {line}")


if __name__ == "__main__":
    asyncio.run(main())
