"""An Anthropic Messages upstream's SSE stream or Message -> OpenAI chat chunks."""

from __future__ import annotations

from typing import Any

import orjson

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
    "model_context_window_exceeded": "length",
}


class UpstreamReader:
    """One upstream Messages stream read into OpenAI ``chat.completion.chunk`` payloads
    (JSON bytes, ``[DONE]`` at ``message_stop``), the form the relay handles: text ->
    ``content``, thinking -> ``reasoning_content``, tool_use -> ``tool_calls``,
    ``message_delta`` -> ``finish_reason`` and a usage chunk carrying Anthropic's own
    usage object (``message_start``'s fields, each overwritten by the last non-null value
    of ``message_delta``: never summed), which the relay reads with the ``anthropic``
    usage reader (``providers.protocols.usage``), ``error`` -> an error
    chunk, a thinking ``signature`` -> ``reasoning_signature``. ``ping`` is dropped."""

    def __init__(self) -> None:
        self.message_id, self.model = "", ""
        self.usage: dict[str, Any] = {}
        self.tools: dict[int, int] = {}  # content block index -> tool call index

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return orjson.dumps(
            {
                "id": self.message_id,
                "object": "chat.completion.chunk",
                "model": self.model,
                "choices": [choice],
            }
        )

    def _usage_chunk(self) -> bytes:
        return orjson.dumps(
            {
                "id": self.message_id,
                "object": "chat.completion.chunk",
                "model": self.model,
                "choices": [],
                "usage": dict(self.usage),
            }
        )

    def _block_start(self, event: dict[str, Any]) -> list[bytes]:
        block = event.get("content_block") or {}
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            return [self._chunk({"content": block["text"]})]
        if kind == "thinking":
            out = (
                [self._chunk({"reasoning_content": block["thinking"]})]
                if block.get("thinking")
                else []
            )
            if block.get("signature"):
                out.append(self._chunk({"reasoning_signature": block["signature"]}))
            return out
        if kind == "tool_use":
            index = self.tools[int(event.get("index", 0))] = len(self.tools)
            arguments = orjson.dumps(block["input"]).decode() if block.get("input") else ""
            call = {
                "index": index,
                "id": str(block.get("id") or ""),
                "type": "function",
                "function": {"name": str(block.get("name") or ""), "arguments": arguments},
            }
            return [self._chunk({"tool_calls": [call]})]
        return []

    def _block_delta(self, event: dict[str, Any]) -> list[bytes]:
        delta = event.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return [self._chunk({"content": delta["text"]})]
        if kind == "thinking_delta" and delta.get("thinking"):
            return [self._chunk({"reasoning_content": delta["thinking"]})]
        if kind == "signature_delta" and delta.get("signature"):
            return [self._chunk({"reasoning_signature": delta["signature"]})]
        if kind == "input_json_delta" and delta.get("partial_json"):
            index = self.tools.get(int(event.get("index", 0)))
            if index is not None:
                piece = {"index": index, "function": {"arguments": delta["partial_json"]}}
                return [self._chunk({"tool_calls": [piece]})]
        return []

    def feed(self, data: bytes) -> list[bytes]:
        """The OpenAI chunk payloads for one Messages SSE event's data."""
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return [b"{not json"]  # the relay reports an invalid chunk
        if not isinstance(event, dict):
            return []
        match event.get("type"):
            case "message_start":
                message = event.get("message") or {}
                self.message_id = str(message.get("id") or "")
                self.model = str(message.get("model") or "")
                self.usage.update(message.get("usage") or {})
                return [self._chunk({"role": "assistant", "content": ""})]
            case "content_block_start":
                return self._block_start(event)
            case "content_block_delta":
                return self._block_delta(event)
            case "message_delta":
                self.usage.update(
                    {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
                )
                reason = (event.get("delta") or {}).get("stop_reason")
                if reason is None:
                    return []
                return [self._chunk({}, FINISH_REASONS.get(reason, "stop")), self._usage_chunk()]
            case "message_stop":
                return [b"[DONE]"]
            case "error":
                error = event.get("error") or {}
                message = f"{error.get('type', 'error')}: {error.get('message', '')}"
                return [orjson.dumps({"error": {"message": message, "type": error.get("type")}})]
        return []  # ping, content_block_stop, unknown events

    def message(self, body: bytes) -> list[bytes]:
        """A whole (non-streaming) Message as the chunks a stream of it would give."""
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return [b"{not json"]
        if not isinstance(message, dict):
            return [b"{not json"]
        if message.get("type") == "error":
            return self.feed(body)
        usage = message.get("usage") or {}
        out = self.feed(
            orjson.dumps({"type": "message_start", "message": {**message, "usage": usage}})
        )
        for index, block in enumerate(message.get("content") or ()):
            if not isinstance(block, dict):
                continue
            out += self._block_start({"index": index, "content_block": block})
        out += self.feed(
            orjson.dumps(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message.get("stop_reason") or "end_turn"},
                }
            )
        )
        return [*out, b"[DONE]"]
