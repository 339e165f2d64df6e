"""A client's Responses request -> the neutral (OpenAI chat) body.

``to_chat_body`` translates ``instructions``, ``input`` (a string, or message /
``function_call`` / ``function_call_output`` / ``reasoning`` items), function tools (flat,
and those nested in a ``namespace`` tool), ``tool_choice``, ``max_output_tokens``,
``reasoning.effort`` and ``text.format``. Built-in tools (web search, file search, ...)
and their call items are dropped, never a 400; so are the fields an upstream of the
catalog cannot take (``store``, ``include``, ``prompt_cache_key``, ``client_metadata``,
``truncation`` ...). What needs a stored response (``previous_response_id``,
``conversation``, ``item_reference``, ``background``) is a 400 that says so.
"""

from __future__ import annotations

import re
from typing import Any

from ..types import ProtocolError
from .history import History

ROLES = ("user", "assistant", "system", "developer")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STATELESS = (
    "UberLLM stores no responses: send the whole conversation in 'input' (as with store: false)."
)
REFUSED = {
    "previous_response_id": f"'previous_response_id' is not supported. {STATELESS}",
    "conversation": f"'conversation' is not supported. {STATELESS}",
    "prompt": "'prompt' (a stored prompt template) is not supported: send 'instructions'.",
}
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


def bad(message: str, param: str | None = None) -> ProtocolError:
    return ProtocolError(400, message, param)


def _text_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    text = part.get("text", part.get("refusal"))
    if not isinstance(text, str):
        raise bad(f"{param}.text must be a string.", f"{param}.text")
    return {"type": "text", "text": text}


def _image_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        raise bad(
            f"{param}.image_url must be a URL or a data URL (file_id is not supported).",
            f"{param}.image_url",
        )
    image: dict[str, Any] = {"url": url}
    if isinstance(part.get("detail"), str):
        image["detail"] = part["detail"]
    return {"type": "image_url", "image_url": image}


def _file_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    data = part.get("file_data") or part.get("file_url")
    if not isinstance(data, str) or not data:
        raise bad(f"{param}: send file_data or file_url (file_id is not supported).", param)
    filename = part.get("filename")
    name = filename if isinstance(filename, str) and filename else "document.pdf"
    return {"type": "file", "file": {"filename": name, "file_data": data}}


def _audio_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    audio = part.get("input_audio")
    if not isinstance(audio, dict):
        raise bad(f"{param}.input_audio must be an object.", f"{param}.input_audio")
    return {"type": "input_audio", "input_audio": audio}


_PARTS = {
    "input_text": _text_part,
    "output_text": _text_part,
    "text": _text_part,
    "refusal": _text_part,
    "input_image": _image_part,
    "input_file": _file_part,
    "input_audio": _audio_part,
}


