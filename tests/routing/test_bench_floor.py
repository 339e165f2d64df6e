"""The benchmark's floor app (lab.benchmark.floor) relays a real stream from the
emulator, through either upstream client, and keeps its raw connection alive."""

import asyncio

import orjson
import pytest

from lab.benchmark import floor

from ..support import TEST_MODEL


def run_floor(body: bytes) -> tuple[int, bytes]:
    """One request through ``floor.application``, as uvicorn would call it."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    async def call() -> None:
        await floor.application({"type": "http", "method": "POST"}, receive, send)
        for session in floor._sessions.values():
            await session.close()
        floor._sessions.clear()

    asyncio.run(call())
    status = sent[0]["status"]
    return status, b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.parametrize("client", ["aiohttp", "raw"])
def test_floor_relays_the_provider_stream(emulator, monkeypatch, client):
    slug = "alpha"
    monkeypatch.setenv("UBERLLM_BENCH_UPSTREAM", f"{emulator.provider_url(slug)}/chat/completions")
    monkeypatch.setenv("UBERLLM_FLOOR_CLIENT", client)
    floor._idle.clear()
    request = {
        "model": TEST_MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }
    status, body = run_floor(orjson.dumps(request))
    assert status == 200
    events = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    tokens = [
        orjson.loads(e)["choices"][0]["delta"].get("content")
        for e in events[:-1]
        if orjson.loads(e).get("choices")
    ]
    assert sum(1 for t in tokens if t) == 8  # the test market's default reply length
    if client == "raw":
        assert len(floor._idle) == 1  # ended cleanly: its connection is reusable
        floor._idle.clear()
