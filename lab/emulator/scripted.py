"""Replies with reasoning and tool calls, driven by the request (deterministic).

- **Reasoning**: a request asking for it (``reasoning`` not disabled, a
  ``reasoning_effort`` other than ``"none"``, or Anthropic-style ``thinking`` carried
  through) gets ``reasoning_tokens`` (profile) tokens of ``reasoning_content`` before
  the answer; they count in ``completion_tokens`` and in
  ``completion_tokens_details.reasoning_tokens``.
- **Tool calls**: a request with ``tools`` whose last message is the user's, in a
  conversation without a tool result yet, gets one tool call (finish_reason
  ``tool_calls``) when ``tool_choice`` forces it (``"required"`` or a named function) or
  when the last text part of the user's message names a tool (whole word). The
  arguments are built from the tool's JSON Schema: every required property gets a
  placeholder (``"emulator"``, 1, true, [], {}). Once a tool result is in the
  conversation, replies are text: an agent's turn always ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import orjson

REASONING_WORDS = ("Let", " me", " think", " about", " this", " step", " by", " step", ".")
_PLACEHOLDERS = {
    "string": "emulator",
    "integer": 1,
    "number": 1,
    "boolean": True,
    "array": [],
    "object": {},
}


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text

    def argument_pieces(self) -> list[str]:
        """The arguments in two fragments, as providers stream them."""
        half = len(self.arguments) // 2
        return [p for p in (self.arguments[:half], self.arguments[half:]) if p]


@dataclass(frozen=True, slots=True)
class Script:
    reasoning_tokens: int
    tool_call: ToolCall | None


def reasoning_token(index: int) -> str:
    return REASONING_WORDS[index % len(REASONING_WORDS)]


def wants_reasoning(data: dict[str, Any]) -> bool:
    reasoning = data.get("reasoning")
    if isinstance(reasoning, dict):
        return reasoning.get("enabled") is not False and reasoning.get("effort") != "none"
    effort = data.get("reasoning_effort")
    if isinstance(effort, str):
        return effort != "none"
    thinking = data.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _tool_names(tools: list[Any]) -> list[str]:
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in ("system", "developer")


def _last_user_text(messages: list[Any]) -> str | None:
    """The text of the user's last part (an agent puts reminders before the prompt);
    None once the conversation holds a tool result: one tool call per conversation."""
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
        return None
    spoken = [m for m in messages if not _is_system(m)]
    last = spoken[-1] if spoken else None  # a trailing system note does not count
    if not isinstance(last, dict) or last.get("role") != "user":
        return None
    content = last.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [t for t in texts if isinstance(t, str)]
        return texts[-1] if texts else ""
    return ""


def _chosen_tool(data: dict[str, Any], names: list[str], text: str) -> str | None:
    choice = data.get("tool_choice")
    if choice == "none":
        return None
    if isinstance(choice, dict):
        named = (choice.get("function") or {}).get("name")
        if named in names:
            return named
    for name in names:
        if re.search(rf"\b{re.escape(name)}\b", text):
            return name
    return names[0] if choice == "required" and names else None


def _arguments(tools: list[Any], name: str) -> str:
    for tool in tools:
        function = tool.get("function") or {}
        if function.get("name") != name:
            continue
        schema = function.get("parameters") or {}
        properties = schema.get("properties") or {}
        args = {}
        for key in schema.get("required") or ():
            kind = (properties.get(key) or {}).get("type", "string")
            args[key] = _PLACEHOLDERS.get(kind if isinstance(kind, str) else "string", "emulator")
        return orjson.dumps(args).decode()
    return "{}"


def spoiled(script: Script, kind: int) -> Script:
    """``script`` with its tool call malformed (profile ``malformed_tool_calls``):
    ``kind`` 0 cuts the arguments' JSON short, 1 names a function the request does not
    have, 2 sends arguments that break the schema (a list where an object belongs)."""
    call = script.tool_call
    if call is None:
        return script
    if kind % 3 == 0:
        call = replace(call, arguments=call.arguments[:-1] or "{")
    elif kind % 3 == 1:
        call = replace(call, name=call.name + "_v2")
    else:
        call = replace(call, arguments='["emulator"]')
    return replace(script, tool_call=call)


def script_for(data: dict[str, Any], record_id: str, reasoning_tokens: int) -> Script | None:
    """The scripted parts of the reply to ``data``; None for a plain filler reply."""
    reasoning = reasoning_tokens if wants_reasoning(data) else 0
    tools = data.get("tools")
    call = None
    if isinstance(tools, list) and tools:
        text = _last_user_text(data.get("messages") or [])
        if text is not None:
            name = _chosen_tool(data, _tool_names(tools), text)
            if name is not None:
                call = ToolCall(f"call_{record_id[-12:]}", name, _arguments(tools, name))
    if not reasoning and call is None:
        return None
    return Script(reasoning, call)


# --- the reply ------------------------------------------------------------------------------
def _delta_chunk(head: dict[str, Any], delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
    return b"data: " + orjson.dumps({**head, "choices": [choice]}) + b"\n\n"


def stream_events(
    head: dict[str, Any], script: Script, content: list[str], finish_reason: str
) -> list[bytes]:
    """Every SSE event of the reply after the role event, the finish one included."""
    events = [
        _delta_chunk(head, {"reasoning_content": reasoning_token(i)})
        for i in range(script.reasoning_tokens)
    ]
    call = script.tool_call
    if call is None:
        events += [_delta_chunk(head, {"content": token}) for token in content]
        events.append(_delta_chunk(head, {}, finish_reason))
        return events
    opening = {
        "index": 0,
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }
    events.append(_delta_chunk(head, {"tool_calls": [opening]}))
    for piece in call.argument_pieces():
        piece_delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        events.append(_delta_chunk(head, piece_delta))
    events.append(_delta_chunk(head, {}, "tool_calls"))
    return events


def completion_tokens(script: Script, content: list[str]) -> int:
    if script.tool_call is not None:
        return script.reasoning_tokens + max(1, len(script.tool_call.arguments) // 4) + 4
    return script.reasoning_tokens + len(content)


def message(script: Script, content: list[str]) -> tuple[dict[str, Any], str | None]:
    """The non-streaming message, and the finish_reason it forces (tool_calls) if any."""
    body: dict[str, Any] = {"role": "assistant", "content": "".join(content), "refusal": None}
    if script.reasoning_tokens:
        body["reasoning_content"] = "".join(map(reasoning_token, range(script.reasoning_tokens)))
    call = script.tool_call
    if call is None:
        return body, None
    body["content"] = None
    body["tool_calls"] = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
    ]
    return body, "tool_calls"
