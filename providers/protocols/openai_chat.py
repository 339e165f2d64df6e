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


def events_from_chunk(chunk: dict[str, Any]) -> list[ev.ChatEvent]:
    """The neutral events of one chunk (the first choice only: the gateway serves n=1)."""
    if chunk.get("error"):
        error = chunk["error"]
        return [ev.StreamError(str(error.get("message") if isinstance(error, dict) else error))]
    events: list[ev.ChatEvent] = []
    for choice in (chunk.get("choices") or ())[:1]:
        delta = choice.get("delta") or {}
        for field in REASONING_FIELDS:
            if isinstance(delta.get(field), str) and delta[field]:
                events.append(ev.ReasoningDelta(delta[field]))
                break
        if isinstance(delta.get(SIGNATURE_FIELD), str) and delta[SIGNATURE_FIELD]:
            events.append(ev.ReasoningSignature(delta[SIGNATURE_FIELD]))
        if delta.get("content"):
            events.append(ev.TextDelta(delta["content"]))
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
        for field in REASONING_FIELDS:
            if message.get(field):
                events.append(ev.ReasoningDelta(message[field]))
                break
        if isinstance(message.get(SIGNATURE_FIELD), str) and message[SIGNATURE_FIELD]:
            events.append(ev.ReasoningSignature(message[SIGNATURE_FIELD]))
        if message.get("content"):
            events.append(ev.TextDelta(message["content"]))
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
