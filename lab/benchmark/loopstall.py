"""How long a big request holds the event loop: ``manage.py bench_big_body``.

A conversation of N short messages (the worst case per byte: the per-message work is
~20 us a message) is parsed and measured (validation, token estimate, prefix hashes) as
the chat endpoint does it (``routing.gateway.big.per_message_work``), while a ticker task
on the same loop sleeps 1 ms at a time and records the longest gap between its wake-ups:
the time every other stream of the process would wait. Inline (the body under
``OFF_LOOP_BODY_BYTES``) against the big-request thread.
"""

from __future__ import annotations

import asyncio
import time

import orjson

from common.config import knob, set_knob
from routing.gateway.accept import measure_prompt
from routing.gateway.big import per_message_work
from routing.request import parse_chat_request


def body_of(messages: int) -> bytes:
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"}
        for i in range(messages)
    ]
    return orjson.dumps({"model": "bench/echo", "messages": turns})


async def _ticker(stop: asyncio.Event, gaps: list[float]) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


async def _one(body: bytes) -> tuple[float, float]:
    """(work ms, longest loop gap ms) for one body."""
    stop, gaps = asyncio.Event(), []
    ticker = asyncio.ensure_future(_ticker(stop, gaps))
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    chat = await per_message_work(len(body), parse_chat_request, body)
    await per_message_work(len(body), measure_prompt, chat.messages)
    work = time.perf_counter() - start
    stop.set()
    await ticker
    return work * 1000, max(gaps) * 1000


def measure(message_counts: list[int]) -> list[dict]:
    rows = []
    default = knob("OFF_LOOP_BODY_BYTES")
    try:
        for count in message_counts:
            body = body_of(count)
            row = {"messages": count, "mb": len(body) / 1e6}
            for mode, limit in (("inline", 10**12), ("thread", 0)):
                set_knob("OFF_LOOP_BODY_BYTES", limit)
                row[mode] = asyncio.run(_one(body))
            rows.append(row)
    finally:
        set_knob("OFF_LOOP_BODY_BYTES", default)
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        "messages     MB | inline: work ms  loop held ms | thread: work ms  loop held ms",
        "-" * 80,
    ]
    for r in rows:
        (iw, ig), (tw, tg) = r["inline"], r["thread"]
        lines.append(
            f"{r['messages']:8d} {r['mb']:6.2f} | {iw:15.1f} {ig:13.1f} | {tw:15.1f} {tg:13.1f}"
        )
    return "\n".join(lines)
