"""The neutral (OpenAI chat) request -> a request to an Anthropic Messages upstream."""

from __future__ import annotations

from typing import Any

from .render import tool_input

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096  # Messages requires max_tokens; OpenAI's clients may omit it
MIN_THINKING_BUDGET = 1024  # Anthropic's minimum budget_tokens
EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


def upstream_headers(authorization: str | None) -> dict[str, str]:
    """Anthropic's headers: the key as ``x-api-key`` (the catalog stores ``Bearer <key>``)."""
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": ANTHROPIC_VERSION,
    }
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
    return tool_input(arguments if isinstance(arguments, str) else "")


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
        blocks.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or ""),
                "name": str(function.get("name") or ""),
                "input": _arguments_object(function.get("arguments")),
            }
        )
    return blocks


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = _content_blocks(content) if isinstance(content, list) else None
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": str(message.get("tool_call_id") or ""),
    }
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
        entry = {
            "name": function["name"],
            "input_schema": function.get("parameters") or {"type": "object"},
        }
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
