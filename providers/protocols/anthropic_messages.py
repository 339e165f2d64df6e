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
    ReasoningSignature,
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
SERVER_TOOL_SUFFIXES = ("_tool_use", "_tool_result")
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


def _document_part(block: dict[str, Any]) -> dict[str, Any] | None:
    """A document block as an OpenAI content part: plain text (or custom content) inline
    as text; a PDF, base64 or by URL, as the ``file`` part OpenAI and OpenRouter read (it
    was dropped: found with the anthropic SDK). A file-id source has nothing to send."""
    source = block.get("source") or {}
    kind = source.get("type")
    if kind == "text":
        return {"type": "text", "text": source.get("data", "")}
    if kind == "content":
        return {"type": "text", "text": _result_text(source.get("content"))}
    if kind == "base64":
        media_type = source.get("media_type") or "application/pdf"
        data = f"data:{media_type};base64,{source.get('data', '')}"
    elif kind == "url":
        data = source.get("url", "")
    else:
        return None
    title = block.get("title")
    filename = title if isinstance(title, str) and title else "document.pdf"
    return {"type": "file", "file": {"filename": filename, "file_data": data}}


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


# The fields of a content block that are read, each with its JSON type and whether it is
# required (Anthropic's schema): checked before any is read, so a wrong one is a 400 that
# names it, never a gateway error or a garbled upstream request.
_BLOCK_FIELDS: dict[str, tuple[tuple[str, type, bool], ...]] = {
    "text": (("text", str, True),),
    "thinking": (("thinking", str, True), ("signature", str, False)),
    "image": (("source", dict, True),),
    "document": (("source", dict, True), ("title", str, False)),
    "tool_use": (("id", str, False), ("name", str, False), ("input", dict, False)),
    "tool_result": (("tool_use_id", str, False),),
}
_SOURCE_FIELDS: dict[str, tuple[str, ...]] = {
    "base64": ("media_type", "data"), "url": ("url",), "text": ("data",),
}  # fmt: skip
_TYPE_NAMES = {str: "a string", dict: "an object"}


def _check_block(block: dict[str, Any], param: str) -> None:
    for name, kind, required in _BLOCK_FIELDS.get(block["type"], ()):
        value = block.get(name)
        if (value is not None or required) and not isinstance(value, kind):
            raise _bad(f"{param}.{name} must be {_TYPE_NAMES[kind]}.", f"{param}.{name}")
    source = block.get("source")
    if isinstance(source, dict):
        for name in _SOURCE_FIELDS.get(source.get("type"), ()):
            if source.get(name) is not None and not isinstance(source[name], str):
                raise _bad(f"{param}.source.{name} must be a string.", f"{param}.source.{name}")


def _known_block(kind: Any) -> bool:
    """A block type of Anthropic's API. Server-side tools' blocks (``mcp_tool_use``,
    ``web_fetch_tool_result``, ``code_execution_tool_result``, ... : one family, named so,
    and growing) are taken and dropped, as ``server_tool_use`` is: the tools ran at
    Anthropic, a provider here can do nothing with them (found with the anthropic SDK)."""
    return isinstance(kind, str) and (kind in BLOCK_TYPES or kind.endswith(SERVER_TOOL_SUFFIXES))


def _blocks(content: Any, param: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise _bad(f"{param} must be a string or an array of content blocks.", param)
    for index, block in enumerate(content):
        if not isinstance(block, dict) or not _known_block(block.get("type")):
            raise _bad(f"{param}[{index}] is not a known content block.", f"{param}[{index}]")
        _check_block(block, f"{param}[{index}]")
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
            tool = {"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")),
                    "content": text}  # fmt: skip
            if block.get("cache_control"):  # for Anthropic upstreams only (see __init__)
                tool["cache_control"] = block["cache_control"]
            out.append(tool)
        elif kind == "text":
            parts.append(_text_part(block))
        elif kind == "image" and (image := _image_part(block)) is not None:
            parts.append(image)
        elif kind == "document" and (document := _document_part(block)) is not None:
            parts.append(document)
    if parts:
        out.append({"role": "user", "content": parts})
    return out


def _assistant_message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text, reasoning, calls, signature = [], [], [], ""
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            text.append(block.get("text", ""))
        elif kind == "thinking":
            reasoning.append(block.get("thinking", ""))
            if isinstance(block.get("signature"), str) and block["signature"]:
                signature = block["signature"]
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
        if signature:
            message["reasoning_signature"] = signature
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
            out += _system(blocks, f"{param}.content")
        elif message["role"] == "user":
            out += _user_messages(blocks)
        else:
            out.append(_assistant_message(blocks))
    return out


