"""Producing the reply after admission: SSE stream or one ``chat.completion`` body.

Timing: the first token leaves at ``ttft * scale`` after the plan; token ``k`` is
due ``k / output_tokens_per_s * scale`` later. Tokens already due are written in one
ASGI message (still one SSE event per token), so a fast stream costs few sends.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import orjson

from . import scripted
from .admission import ChatRequest
from .dialects import in_dialect
from .responses import DONE, JSON_TYPE, SSE_HEADERS, ChunkEncoder, Send, error_event, send_error
from .state import ProviderState, finish_record
from .timing import token_interval_s
from .tokens import reply_text, reply_token, reply_token_json

MAX_EVENTS_PER_SEND = 256


class StreamAbort(Exception):
    """Raised to make the server drop the connection mid-stream (``fail_mode: abort``)."""


@dataclass
class Exchange:
    """One request in flight: its provider, parsed body, log record and send state."""

    provider: ProviderState
    request: ChatRequest
    record: dict[str, Any]
    scale: float
    raw_send: Send
    finished: bool = False  # the final body message has been handed to the server

    async def send(self, message: dict[str, Any]) -> None:
        """Send, tracking the response status and the final body message."""
        if message["type"] == "http.response.start":
            self.record["http_status"] = message["status"]
        elif not message.get("more_body", False):
            self.finished = True
        await self.raw_send(message)

    async def body(self, data: bytes, more: bool = True) -> None:
        """Send a body message."""
        await self.send({"type": "http.response.body", "body": data, "more_body": more})


async def sleep(seconds: float) -> None:
    """``asyncio.sleep`` that does not yield at all for ``seconds <= 0``."""
    if seconds > 0:
        await asyncio.sleep(seconds)


def output_plan(request: ChatRequest, profile: dict[str, Any]) -> tuple[int, str]:
    """Completion tokens and finish_reason: the natural length, capped by max_tokens."""
    natural = profile["default_output_tokens"]
    if request.max_tokens is not None and request.max_tokens < natural:
        return request.max_tokens, "length"
    return natural, "stop"


def usage(
    record: dict[str, Any],
    completion_tokens: int,
    reasoning: int = 0,
    profile: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The usage object for this request in the profile's ``usage_dialect`` (None: the
    provider reports none), with its ``usage_override`` (a provider misreporting it)
    applied. The Messages route's replies are read as OpenAI's (it renders Anthropic's)."""
    prompt = record["prompt_tokens"]
    report = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": record["cached_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    profile = profile or {}
    if record.get("protocol") != "anthropic_messages":
        report = in_dialect(report, profile.get("usage_dialect", "openai"))
    override = profile.get("usage_override")
    if report is None or not override:
        return report
    return {**report, **override}


async def run_completion(ex: Exchange, ttft_s: float) -> None:
    """Answer after the planned TTFT: stream or full body, maybe cut after N tokens."""
    n_tokens, finish_reason = output_plan(ex.request, ex.provider.profile)
    fail_after = ex.provider.profile["fail_after_tokens"]
    cut_at = fail_after if fail_after is not None and fail_after < n_tokens else None
    if ex.request.stream:
        await _stream(ex, ttft_s, n_tokens, finish_reason, cut_at)
    else:
        await _full(ex, ttft_s, n_tokens, finish_reason, cut_at)


async def _stream(
    ex: Exchange, ttft_s: float, n_tokens: int, finish_reason: str, cut_at: int | None
) -> None:
    record = ex.record
    await ex.send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    await sleep(ttft_s * ex.scale)
    enc = ChunkEncoder(
        record["id"], int(record["received_at"]), ex.request.model, ex.request.include_usage
    )
    limit = n_tokens if cut_at is None else cut_at
    if cut_at != 0:
        first = enc.role() + (enc.content(reply_token_json(0)) if limit else b"")
        await ex.body(first)
        record["first_token_at"] = time.time()
        record["completion_tokens_sent"] = min(limit, 1)
        await _paced_tokens(ex, enc, limit)
    if cut_at is not None:
        await _cut_stream(ex)
        return
    tail = enc.finish(finish_reason)
    report = usage(record, n_tokens, profile=ex.provider.profile)
    if ex.request.include_usage and report is not None:
        tail += enc.usage(report)
    await ex.body(tail + DONE, more=False)
    finish_record(record, "completed", None)


