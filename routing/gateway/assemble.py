"""Assembling streamed chunks into one OpenAI ``chat.completion`` (non-streaming replies)."""

from __future__ import annotations

from typing import Any


class _Choice:
    __slots__ = (
        "content",
        "finish_reason",
        "logprobs",
        "reasoning",
        "refusal",
        "role",
        "signature",
        "tool_calls",
    )

    def __init__(self) -> None:
        self.role = "assistant"
        self.content: list[str] = []
        self.refusal: list[str] = []
        # Reasoning text under the field name(s) the provider used (DeepSeek and vLLM send
        # reasoning_content, OpenRouter-style hosts reasoning): a client that sends the
        # message back (DeepSeek's thinking mode with tools requires it) gets it as sent.
        self.reasoning: dict[str, list[str]] = {}
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.logprobs: list[Any] | None = None
        self.finish_reason: str | None = None
        self.signature = ""  # Anthropic's thinking signature (``reasoning_signature``)

    def add(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta") or {}
        self.role = delta.get("role") or self.role
        if delta.get("content"):
            self.content.append(delta["content"])
        if delta.get("refusal"):
            self.refusal.append(delta["refusal"])
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str) and delta[key]:
                self.reasoning.setdefault(key, []).append(delta[key])
        if isinstance(delta.get("reasoning_signature"), str):
            self.signature = delta["reasoning_signature"] or self.signature
        for call in delta.get("tool_calls") or ():
            self._add_tool_call(call)
        logprobs = choice.get("logprobs")
        if logprobs and logprobs.get("content"):
            self.logprobs = (self.logprobs or []) + list(logprobs["content"])
        self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _add_tool_call(self, call: dict[str, Any]) -> None:
        index = call.get("index", len(self.tool_calls))
        merged = self.tool_calls.setdefault(
            index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
        )
        merged["id"] = call.get("id") or merged["id"]
        merged["type"] = call.get("type") or merged["type"]
        function = call.get("function") or {}
        merged["function"]["name"] += function.get("name") or ""
        merged["function"]["arguments"] += function.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": self.role,
            "content": "".join(self.content) if self.content or not self.tool_calls else None,
            "refusal": "".join(self.refusal) or None,
        }
        for key, parts in self.reasoning.items():
            message[key] = "".join(parts)
        if self.signature:
            message["reasoning_signature"] = self.signature
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return message


class CompletionAssembler:
    """Feed rewritten chunks with ``add``; ``completion()`` gives the whole reply."""

    def __init__(self) -> None:
        self._choices: dict[int, _Choice] = {}
        self._top: dict[str, Any] = {}
        self.usage: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        for key in ("id", "created", "model", "provider", "system_fingerprint", "service_tier"):
            if chunk.get(key) is not None:
                self._top[key] = chunk[key]
        for choice in chunk.get("choices") or ():
            self._choices.setdefault(choice.get("index", 0), _Choice()).add(choice)
        if chunk.get("usage"):
            self.usage = chunk["usage"]

    def completion(self) -> dict[str, Any]:
        choices = [
            {
                "index": index,
                "message": choice.message(),
                "logprobs": {"content": choice.logprobs} if choice.logprobs else None,
                "finish_reason": choice.finish_reason,
            }
            for index, choice in sorted(self._choices.items())
        ]
        return {**self._top, "object": "chat.completion", "choices": choices, "usage": self.usage}
