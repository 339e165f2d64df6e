"""Rewriting upstream SSE chunks for the customer: one JSON parse and one dump per chunk."""

from __future__ import annotations

from typing import Any

import orjson

from ..catalog import EndpointRoute
from .state import CallState


def error_chunk(state: CallState, message: str) -> bytes:
    """The mid-stream error event (OpenRouter's shape): error + finish_reason "error"."""
    payload = {
        "id": state.request_id,
        "object": "chat.completion.chunk",
        "model": state.chat.model_slug,
        "provider": state.served.provider_slug if state.served else None,
        "error": {"message": message, "type": "upstream_error", "code": 502},
        "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}],
    }
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class ChunkRewriter:
    """Sets our id, model and ``provider`` on each chunk; captures usage and adds its cost.

    The usage chunk is passed on only if ``keep_usage`` (the client asked for it with
    ``include_usage``, or the reply is assembled into one non-streaming response).
    """

    __slots__ = (
        "completion_chunks", "finished", "keep_usage", "route", "saw_token", "state",
        "upstream_error",
    )  # fmt: skip

    def __init__(self, state: CallState, route: EndpointRoute) -> None:
        self.state = state
        self.route = route
        self.keep_usage = state.chat.include_usage or not state.chat.stream
        self.saw_token = False
        self.finished = False
        self.completion_chunks = 0  # content chunks seen: the estimate if usage never comes
        self.upstream_error: str | None = None

    def _track(self, choices: list[dict[str, Any]]) -> None:
        for choice in choices:
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls") or delta.get("refusal"):
                self.saw_token = True
                self.completion_chunks += 1
            if choice.get("finish_reason"):
                self.saw_token = True
                self.finished = True

    def _usage(self, chunk: dict[str, Any], usage: dict[str, Any]) -> bool:
        """Record usage; returns whether the chunk should still be sent."""
        self.state.usage = usage
        if not self.keep_usage:
            if not chunk.get("choices"):
                return False
            del chunk["usage"]
            return True
        usage["cost"] = float(self.state.cost(self.route)[0])
        return True

    def rewrite(self, data: bytes | str) -> dict[str, Any] | None:
        """The chunk to pass on (None: drop it); sets ``upstream_error`` on an error."""
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.upstream_error = "upstream sent a chunk that is not valid JSON"
            return None
        if not isinstance(chunk, dict):
            return None
        if chunk.get("error"):
            error = chunk["error"]
            self.upstream_error = str(error.get("message") if isinstance(error, dict) else error)
            return None
        chunk["id"] = self.state.request_id
        chunk["model"] = self.state.chat.model_slug
        chunk["provider"] = self.route.provider_slug
        choices = chunk.get("choices") or []
        self._track(choices)
        usage = chunk.get("usage")
        if usage:
            if not self._usage(chunk, usage):
                return None
        elif "usage" in chunk and not self.keep_usage:
            del chunk["usage"]
        return chunk


def encode(chunk: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def encode_all(chunks: list[dict[str, Any]]) -> bytes:
    """Several chunks as consecutive SSE events, in one bytes object (one write)."""
    return b"".join([b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks])
