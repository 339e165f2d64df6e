"""A client's Messages request -> the neutral (OpenAI chat) body.

``to_chat_body`` translates system prompt, text / image / document / tool_use /
tool_result / thinking blocks, tools and tool_choice, stop sequences, thinking (->
``reasoning``), ``cache_control`` hints kept on text parts. Fields OpenAI-compatible
upstreams do not know (``metadata`` apart from ``user_id``, ``context_management``,
``output_config``, ``container``, server tools ...) are accepted and dropped, never a 400.
"""

from __future__ import annotations

import binascii
from collections.abc import Collection
from typing import Any

import orjson

from ..types import (
    ProtocolError,
)

BLOCK_TYPES = (
    "text",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
    "container_upload",
)
SERVER_TOOL_SUFFIXES = ("_tool_use", "_tool_result")
ROLES = ("user", "assistant")
# "system" inside messages: only with Claude Code's mid-conversation-system beta (Anthropic
# refuses it otherwise); a thinking budget may pass max_tokens only with interleaved thinking.
SYSTEM_BETA = "mid-conversation-system-"
INTERLEAVED_BETA = "interleaved-thinking-"
MIN_THINKING_BUDGET = 1024  # Anthropic's floor
MAX_STOP_SEQUENCES = 4  # OpenAI's limit; more are cut


def _has_beta(betas: Collection[str], prefix: str) -> bool:
    return any(beta.strip().startswith(prefix) for beta in betas)


def _bad(message: str, param: str | None = None) -> ProtocolError:
    return ProtocolError(400, message, param)


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
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
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
    "base64": ("media_type", "data"),
    "url": ("url",),
    "text": ("data",),
}
_TYPE_NAMES = {str: "a string", dict: "an object"}


def _is_base64(data: str) -> bool:
    try:
        binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _check_source(source: dict[str, Any], param: str) -> None:
    for name in _SOURCE_FIELDS.get(source.get("type"), ()):
        if source.get(name) is not None and not isinstance(source[name], str):
            raise _bad(f"{param}.source.{name} must be a string.", f"{param}.source.{name}")
    data = source.get("data")
    if source.get("type") == "base64" and isinstance(data, str) and not _is_base64(data):
        raise _bad(f"{param}.source.data: invalid base64 data.", f"{param}.source.data")


def _check_block(block: dict[str, Any], param: str) -> None:
    for name, kind, required in _BLOCK_FIELDS.get(block["type"], ()):
        value = block.get(name)
        if (value is not None or required) and not isinstance(value, kind):
            raise _bad(f"{param}.{name} must be {_TYPE_NAMES[kind]}.", f"{param}.{name}")
    if isinstance(block.get("source"), dict):
        _check_source(block["source"], param)


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
            tool = {
                "role": "tool",
                "tool_call_id": str(block.get("tool_use_id", "")),
                "content": text,
            }
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
            calls.append(
                {
                    "id": str(block.get("id", "")),
                    "type": "function",
                    "function": {"name": str(block.get("name", "")), "arguments": arguments},
                }
            )
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


def _messages(messages: Any, betas: Collection[str]) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _bad("messages: must be a non-empty array.", "messages")
    roles = (*ROLES, "system") if _has_beta(betas, SYSTEM_BETA) else ROLES
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict) or message.get("role") not in roles:
            raise _bad(f"{param}.role must be one of {', '.join(roles)}.", f"{param}.role")
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
        function = {
            "name": tool["name"],
            "parameters": tool.get("input_schema") or {"type": "object"},
        }
        if tool.get("description"):
            function["description"] = tool["description"]
        out.append({"type": "function", "function": function})
    return out


TOOL_CHOICES = ("auto", "any", "tool", "none")


def _check_tool_choice(choice: Any) -> None:
    """Anthropic's schema: an object whose ``type`` is one of TOOL_CHOICES, ``tool``
    with the tool's ``name``."""
    if choice is None:
        return
    if not isinstance(choice, dict) or choice.get("type") not in TOOL_CHOICES:
        raise _bad(f"tool_choice.type: must be one of {', '.join(TOOL_CHOICES)}.", "tool_choice")
    if choice["type"] == "tool" and not (isinstance(choice.get("name"), str) and choice["name"]):
        message = 'tool_choice.name: required when tool_choice.type is "tool".'
        raise _bad(message, "tool_choice.name")


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


def _check_thinking(thinking: Any, max_tokens: int | None, betas: Collection[str]) -> None:
    """An enabled thinking budget: an integer >= 1024 and below ``max_tokens`` (unless
    interleaved thinking; ``max_tokens`` None: count_tokens, which has none)."""
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
        message = f"thinking.budget_tokens: must be an integer >= {MIN_THINKING_BUDGET}."
        raise _bad(message, "thinking.budget_tokens")
    capped = max_tokens is not None and not _has_beta(betas, INTERLEAVED_BETA)
    if capped and budget >= max_tokens:
        message = "thinking.budget_tokens: must be less than max_tokens."
        raise _bad(message, "thinking.budget_tokens")


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


def to_chat_body(request: Any, betas: Collection[str] = ()) -> dict[str, Any]:
    """The OpenAI chat body for a Messages request; ProtocolError(400) if malformed.
    ``betas``: the ``anthropic-beta`` header's names (some loosen Anthropic's rules)."""
    return _chat_body(request, betas, counting=False)


def _chat_body(request: Any, betas: Collection[str], *, counting: bool) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise _bad("The request body must be a JSON object.")
    _check_top(request)
    _check_tool_choice(request.get("tool_choice"))
    _check_thinking(request.get("thinking"), None if counting else request["max_tokens"], betas)
    stream = request.get("stream") is True
    messages = _messages(request.get("messages"), betas)
    body: dict[str, Any] = {
        "model": request["model"],
        "messages": _system(request.get("system")) + messages,
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


def count_text(request: dict[str, Any], betas: Collection[str] = ()) -> list[dict[str, Any]]:
    """The chat messages a token count is made on (system, messages, tool definitions);
    ProtocolError(400) if malformed (count_tokens takes no ``max_tokens``)."""
    if not isinstance(request, dict):
        raise _bad("The request body must be a JSON object.")
    body = _chat_body({**request, "max_tokens": 1}, betas, counting=True)
    tools = body.get("tools")
    extra = [{"role": "system", "content": orjson.dumps(tools).decode()}] if tools else []
    return body["messages"] + extra