def content_parts(content: Any, param: str) -> list[dict[str, Any]]:
    """A message's content as chat parts; a string is one text part."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise bad(f"{param} must be a string or a non-empty array of content parts.", param)
    parts = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind not in _PARTS:
            raise bad(f"{where}.type must be one of {', '.join(_PARTS)}.", f"{where}.type")
        parts.append(_PARTS[kind](part, where))
    return parts


def _message(history: History, item: dict[str, Any], param: str) -> None:
    role = item.get("role")
    if role not in ROLES:
        raise bad(f"{param}.role must be one of {', '.join(ROLES)}.", f"{param}.role")
    history.add_message(role, content_parts(item.get("content"), f"{param}.content"))


def _string(item: dict[str, Any], name: str, param: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value:
        raise bad(f"{param}.{name} must be a non-empty string.", f"{param}.{name}")
    return value


def _function_call(history: History, item: dict[str, Any], param: str) -> None:
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise bad(f"{param}.arguments must be a string (JSON text).", f"{param}.arguments")
    name = _string(item, "name", param)
    history.add_call(_string(item, "call_id", param), name, arguments or "{}")


def _output_text(output: Any, param: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = [p.get("text") for p in output if isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    raise bad(f"{param}.output must be a string or an array of content parts.", f"{param}.output")


def _function_output(history: History, item: dict[str, Any], param: str) -> None:
    text = _output_text(item.get("output"), param)
    history.add_output(_string(item, "call_id", param), text)


def _reasoning(history: History, item: dict[str, Any], param: str) -> None:
    content = item.get("content")
    if content is not None and not isinstance(content, list):
        raise bad(f"{param}.content must be an array.", f"{param}.content")
    texts = [p.get("text") for p in content or () if isinstance(p, dict)]
    signature = item.get("encrypted_content")
    history.add_reasoning(
        "".join(t for t in texts if isinstance(t, str)),
        signature if isinstance(signature, str) else "",
    )


_ITEMS = {
    "message": _message,
    "function_call": _function_call,
    "function_call_output": _function_output,
    "reasoning": _reasoning,
}


def _server_item(kind: Any) -> bool:
    """A built-in tool's call or its output (web_search_call, local_shell_call_output,
    custom_tool_call ...): it ran elsewhere, or its tool is not offered here: dropped."""
    return isinstance(kind, str) and kind.endswith(("_call", "_call_output"))


def _input(history: History, items: Any) -> None:
    if isinstance(items, str):
        history.add_message("user", [{"type": "text", "text": items}])
        return
    if not isinstance(items, list) or not items:
        raise bad("'input' must be a string or a non-empty array of items.", "input")
    for index, item in enumerate(items):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise bad(f"{param} must be an object.", param)
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise bad(f"{param}.type must be a string.", f"{param}.type")
        if kind == "item_reference":
            raise bad(f"{param}: item_reference is not supported. {STATELESS}", f"{param}.type")
        if kind in _ITEMS:
            _ITEMS[kind](history, item, param)
        elif not _server_item(kind):
            raise bad(f"{param}.type must be one of {', '.join(_ITEMS)}.", f"{param}.type")


def _function_tool(tool: dict[str, Any], param: str) -> dict[str, Any]:
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        raise bad(f"{param}.name must be 1-64 of a-z, A-Z, 0-9, _ and -.", f"{param}.name")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise bad(f"{param}.parameters must be a JSON Schema object.", f"{param}.parameters")
    function: dict[str, Any] = {"name": name, "parameters": parameters or {"type": "object"}}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _namespace(tool: dict[str, Any], param: str) -> list[dict[str, Any]]:
    inner = tool.get("tools")
    if not isinstance(inner, list):
        raise bad(f"{param}.tools must be an array.", f"{param}.tools")
    return [
        _function_tool(t, f"{param}.tools[{i}]")
        for i, t in enumerate(inner)
        if isinstance(t, dict) and t.get("type", "function") == "function"
    ]


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    """Function tools (a namespace's flattened), first of each name; the rest dropped."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise bad("'tools' must be an array.", "tools")
    out: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(tools):
        param = f"tools[{index}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise bad(f"{param}.type is required.", f"{param}.type")
        if tool["type"] == "function":
            found = [_function_tool(tool, param)]
        elif tool["type"] == "namespace":
            found = _namespace(tool, param)
        else:
            continue  # a built-in tool (web_search, file_search, ...): not offered here
        for chat_tool in found:
            out.setdefault(chat_tool["function"]["name"], chat_tool)
    return list(out.values())


def namespaces(tools: Any) -> dict[str, str]:
    """The namespace of each function nested in a ``namespace`` tool, by function name."""
    found: dict[str, str] = {}
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type") == "namespace":
            for inner in tool.get("tools") or ():
                if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                    found.setdefault(inner["name"], str(tool.get("name", "")))
    return found


def _tool_choice(choice: Any, names: list[str]) -> Any:
    """The chat ``tool_choice``, or None to leave it out."""
    if choice in ("auto", "none", "required"):
        return choice
    if not isinstance(choice, dict):
        if choice is None:
            return None
        raise bad("'tool_choice' must be auto, none, required or an object.", "tool_choice")
    if choice.get("type") == "function":
        if choice.get("name") not in names:
            raise bad("'tool_choice' names a function that is not in 'tools'.", "tool_choice")
        return {"type": "function", "function": {"name": choice["name"]}}
    if choice.get("type") == "allowed_tools":
        return "required" if choice.get("mode") == "required" else "auto"
    return None  # a built-in tool: not offered here


def _tools(request: dict[str, Any], body: dict[str, Any]) -> None:
    tools = chat_tools(request.get("tools"))
    if not tools:
        return
    body["tools"] = tools
    choice = _tool_choice(request.get("tool_choice"), [t["function"]["name"] for t in tools])
    if choice is not None:
        body["tool_choice"] = choice
    if isinstance(request.get("parallel_tool_calls"), bool):
        body["parallel_tool_calls"] = request["parallel_tool_calls"]


def _object(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The object ``request[name]``: empty when absent or null, a 400 when not an object."""
    value = request.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(f"'{name}' must be an object.", name)
    return value


def _reasoning_effort(reasoning: dict[str, Any]) -> dict[str, Any] | None:
    effort = reasoning.get("effort")
    if effort is None:
        return None
    if effort not in EFFORTS:
        raise bad(f"'reasoning.effort' must be one of {', '.join(EFFORTS)}.", "reasoning.effort")
    return {"effort": effort}


def _response_format(text: dict[str, Any]) -> dict[str, Any] | None:
    fmt = text.get("format")
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    raise bad("'text.format.type' must be text, json_object or json_schema.", "text.format.type")


def _check_top(request: dict[str, Any]) -> None:
    for name, message in REFUSED.items():
        if request.get(name) is not None:
            raise bad(message, name)
    if request.get("background") is True:
        raise bad("'background' responses are not supported: stream instead.", "background")
    if not isinstance(request.get("model"), str) or not request["model"]:
        raise bad("'model' must be a non-empty string.", "model")
    if request.get("stream") is not None and not isinstance(request["stream"], bool):
        raise bad("'stream' must be a boolean.", "stream")
    instructions = request.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise bad("'instructions' must be a string.", "instructions")
    limit = request.get("max_output_tokens")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise bad("'max_output_tokens' must be an integer >= 1.", "max_output_tokens")


def _history(request: dict[str, Any]) -> list[dict[str, Any]]:
    history = History()
    if request.get("instructions"):
        history.add_message("system", [{"type": "text", "text": request["instructions"]}])
    _input(history, request.get("input"))
    return history.finished()


def _extras(request: dict[str, Any], body: dict[str, Any]) -> None:
    for name in ("temperature", "top_p"):
        if request.get(name) is not None:
            body[name] = request[name]
    if request.get("max_output_tokens") is not None:
        body["max_tokens"] = request["max_output_tokens"]
    if (reasoning := _reasoning_effort(_object(request, "reasoning"))) is not None:
        body["reasoning"] = reasoning
    if (response_format := _response_format(_object(request, "text"))) is not None:
        body["response_format"] = response_format
    user = request.get("user") or request.get("safety_identifier")
    if isinstance(user, str):
        body["user"] = user
    for name in ("models", "provider"):  # OpenRouter's routing fields, validated as in chat
        if name in request:
            body[name] = request[name]


def to_chat_body(request: Any) -> dict[str, Any]:
    """The OpenAI chat body for a Responses request; ProtocolError(400) if malformed."""
    if not isinstance(request, dict):
        raise bad("The request body must be a JSON object.")
    _check_top(request)
    stream = request.get("stream") is True
    body: dict[str, Any] = {
        "model": request["model"],
        "messages": _history(request),
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    _tools(request, body)
    _extras(request, body)
    return body
