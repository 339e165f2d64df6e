"""OpenAI Chat Completions: the neutral request form, and the upstreams' wire format.

``events_from_chunk`` turns one ``chat.completion.chunk`` into neutral events;
``usage_report`` reads a usage object; ``error_body`` renders an error. Validation of a
client's request lives in the gateway (``routing.validate``), which answers 400s.
"""

from __future__ import annotations

from typing import Any

import orjson

from . import types as ev

REASONING_FIELDS = ("reasoning_content", "reasoning")
SIGNATURE_FIELD = "reasoning_signature"  # UberLLM's: Anthropic's thinking signature


def usage_report(usage: dict[str, Any]) -> ev.UsageReport:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return ev.UsageReport(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=int(prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
        cost_usd=usage.get("cost"),
        cache_write_tokens=int(prompt_details.get("cache_write_tokens") or 0),
    )


def _tool_events(calls: list[dict[str, Any]]) -> list[ev.ChatEvent]:
    events: list[ev.ChatEvent] = []
    for call in calls:
        index = int(call.get("index", 0))
        function = call.get("function") or {}
        if call.get("id") or function.get("name"):
            events.append(ev.ToolCallStart(index, call.get("id") or "", function.get("name") or ""))
        if function.get("arguments"):
            events.append(ev.ToolCallDelta(index, function["arguments"]))
    return events


def _reasoning_and_text(part: dict[str, Any]) -> list[ev.ChatEvent]:
    """A delta's or a whole message's reasoning (the first field of ``REASONING_FIELDS``
    that holds text; anything but a string is ignored), its signature and its text."""
    events: list[ev.ChatEvent] = []
    reasoning = next((part[f] for f in REASONING_FIELDS if _text(part.get(f))), None)
    if reasoning:
        events.append(ev.ReasoningDelta(reasoning))
    if _text(part.get(SIGNATURE_FIELD)):
        events.append(ev.ReasoningSignature(part[SIGNATURE_FIELD]))
    if part.get("content"):
        events.append(ev.TextDelta(part["content"]))
    return events


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def events_from_chunk(chunk: dict[str, Any]) -> list[ev.ChatEvent]:
    """The neutral events of one chunk (the first choice only: the gateway serves n=1)."""
    if chunk.get("error"):
        error = chunk["error"]
        return [ev.StreamError(str(error.get("message") if isinstance(error, dict) else error))]
    events: list[ev.ChatEvent] = []
    for choice in (chunk.get("choices") or ())[:1]:
        delta = choice.get("delta") or {}
        events += _reasoning_and_text(delta)
        events += _tool_events(delta.get("tool_calls") or [])
        if choice.get("finish_reason"):
            events.append(ev.Finish(choice["finish_reason"]))
    if chunk.get("usage"):
        events.append(usage_report(chunk["usage"]))
    return events


def events_from_completion(completion: dict[str, Any]) -> list[ev.ChatEvent]:
    """A whole ``chat.completion`` as the events a stream of it would give."""
    events: list[ev.ChatEvent] = []
    for choice in (completion.get("choices") or ())[:1]:
        message = choice.get("message") or {}
        events += _reasoning_and_text(message)
        for index, call in enumerate(message.get("tool_calls") or ()):
            function = call.get("function") or {}
            events.append(ev.ToolCallStart(index, call.get("id") or "", function.get("name") or ""))
            events.append(ev.ToolCallDelta(index, function.get("arguments") or ""))
        events.append(ev.Finish(choice.get("finish_reason") or "stop"))
    if completion.get("usage"):
        events.append(usage_report(completion["usage"]))
    return events


def error_body(status: int, message: str, error_type: str, param: str | None = None) -> bytes:
    return orjson.dumps(
        {"error": {"message": message, "type": error_type, "code": error_type, "param": param}}
    )