def _system(system: Any, param: str = "system") -> list[dict[str, Any]]:
    """A system prompt: a string or text blocks (Anthropic refuses any other block there,
    and so does this, naming the block: it was dropped, or refused under its chat name)."""
    if system is None or system == "" or system == []:
        return []
    if isinstance(system, str):
        return [{"role": "system", "content": system}]
    if not isinstance(system, list):
        raise _bad(f"{param}: must be a string or an array of text blocks.", param)
    for index, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _bad(f"{param}[{index}]: must be a text block.", f"{param}[{index}]")
        if not isinstance(block.get("text"), str):
            raise _bad(f"{param}[{index}].text: must be a string.", f"{param}[{index}].text")
    parts = [_text_part(block) for block in system]
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
    metadata = request.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _bad("metadata: must be an object.", "metadata")


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
    user_id = (request.get("metadata") or {}).get("user_id")  # an object (_check_top)
    if isinstance(user_id, str):
        body["user"] = user_id
    for name in ("models", "provider"):  # OpenRouter's routing fields, validated as in chat
        if name in request:
            body[name] = request[name]
    return body


def count_text(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages a token count is made on (system, messages, tool definitions);
    ProtocolError(400) if malformed (count_tokens takes no ``max_tokens``)."""
    if not isinstance(request, dict):
        raise _bad("The request body must be a JSON object.")
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
        self.usage: UsageReport | None = None
        self.signature = ""  # the open thinking block's, from the provider

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
            case ReasoningSignature(signature):
                if self.block_kind == "thinking":
                    self.signature = signature
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
    thinking, text, signature = "", "", ""
    calls: dict[int, dict[str, Any]] = {}
    stop, usage = "end_turn", None
    for event in events:
        match event:
            case ReasoningDelta(piece):
                thinking += piece
            case ReasoningSignature(piece):
                signature = piece
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
        content.append({"type": "thinking", "thinking": thinking, "signature": signature})
    if text:
        content.append({"type": "text", "text": text})
    for index in sorted(calls):
        call = calls[index]
        content.append({"type": "tool_use", "id": call["id"], "name": call["name"],
                        "input": _tool_input(call["arguments"])})  # fmt: skip
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": _usage(usage, prompt_estimate)}  # fmt: skip


# --- upstream: the neutral (OpenAI chat) request -> a Messages request ----------------------
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; OpenAI's clients may omit it
MIN_THINKING_BUDGET = 1024  # Anthropic's minimum budget_tokens
EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                  "tool_use": "tool_calls", "pause_turn": "stop", "refusal": "content_filter",
                  "model_context_window_exceeded": "length"}  # fmt: skip


def upstream_headers(authorization: str | None) -> dict[str, str]:
    """Anthropic's headers: the key as ``x-api-key`` (the catalog stores ``Bearer <key>``)."""
    headers = {"content-type": "application/json", "accept": "text/event-stream",
               "anthropic-version": ANTHROPIC_VERSION}  # fmt: skip
    if authorization:
        scheme, _, token = authorization.partition(" ")
        headers["x-api-key"] = token if scheme.lower() == "bearer" and token else authorization
    return headers


def _source(url: str, default_media_type: str) -> dict[str, Any] | None:
    """A Messages ``source`` from a base64 data URL or an http(s) URL, else None."""
    if url.startswith("data:"):
        head, _, data = url[5:].partition(",")
        media_type, _, encoding = head.partition(";")
        if encoding != "base64" or not data:
            return None
        return {"type": "base64", "media_type": media_type or default_media_type, "data": data}
    if url.startswith(("http://", "https://")):
        return {"type": "url", "url": url}
    return None


def _image_block(url: str) -> dict[str, Any] | None:
    source = _source(url, "image/png")
    return None if source is None else {"type": "image", "source": source}


def _document_block(file: Any) -> dict[str, Any] | None:
    """OpenAI's ``file`` part (inline data or a URL) as a Messages document block."""
    data = file.get("file_data") if isinstance(file, dict) else None
    source = _source(data, "application/pdf") if isinstance(data, str) else None
    if source is None:
        return None  # a file_id names a file uploaded to OpenAI: nothing to send on
    block: dict[str, Any] = {"type": "document", "source": source}
    if isinstance(file.get("filename"), str) and file["filename"]:
        block["title"] = file["filename"]
    return block


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    """OpenAI content (a string or parts) as Messages blocks (text, image, document)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str) and part["text"]:
            block: dict[str, Any] = {"type": "text", "text": part["text"]}
            if part.get("cache_control"):
                block["cache_control"] = part["cache_control"]
            blocks.append(block)
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str) and (block := _image_block(url)) is not None:
                blocks.append(block)
        elif part.get("type") == "file" and (block := _document_block(part.get("file"))):
            blocks.append(block)
    return blocks


def _arguments_object(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    return _tool_input(arguments if isinstance(arguments, str) else "")


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    # Earlier thinking goes back only with its signature (Anthropic checks it; the
    # reply carried it as ``reasoning_signature``); unsigned thinking is omitted.
    blocks = _content_blocks(message.get("content"))
    signature, thinking = message.get("reasoning_signature"), message.get("reasoning_content")
    if isinstance(signature, str) and signature and isinstance(thinking, str):
        blocks.insert(0, {"type": "thinking", "thinking": thinking, "signature": signature})
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        function = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": str(call.get("id") or ""),
                       "name": str(function.get("name") or ""),
                       "input": _arguments_object(function.get("arguments"))})  # fmt: skip
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = _content_blocks(content) if isinstance(content, list) else None
    result: dict[str, Any] = {"type": "tool_result",
                              "tool_use_id": str(message.get("tool_call_id") or "")}  # fmt: skip
    result["content"] = blocks if blocks is not None else (content or "")
    if message.get("cache_control"):
        result["cache_control"] = message["cache_control"]
    return result


def _upstream_messages(messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, alternating user/assistant messages); consecutive turns of one role
    (tool results then the user's text) are merged, as Messages requires."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("system", "developer"):
            system += _content_blocks(message.get("content"))
            continue
        if role == "tool":
            role, blocks = "user", [_tool_result(message)]
        elif role == "assistant":
            blocks = _assistant_blocks(message)
        else:
            role, blocks = "user", _content_blocks(message.get("content"))
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def _upstream_tools(body: dict[str, Any], request: dict[str, Any]) -> None:
    tools = []
    for tool in body.get("tools") or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        entry = {"name": function["name"],
                 "input_schema": function.get("parameters") or {"type": "object"}}  # fmt: skip
        if function.get("description"):
            entry["description"] = function["description"]
        tools.append(entry)
    if not tools:
        return
    request["tools"] = tools
    choice, tool_choice = body.get("tool_choice"), None
    if choice == "auto":
        tool_choice = {"type": "auto"}
    elif choice == "required":
        tool_choice = {"type": "any"}
    elif choice == "none":
        tool_choice = {"type": "none"}
    elif isinstance(choice, dict) and isinstance((choice.get("function") or {}).get("name"), str):
        tool_choice = {"type": "tool", "name": choice["function"]["name"]}
    if body.get("parallel_tool_calls") is False:
        tool_choice = {**(tool_choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    if tool_choice is not None:
        request["tool_choice"] = tool_choice


def _thinking_budget(body: dict[str, Any]) -> int | None:
    """The thinking budget the neutral request asks for (``reasoning``, or OpenAI's
    ``reasoning_effort``), or None for no thinking."""
    reasoning = body.get("reasoning")
    effort = body.get("reasoning_effort")
    if isinstance(reasoning, dict):
        if reasoning.get("enabled") is False or reasoning.get("effort") == "none":
            return None
        if isinstance(reasoning.get("max_tokens"), int) and not isinstance(
            reasoning["max_tokens"], bool
        ):
            return max(MIN_THINKING_BUDGET, reasoning["max_tokens"])
        effort = reasoning.get("effort", effort)
        if not reasoning.get("enabled") and effort is None:
            return None
        return EFFORT_BUDGETS.get(effort if isinstance(effort, str) else "", 8192)
    if isinstance(effort, str) and effort != "none":
        return EFFORT_BUDGETS.get(effort, 8192)
    return None


def from_chat_body(body: dict[str, Any], max_output_tokens: int | None = None) -> dict[str, Any]:
    """The Messages request for a neutral (OpenAI chat) body, for an upstream that speaks
    Anthropic natively: system prompt, text and image parts, tool calls and results,
    tools and tool_choice, stop sequences, thinking, ``cache_control`` on text parts.
    Fields Messages has no equivalent for (``n``, ``seed``, penalties, logprobs,
    ``response_format`` ...) are dropped."""
    system, messages = _upstream_messages(body.get("messages") or [])
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        limit = min(DEFAULT_MAX_TOKENS, max_output_tokens or DEFAULT_MAX_TOKENS)
    request: dict[str, Any] = {
        "model": body.get("model"),
        "messages": messages,
        "max_tokens": limit,
        "stream": body.get("stream") is True,
    }
    if system:
        request["system"] = system
    budget = _thinking_budget(body)
    forced = body.get("tool_choice") == "required" or isinstance(body.get("tool_choice"), dict)
    if forced and body.get("tools"):
        budget = None  # Messages refuses thinking with a forced tool: the tool wins
    if budget is not None:
        # budget_tokens counts inside max_tokens: the answer keeps what was asked for,
        # within the endpoint's output cap (thinking dropped if no budget fits under it).
        total = limit + budget
        if max_output_tokens and total > max_output_tokens:
            total = max_output_tokens
            budget = min(budget, total - 1)
        if budget >= MIN_THINKING_BUDGET:
            request["thinking"] = {"type": "enabled", "budget_tokens": budget}
            request["max_tokens"] = total
        else:
            budget = None
            request["max_tokens"] = min(limit, max_output_tokens or limit)
    if budget is None:
        temperature = body.get("temperature")
        if isinstance(temperature, int | float) and not isinstance(temperature, bool):
            request["temperature"] = min(float(temperature), 1.0)  # Messages: 0..1
        for name in ("top_p", "top_k"):
            if body.get(name) is not None:
                request[name] = body[name]
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list) and (stops := [s for s in stop if isinstance(s, str) and s]):
        request["stop_sequences"] = stops
    _upstream_tools(body, request)
    if isinstance(body.get("user"), str):
        request["metadata"] = {"user_id": body["user"]}
    return request


# --- upstream: Messages SSE / a Message -> OpenAI chunks ------------------------------------
def openai_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic usage object in OpenAI's convention (``prompt_tokens`` includes cache
    reads and writes; docs/security.md)."""
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read + written
    completion = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    }


