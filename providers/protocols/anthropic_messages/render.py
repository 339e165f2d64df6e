"""Neutral events -> what a Messages client reads.

``StreamRenderer`` turns neutral events into Messages SSE events (``message_start``,
``content_block_start/delta/stop`` for text, thinking and tool_use, ``message_delta``
with usage and ``stop_reason``, ``message_stop``, ``ping``, ``error``);
``render_message`` renders a whole reply; ``error_body`` Anthropic's error shape.
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import types as ev

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


PING = sse("ping", {"type": "ping"})


def _usage(usage: ev.UsageReport | None, prompt_estimate: int) -> dict[str, Any]:
    if usage is None:
        return {"input_tokens": prompt_estimate, "output_tokens": 0}
    written = min(usage.cache_write_tokens, max(usage.prompt_tokens - usage.cached_tokens, 0))
    return {
        "input_tokens": max(usage.prompt_tokens - usage.cached_tokens - written, 0),
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": written,
    }


def error_body(status: int, message: str) -> dict[str, Any]:
    error_type = ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": error_type, "message": message}}


class StreamRenderer:
    """Neutral events in, Messages SSE bytes out (one renderer per response)."""

    def __init__(self, message_id: str, model: str, prompt_estimate: int) -> None:
        self.message_id, self.model, self.prompt_estimate = message_id, model, prompt_estimate
        self.block_index = -1
        self.block_kind: str | None = None  # "text" | "thinking" | "tool_use"
        self.tool_index: int | None = None
        self.stop_reason: str | None = None
        self.usage: ev.UsageReport | None = None
        self.signature = ""  # the open thinking block's, from the provider

    def start(self) -> bytes:
        message = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(None, self.prompt_estimate),
        }
        return sse("message_start", {"type": "message_start", "message": message})

    def _open(self, kind: str, block: dict[str, Any]) -> bytes:
        closing = self._close()
        self.block_index += 1
        self.block_kind = kind
        start = {"type": "content_block_start", "index": self.block_index, "content_block": block}
        return closing + sse("content_block_start", start)

    def _close(self) -> bytes:
        if self.block_kind is None:
            return b""
        out = b""
        if self.block_kind == "thinking":
            signature = {"type": "signature_delta", "signature": self.signature}
            self.signature = ""
            out = sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": self.block_index, "delta": signature},
            )
        self.block_kind, self.tool_index = None, None
        stop = {"type": "content_block_stop", "index": self.block_index}
        return out + sse("content_block_stop", stop)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        data = {"type": "content_block_delta", "index": self.block_index, "delta": delta}
        return sse("content_block_delta", data)

    def render(self, event: ev.ChatEvent) -> bytes:
        match event:
            case ev.TextDelta(text):
                opening = (
                    b""
                    if self.block_kind == "text"
                    else self._open("text", {"type": "text", "text": ""})
                )
                return opening + self._delta({"type": "text_delta", "text": text})
            case ev.ReasoningDelta(text):
                opening = (
                    b""
                    if self.block_kind == "thinking"
                    else self._open(
                        "thinking", {"type": "thinking", "thinking": "", "signature": ""}
                    )
                )
                return opening + self._delta({"type": "thinking_delta", "thinking": text})
            case ev.ReasoningSignature(signature):
                if self.block_kind == "thinking":
                    self.signature = signature
            case ev.ToolCallStart(index, call_id, name):
                block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                out = self._open("tool_use", block)
                self.tool_index = index
                return out
            case ev.ToolCallDelta(index, arguments):
                if self.block_kind != "tool_use" or self.tool_index != index:
                    return b""  # a fragment for a call already closed: cannot be placed
                return self._delta({"type": "input_json_delta", "partial_json": arguments})
            case ev.Finish(reason):
                self.stop_reason = STOP_REASONS.get(reason, "end_turn")
            case ev.UsageReport():
                self.usage = event
            case ev.StreamError(message):
                return self._close() + sse("error", error_body(502, message))
        return b""

    def finish(self) -> bytes:
        """``message_delta`` (stop_reason, usage) and ``message_stop``."""
        usage = _usage(self.usage, self.prompt_estimate)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": self.stop_reason or "end_turn", "stop_sequence": None},
            "usage": usage,
        }
        return (
            self._close()
            + sse("message_delta", delta)
            + sse("message_stop", {"type": "message_stop"})
        )


def tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def render_message(
    message_id: str, model: str, events: list[ev.ChatEvent], prompt_estimate: int
) -> dict[str, Any]:
    """A whole reply (the events of a ``chat.completion``) as an Anthropic Message."""
    content: list[dict[str, Any]] = []
    thinking, text, signature = "", "", ""
    calls: dict[int, dict[str, Any]] = {}
    stop, usage = "end_turn", None
    for event in events:
        match event:
            case ev.ReasoningDelta(piece):
                thinking += piece
            case ev.ReasoningSignature(piece):
                signature = piece
            case ev.TextDelta(piece):
                text += piece
            case ev.ToolCallStart(index, call_id, name):
                calls[index] = {"id": call_id, "name": name, "arguments": ""}
            case ev.ToolCallDelta(index, piece) if index in calls:
                calls[index]["arguments"] += piece
            case ev.Finish(reason):
                stop = STOP_REASONS.get(reason, "end_turn")
            case ev.UsageReport():
                usage = event
    if thinking:
        content.append({"type": "thinking", "thinking": thinking, "signature": signature})
    if text:
        content.append({"type": "text", "text": text})
    for index in sorted(calls):
        call = calls[index]
        content.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["name"],
                "input": tool_input(call["arguments"]),
            }
        )
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(usage, prompt_estimate),
    }
