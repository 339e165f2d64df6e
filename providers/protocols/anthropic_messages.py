"""Anthropic Messages (``POST /v1/messages``) <-> the neutral (OpenAI chat) form.

``to_chat_body`` translates a client's Messages request into an OpenAI chat body:
system prompt, text / image / tool_use / tool_result / thinking blocks, tools and
tool_choice, stop sequences, thinking (-> ``reasoning``), ``cache_control`` hints kept
on text parts. Fields OpenAI-compatible upstreams do not know (``metadata`` apart from
``user_id``, ``context_management``, ``output_config``, ``container``, server tools ...)
are accepted and dropped, never a 400.

``StreamRenderer`` turns neutral events into Messages SSE events (``message_start``,
``content_block_start/delta/stop`` for text, thinking and tool_use, ``message_delta``
with usage and ``stop_reason``, ``message_stop``, ``ping``, ``error``);
``render_message`` renders a whole reply; ``error_body`` Anthropic's error shape.
"""

from __future__ import annotations

from typing import Any

import orjson

from .types import (
    ChatEvent,
    Finish,
    ProtocolError,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageReport,
)

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                "function_call": "tool_use", "content_filter": "refusal"}  # fmt: skip
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
               413: "request_too_large", 415: "invalid_request_error", 429: "rate_limit_error",
               503: "overloaded_error", 529: "overloaded_error"}  # fmt: skip
BLOCK_TYPES = ("text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking",
               "document", "server_tool_use", "web_search_tool_result", "search_result",
               "container_upload")  # fmt: skip
# "system" inside messages: Claude Code's mid-conversation-system beta.
ROLES = ("user", "assistant", "system")
MAX_STOP_SEQUENCES = 4  # OpenAI's limit; more are cut


def _bad(message: str, param: str | None = None) -> ProtocolError:
    return ProtocolError(400, message, param)


# --- request: Messages -> OpenAI chat -------------------------------------------------------
def _text_part(block: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "text", "text": block.get("text", "")}
    if block.get("cache_control"):
        part["cache_control"] = block["cache_control"]
    return part


def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    elif source.get("type") == "url":
        url = source.get("url", "")
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")  # fmt: skip
    return ""


def _blocks(content: Any, param: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise _bad(f"{param} must be a string or an array of content blocks.", param)
    for index, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            raise _bad(f"{param}[{index}] is not a known content block.", f"{param}[{index}]")
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            raise _bad(f"{param}[{index}].text must be a string.", f"{param}[{index}].text")
    return content


def _user_messages(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results become tool messages (first, as OpenAI wants them right after the
    assistant's calls); the rest one user message."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "tool_result":
            text = _result_text(block.get("content"))
            if block.get("is_error"):
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")),
                        "content": text})  # fmt: skip
        elif kind == "text":
            parts.append(_text_part(block))
        elif kind == "image" and (image := _image_part(block)) is not None:
            parts.append(image)
        elif kind == "document" and (block.get("source") or {}).get("type") == "text":
            parts.append({"type": "text", "text": block["source"].get("data", "")})
    if parts:
        out.append({"role": "user", "content": parts})
    return out


def _assistant_message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text, reasoning, calls = [], [], []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            text.append(block.get("text", ""))
        elif kind == "thinking":
            reasoning.append(block.get("thinking", ""))
        elif kind == "tool_use":
            arguments = orjson.dumps(block.get("input") or {}).decode()
            calls.append({"id": str(block.get("id", "")), "type": "function",
                          "function": {"name": str(block.get("name", "")),
                                       "arguments": arguments}})  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if not calls and message["content"] is None:
        message["content"] = ""
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    return message


def _messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _bad("messages: must be a non-empty array.", "messages")
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise _bad(f"{param}.role must be one of {', '.join(ROLES)}.", f"{param}.role")
        blocks = _blocks(message.get("content"), f"{param}.content")
        if message["role"] == "system":  # mid-conversation system (a Claude Code beta)
            out += _system(blocks)
        elif message["role"] == "user":
            out += _user_messages(blocks)
        else:
            out.append(_assistant_message(blocks))
    return out


def _system(system: Any) -> list[dict[str, Any]]:
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list):
        raise _bad("system: must be a string or an array of text blocks.", "system")
    parts = [_text_part(b) for b in system if isinstance(b, dict) and b.get("type") == "text"]
    return [{"role": "system", "content": parts}] if parts else []


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _bad("tools: must be an array.", "tools")
    out = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise _bad(f"tools[{index}].name: required.", f"tools[{index}].name")
        if tool.get("type") not in (None, "custom"):
            continue  # a server tool (web search, code execution ...): not available here
        function = {"name": tool["name"],
                    "parameters": tool.get("input_schema") or {"type": "object"}}  # fmt: skip
        if tool.get("description"):
            function["description"] = tool["description"]
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any, body: dict[str, Any]) -> None:
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind == "auto":
        body["tool_choice"] = "auto"
    elif kind == "any":
        body["tool_choice"] = "required"
    elif kind == "none":
        body["tool_choice"] = "none"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        body["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    if choice.get("disable_parallel_tool_use") is True:
        body["parallel_tool_calls"] = False


def _thinking(thinking: Any) -> dict[str, Any] | None:
    if not isinstance(thinking, dict):
        return None
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        return {"max_tokens": budget} if isinstance(budget, int) else {"enabled": True}
    if thinking.get("type") == "adaptive":
        return {"enabled": True}
    return None


def _check_top(request: dict[str, Any]) -> None:
    if not isinstance(request.get("model"), str) or not request["model"]:
        raise _bad("model: field required.", "model")
    max_tokens = request.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _bad("max_tokens: must be an integer >= 1 (it is required).", "max_tokens")
    if request.get("stream") is not None and not isinstance(request["stream"], bool):
        raise _bad("stream: must be a boolean.", "stream")
    stops = request.get("stop_sequences")
    if stops is not None and (
        not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)
    ):
        raise _bad("stop_sequences: must be an array of strings.", "stop_sequences")