async def _paced_tokens(ex: Exchange, enc: ChunkEncoder, limit: int) -> None:
    """Send tokens 1..limit-1, token k due ``k * interval`` after token 0."""
    interval = token_interval_s(ex.provider.profile) * ex.scale
    start = time.monotonic()
    sent = ex.record["completion_tokens_sent"]
    while sent < limit:
        elapsed = time.monotonic() - start
        due = limit if interval <= 0 else min(limit, int(elapsed / interval) + 1)
        if due <= sent:
            await asyncio.sleep(start + sent * interval - time.monotonic())
            continue
        due = min(due, sent + MAX_EVENTS_PER_SEND)
        await ex.body(b"".join(enc.content(reply_token_json(k)) for k in range(sent, due)))
        sent = ex.record["completion_tokens_sent"] = due


async def _cut_stream(ex: Exchange) -> None:
    message = f"Upstream stream cut after {ex.record['completion_tokens_sent']} tokens."
    if ex.provider.profile["fail_mode"] == "abort":
        finish_record(ex.record, "cut", None, message)
        raise StreamAbort(message)
    await ex.body(error_event(message, "stream_cut"), more=False)
    finish_record(ex.record, "cut", None, message)


async def _full(
    ex: Exchange, ttft_s: float, n_tokens: int, finish_reason: str, cut_at: int | None
) -> None:
    record = ex.record
    await sleep(ttft_s * ex.scale)
    record["first_token_at"] = time.time()
    produced = n_tokens if cut_at is None else cut_at
    await sleep(max(produced - 1, 0) * token_interval_s(ex.provider.profile) * ex.scale)
    if cut_at is not None:
        message = f"Upstream generation failed after {cut_at} tokens."
        await send_error(ex.send, 500, message, code="stream_cut")
        finish_record(record, "cut", 500, message)
        return
    body = {
        "id": record["id"],
        "object": "chat.completion",
        "created": int(record["received_at"]),
        "model": ex.request.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply_text(n_tokens), "refusal": None},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage(record, n_tokens, profile=ex.provider.profile),
        "system_fingerprint": None,
    }
    if body["usage"] is None:
        del body["usage"]
    payload = orjson.dumps(body)
    headers = [JSON_TYPE, (b"content-length", str(len(payload)).encode())]
    await ex.send({"type": "http.response.start", "status": 200, "headers": headers})
    record["completion_tokens_sent"] = n_tokens
    await ex.body(payload, more=False)
    finish_record(record, "completed", None)


async def run_scripted(ex: Exchange, ttft_s: float) -> None:
    """A reply with reasoning and/or a tool call (``scripted``); paced like the filler
    reply, one event per token; ``fail_after_tokens`` does not apply to it."""
    script, record = ex.request.script, ex.record
    assert script is not None
    n_tokens, finish_reason = output_plan(ex.request, ex.provider.profile)
    content = [reply_token(i) for i in range(n_tokens)]
    total = scripted.completion_tokens(script, content)
    head = {
        "id": record["id"],
        "object": "chat.completion.chunk",
        "created": int(record["received_at"]),
        "model": ex.request.model,
    }
    if not ex.request.stream:
        await sleep((ttft_s + total * token_interval_s(ex.provider.profile)) * ex.scale)
        message, forced = scripted.message(script, content)
        choice = {
            "index": 0,
            "message": message,
            "finish_reason": forced or finish_reason,
            "logprobs": None,
        }
        body = {**head, "object": "chat.completion", "choices": [choice]}
        report = usage(record, total, script.reasoning_tokens, ex.provider.profile)
        if report is not None:
            body["usage"] = report
        record["first_token_at"] = time.time()
        record["completion_tokens_sent"] = total
        await send_json_reply(ex, body)
        return
    await ex.send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
    await sleep(ttft_s * ex.scale)
    role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    await ex.body(b"data: " + orjson.dumps({**head, "choices": [role]}) + b"\n\n")
    record["first_token_at"] = time.time()
    interval = token_interval_s(ex.provider.profile) * ex.scale
    for event in scripted.stream_events(head, script, content, finish_reason):
        await sleep(interval)
        await ex.body(event)
    tail = b""
    report = usage(record, total, script.reasoning_tokens, ex.provider.profile)
    if ex.request.include_usage and report is not None:
        tail = b"data: " + orjson.dumps({**head, "choices": [], "usage": report}) + b"\n\n"
    record["completion_tokens_sent"] = total
    await ex.body(tail + DONE, more=False)
    finish_record(record, "completed", None)


async def send_json_reply(ex: Exchange, body: dict[str, Any]) -> None:
    payload = orjson.dumps(body)
    headers = [JSON_TYPE, (b"content-length", str(len(payload)).encode())]
    await ex.send({"type": "http.response.start", "status": 200, "headers": headers})
    await ex.body(payload, more=False)
    finish_record(ex.record, "completed", None)
