"""The gateway's own work per request that grows with the prompt, before its upstream
request can leave: parsing and validating the body, the token estimate, the prefix
hashes (cache-aware pricing) and the upstream body. ``manage.py bench_prompt``.

A synthetic coding-agent conversation (a long system prompt, then alternating turns of
code-like text with some non-ASCII) of about each size asked; each step is timed over
``repeats`` runs in this process and the median printed, in milliseconds.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

import orjson

from providers import protocols
from routing.core.prefix import prefix_hashes
from routing.core.tokens import TokenEstimator
from routing.request import parse_chat_request

WORDS = ("def", "return", "self.value", "parser", "the", "ünïcode", "x = 1", "{", "}", "\n")
STEPS = ("parse", "tokens", "prefix_hashes", "upstream_body")


def conversation(kb: int, seed: int = 1) -> bytes:
    """A chat request body of about ``kb`` kilobytes (a fifth of it a system prompt)."""
    rng = random.Random(seed)

    def text(chars: int) -> str:
        words, size = [], 0
        while size < chars:
            word = rng.choice(WORDS)
            words.append(word)
            size += len(word) + 1
        return " ".join(words)

    chars = kb * 1000
    messages = [{"role": "system", "content": text(chars // 5)}]
    turns = max(2, chars // 20_000)
    for k in range(turns):
        role = "user" if k % 2 == 0 else "assistant"
        messages.append({"role": role, "content": text(chars * 4 // 5 // turns)})
    return orjson.dumps({"model": "bench/echo", "messages": messages, "stream": True})


def _time(step: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def measure(sizes_kb: list[int], repeats: int = 15) -> list[dict]:
    """One row per size: the body's KB, its messages, and each step's median ms."""
    rows = []
    for kb in sizes_kb:
        raw = conversation(kb)
        chat = parse_chat_request(raw)
        body = {**chat.body, "stream_options": {"include_usage": True}}
        steps = {
            "parse": lambda: parse_chat_request(raw),  # noqa: B023 - used in this iteration
            "tokens": lambda: TokenEstimator.estimate(chat.messages),  # noqa: B023
            "prefix_hashes": lambda: prefix_hashes(chat.messages),  # noqa: B023
            "upstream_body": lambda: protocols.upstream_body("openai_chat", body, None),  # noqa: B023
        }
        row = {"kb": round(len(raw) / 1000), "messages": len(chat.messages)}
        row.update({name: _time(step, repeats) for name, step in steps.items()})
        row["total"] = sum(row[name] for name in STEPS)
        rows.append(row)
    return rows


def render(rows: list[dict]) -> str:
    head = f"{'KB':>6} {'msgs':>5} " + " ".join(f"{s:>14}" for s in (*STEPS, "total"))
    lines = [head + "   (ms, median)", "-" * len(head)]
    for r in rows:
        cells = " ".join(f"{r[s]:>14.2f}" for s in (*STEPS, "total"))
        lines.append(f"{r['kb']:>6} {r['messages']:>5} {cells}")
    return "\n".join(lines)