def to_chat_body(request: Any) -> dict[str, Any]:
    """The OpenAI chat body for a Messages request; ProtocolError(400) if malformed."""
    if not isinstance(request, dict):
        raise _bad("The request body must be a JSON object.")
    _check_top(request)
    stream = request.get("stream") is True
    body: dict[str, Any] = {
        "model": request["model"],
        "messages": _system(request.get("system")) + _messages(request.get("messages")),
        "max_tokens": request["max_tokens"],
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    for name in ("temperature", "top_p", "top_k"):
        if request.get(name) is not None:
            body[name] = request[name]
    if request.get("stop_sequences"):
        body["stop"] = request["stop_sequences"][:MAX_STOP_SEQUENCES]
    if tools := _tools(request.get("tools")):
        body["tools"] = tools
        _tool_choice(request.get("tool_choice"), body)
    if (reasoning := _thinking(request.get("thinking"))) is not None:
        body["reasoning"] = reasoning
    user_id = (request.get("metadata") or {}).get("user_id")
    if isinstance(user_id, str):
        body["user"] = user_id
    return body


def count_text(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages a token count is made on (system, messages, tool definitions)."""
    body = to_chat_body({**request, "max_tokens": 1})
    tools = body.get("tools")
    extra = [{"role": "system", "content": orjson.dumps(tools).decode()}] if tools else []
    return body["messages"] + extra


# --- response: neutral events -> Messages ---------------------------------------------------
def sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


PING = sse("ping", {"type": "ping"})


def _usage(usage: UsageReport | None, prompt_estimate: int) -> dict[str, Any]:
    if usage is None:
        return {"input_tokens": prompt_estimate, "output_tokens": 0}
    return {
        "input_tokens": usage.prompt_tokens - usage.cached_tokens,
        "output_tokens": usage.completion_tokens,
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": 0,
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
        self.usage: UsageReport | None = None

    def start(self) -> bytes:
        message = {"id": self.message_id, "type": "message", "role": "assistant",
                   "model": self.model, "content": [], "stop_reason": None,
                   "stop_sequence": None, "usage": _usage(None, self.prompt_estimate)}  # fmt: skip
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
            signature = {"type": "signature_delta", "signature": ""}
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

    def render(self, event: ChatEvent) -> bytes:
        match event:
            case TextDelta(text):
                opening = b"" if self.block_kind == "text" else self._open(
                    "text", {"type": "text", "text": ""})  # fmt: skip
                return opening + self._delta({"type": "text_delta", "text": text})
            case ReasoningDelta(text):
                opening = b"" if self.block_kind == "thinking" else self._open(
                    "thinking", {"type": "thinking", "thinking": "", "signature": ""})  # fmt: skip
                return opening + self._delta({"type": "thinking_delta", "thinking": text})
            case ToolCallStart(index, call_id, name):
                block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                out = self._open("tool_use", block)
                self.tool_index = index
                return out
            case ToolCallDelta(index, arguments):
                if self.block_kind != "tool_use" or self.tool_index != index:
                    return b""  # a fragment for a call already closed: cannot be placed
                return self._delta({"type": "input_json_delta", "partial_json": arguments})
            case Finish(reason):
                self.stop_reason = STOP_REASONS.get(reason, "end_turn")
            case UsageReport():
                self.usage = event
            case StreamError(message):
                return self._close() + sse("error", error_body(502, message))
        return b""

    def finish(self) -> bytes:
        """``message_delta`` (stop_reason, usage) and ``message_stop``."""
        usage = _usage(self.usage, self.prompt_estimate)
        delta = {"type": "message_delta",
                 "delta": {"stop_reason": self.stop_reason or "end_turn", "stop_sequence": None},
                 "usage": usage}  # fmt: skip
        return self._close() + sse("message_delta", delta) + sse(
            "message_stop", {"type": "message_stop"})  # fmt: skip


def _tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def render_message(message_id: str, model: str, events: list[ChatEvent],
                   prompt_estimate: int) -> dict[str, Any]:  # fmt: skip
    """A whole reply (the events of a ``chat.completion``) as an Anthropic Message."""
    content: list[dict[str, Any]] = []
    thinking, text = "", ""
    calls: dict[int, dict[str, Any]] = {}
    stop, usage = "end_turn", None
    for event in events:
        match event:
            case ReasoningDelta(piece):
                thinking += piece
            case TextDelta(piece):
                text += piece
            case ToolCallStart(index, call_id, name):
                calls[index] = {"id": call_id, "name": name, "arguments": ""}
            case ToolCallDelta(index, piece) if index in calls:
                calls[index]["arguments"] += piece
            case Finish(reason):
                stop = STOP_REASONS.get(reason, "end_turn")
            case UsageReport():
                usage = event
    if thinking:
        content.append({"type": "thinking", "thinking": thinking, "signature": ""})
    if text:
        content.append({"type": "text", "text": text})
    for index in sorted(calls):
        call = calls[index]
        content.append({"type": "tool_use", "id": call["id"], "name": call["name"],
                        "input": _tool_input(call["arguments"])})  # fmt: skip
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": _usage(usage, prompt_estimate)}  # fmt: skip