class UpstreamReader:
    """One upstream Messages stream read into OpenAI ``chat.completion.chunk`` payloads
    (JSON bytes, ``[DONE]`` at ``message_stop``), the form the relay handles: text ->
    ``content``, thinking -> ``reasoning_content``, tool_use -> ``tool_calls``,
    ``message_delta`` -> ``finish_reason`` and a usage chunk, ``error`` -> an error
    chunk, a thinking ``signature`` -> ``reasoning_signature``. ``ping`` is dropped."""

    def __init__(self) -> None:
        self.message_id, self.model = "", ""
        self.usage: dict[str, Any] = {}
        self.tools: dict[int, int] = {}  # content block index -> tool call index

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return orjson.dumps({"id": self.message_id, "object": "chat.completion.chunk",
                             "model": self.model, "choices": [choice]})  # fmt: skip

    def _usage_chunk(self) -> bytes:
        return orjson.dumps({"id": self.message_id, "object": "chat.completion.chunk",
                             "model": self.model, "choices": [],
                             "usage": openai_usage(self.usage)})  # fmt: skip

    def _block_start(self, event: dict[str, Any]) -> list[bytes]:
        block = event.get("content_block") or {}
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            return [self._chunk({"content": block["text"]})]
        if kind == "thinking":
            out = [self._chunk({"reasoning_content": block["thinking"]})] if block.get(
                "thinking") else []  # fmt: skip
            if block.get("signature"):
                out.append(self._chunk({"reasoning_signature": block["signature"]}))
            return out
        if kind == "tool_use":
            index = self.tools[int(event.get("index", 0))] = len(self.tools)
            arguments = orjson.dumps(block["input"]).decode() if block.get("input") else ""
            call = {"index": index, "id": str(block.get("id") or ""), "type": "function",
                    "function": {"name": str(block.get("name") or ""),
                                 "arguments": arguments}}  # fmt: skip
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
                self.usage.update({k: v for k, v in (event.get("usage") or {}).items()
                                   if v is not None})  # fmt: skip
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
        out = self.feed(orjson.dumps({"type": "message_start",
                                      "message": {**message, "usage": usage}}))  # fmt: skip
        for index, block in enumerate(message.get("content") or ()):
            if not isinstance(block, dict):
                continue
            out += self._block_start({"index": index, "content_block": block})
        out += self.feed(orjson.dumps({"type": "message_delta",
                                       "delta": {"stop_reason": message.get("stop_reason")
                                                 or "end_turn"}}))  # fmt: skip
        return [*out, b"[DONE]"]
