"""Strict checks of what the OpenAI Chat Completions spec defines, before any upstream call.

Types, ranges, content parts, tool definitions and their consistency with
``tool_choice``. A failed check raises ``GatewayError(400)`` naming the ``param`` (the
path of the bad field, e.g. ``messages[2].tool_call_id``). Fields the spec does not
define are not looked at: they pass through to the provider.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any

import orjson

from .errors import GatewayError

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
TOOL_CHOICE_MODES = ("none", "auto", "required")
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# (name, low, high): numbers the spec bounds.
_RANGES = (
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("frequency_penalty", -2.0, 2.0),
    ("presence_penalty", -2.0, 2.0),
)


def bad(message: str, param: str | None = None) -> GatewayError:
    return GatewayError(400, message, code="invalid_request_error", param=param)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_ranges(body: dict[str, Any]) -> None:
    for name, low, high in _RANGES:
        value = body.get(name)
        if value is None:
            continue
        if not _is_number(value) or not math.isfinite(value):
            raise bad(f"'{name}' must be a number between {low:g} and {high:g}.", name)
        if not low <= value <= high:
            raise bad(f"'{name}' must be between {low:g} and {high:g}, got {value}.", name)


MAX_JSON_INT = 2**64 - 1  # the largest integer orjson reads as one


# --- JSON nesting --------------------------------------------------------------------------
DEFAULT_MAX_JSON_DEPTH = 128  # the MAX_JSON_DEPTH setting (routing/config.py LiveConfig)
ENCODER_MAX_DEPTH = 254  # orjson.dumps refuses deeper ("Recursion limit reached")
_chains = threading.local()  # per thread: (limit, outer list, innermost list)


def check_depth(body: Any, limit: int = DEFAULT_MAX_JSON_DEPTH) -> None:
    """A 400 naming the field if the decoded ``body`` nests deeper than ``limit`` levels
    (the body itself is level 1). Passed-through fields go upstream as they came, and the
    upstream encoder refuses past 254 levels: without this bound such a request failed at
    every provider, as if they were broken."""
    if _deeper(body, limit):
        raise too_deep(_deep_param(body, limit), limit)


def _deeper(node: Any, limit: int) -> bool:
    """Whether ``node`` (level 1) nests deeper than ``limit`` levels. No Python walk: the
    encoder's own depth check (C speed, about a fifth of the parse) on ``node`` wrapped in
    ``254 - limit`` arrays. A limit of 254 or more is not checked here (the encoder then
    refuses at the call: ``routing.gateway.call.request_body``)."""
    if limit >= ENCODER_MAX_DEPTH:
        return False
    chain = getattr(_chains, "chain", None)
    if chain is None or chain[0] != limit:
        inner: list[Any] = [None]
        outer = inner
        for _ in range(ENCODER_MAX_DEPTH - limit - 1):
            outer = [outer]
        chain = _chains.chain = (limit, outer, inner)
    _, outer, inner = chain
    inner[0] = node
    try:
        orjson.dumps(outer)
    except orjson.JSONEncodeError as exc:
        if "Recursion" not in str(exc):
            raise bad(f"The request body cannot be encoded: {exc}.") from None
        return True
    finally:
        inner[0] = None
    return False


def too_deep(param: str | None, limit: int) -> GatewayError:
    where = f"'{param}' is" if param else "The request body is"
    message = f"{where} nested too deeply: at most {limit} levels of JSON nesting are accepted"
    return bad(f"{message} (the request body is the first).", param)


def _deep_param(body: Any, limit: int) -> str | None:
    """The path (at most 4 parts) to the first field that nests too deep (only on the way
    to a 400: one depth check of each child per part)."""
    path: list[str | int] = []
    node = body
    while len(path) < 4 and isinstance(node, dict | list):
        limit -= 1
        items = node.items() if isinstance(node, dict) else enumerate(node)
        found = next(((k, v) for k, v in items if _deeper(v, limit)), None)
        if found is None:
            break
        path.append(found[0])
        node = found[1]
    return _param(path)


def _param(path: list[str | int]) -> str | None:
    """``a[0].b``: cut before a run of indices (nesting, not a field)."""
    text = ""
    for index, part in enumerate(path[:4]):
        if isinstance(part, int):
            if index + 1 < len(path) and isinstance(path[index + 1], int):
                break
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or None


def check_int(body: dict[str, Any], name: str, low: int, high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) > MAX_JSON_INT:
        # orjson reads digits beyond 64 bits as a float: the client did send an integer.
        raise bad(f"'{name}' is too large: at most {high or MAX_JSON_INT}.", name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"'{name}' must be an integer.", name)
    if value < low:
        raise bad(f"'{name}' must be at least {low}.", name)
    if high is not None and value > high:
        raise bad(f"'{name}' must be at most {high}.", name)
    return value


def check_n(body: dict[str, Any]) -> None:
    n = check_int(body, "n", 1)
    if n is not None and n > 1:
        raise bad(
            f"'n' = {n} is not supported: UberLLM returns exactly one choice (n=1). "
            "Send n separate requests for several completions.",
            "n",
        )


def check_max_tokens(body: dict[str, Any]) -> int | None:
    max_tokens = check_int(body, "max_tokens", 1)
    max_completion = check_int(body, "max_completion_tokens", 1)
    if max_tokens is not None and max_completion is not None:
        raise bad(
            "Set either 'max_tokens' or 'max_completion_tokens', not both "
            "('max_tokens' is the deprecated name of 'max_completion_tokens').",
            "max_tokens",
        )
    return max_completion if max_completion is not None else max_tokens


def check_misc(body: dict[str, Any]) -> None:
    """logprobs / top_logprobs, stop, seed, user, parallel_tool_calls, logit_bias."""
    for name in ("logprobs", "parallel_tool_calls"):
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise bad(f"'{name}' must be a boolean.", name)
    if check_int(body, "top_logprobs", 0, 20) is not None and body.get("logprobs") is not True:
        raise bad("'top_logprobs' requires 'logprobs': true.", "top_logprobs")
    check_int(body, "seed", -(2**63))
    stop = body.get("stop")
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise bad("'stop' must be a string or an array of strings.", "stop")
        if len(stop) > 4:
            raise bad("'stop' takes at most 4 sequences.", "stop")
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise bad("'user' must be a string.", "user")
    bias = body.get("logit_bias")
    if bias is not None and not _is_bias(bias):
        raise bad("'logit_bias' must map token ids to numbers in [-100, 100].", "logit_bias")


def _is_bias(bias: Any) -> bool:
    return isinstance(bias, dict) and all(_is_number(v) and -100 <= v <= 100 for v in bias.values())


# --- messages ------------------------------------------------------------------------------
def _check_parts(parts: list[Any], param: str) -> None:
    if not parts:
        raise bad(f"{param} must not be an empty array.", param)
    for index, part in enumerate(parts):
        where = f"{param}[{index}]"
        if not isinstance(part, dict):
            raise bad(f"{where} must be an object.", where)
        kind = part.get("type")
        if kind not in PART_TYPES:
            raise bad(
                f"{where}.type must be one of {', '.join(PART_TYPES)}, got {kind!r}.",
                f"{where}.type",
            )
        if kind in ("text", "refusal") and not isinstance(part.get(kind), str):
            raise bad(f"{where}.{kind} must be a string.", f"{where}.{kind}")
        if kind in ("image_url", "input_audio", "file") and not isinstance(part.get(kind), dict):
            raise bad(f"{where}.{kind} must be an object.", f"{where}.{kind}")


def _check_content(message: dict[str, Any], param: str, *, required: bool) -> None:
    content = message.get("content")
    if content is None:
        if required:
            raise bad(f"{param} is required for this role (a string or an array of parts).", param)
        return
    if isinstance(content, list):
        _check_parts(content, param)
    elif not isinstance(content, str):
        raise bad(f"{param} must be a string or an array of content parts.", param)


def _check_tool_calls(calls: Any, param: str) -> None:
    if not isinstance(calls, list):
        raise bad(f"{param} must be an array.", param)
    for index, call in enumerate(calls):
        where = f"{param}[{index}]"
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            raise bad(f"{where} must be an object with a string 'id'.", where)
        function = call.get("function")
        if call.get("type", "function") == "function" and not (
            isinstance(function, dict)
            and isinstance(function.get("name"), str)
            and isinstance(function.get("arguments"), str)
        ):
            raise bad(f"{where}.function needs a string 'name' and 'arguments'.", where)


def _check_message(message: Any, index: int) -> None:
    param = f"messages[{index}]"
    if not isinstance(message, dict):
        raise bad(f"{param} must be an object.", param)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise bad(f"{param}.role must be one of {', '.join(ROLES)}.", f"{param}.role")
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is not None:
            _check_tool_calls(calls, f"{param}.tool_calls")
        has_call = bool(calls) or message.get("function_call") is not None
        _check_content(message, f"{param}.content", required=not has_call)
    else:
        _check_content(message, f"{param}.content", required=True)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise bad(f"{param}.tool_call_id is required on a tool message.", f"{param}.tool_call_id")
    if role == "function" and not isinstance(message.get("name"), str):
        raise bad(f"{param}.name is required on a function message.", f"{param}.name")
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise bad(f"{param}.name must be a string.", f"{param}.name")


def check_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise bad("'messages' must be a non-empty array.", "messages")
    for index, message in enumerate(messages):
        _check_message(message, index)
    return messages


# --- tools, tool_choice, response_format ---------------------------------------------------
def _tool_name(tool: Any, index: int) -> str:
    param = f"tools[{index}]"
    if not isinstance(tool, dict):
        raise bad(f"{param} must be an object.", param)
    kind = tool.get("type")
    if kind not in ("function", "custom"):
        raise bad(f"{param}.type must be 'function' or 'custom', got {kind!r}.", f"{param}.type")
    spec = tool.get(kind)
    if not isinstance(spec, dict):
        raise bad(f"{param}.{kind} must be an object.", f"{param}.{kind}")
    name = spec.get("name")
    if not isinstance(name, str) or not _FUNCTION_NAME.match(name):
        raise bad(
            f"{param}.{kind}.name is required: 1-64 letters, digits, '_' or '-'.",
            f"{param}.{kind}.name",
        )
    if kind == "function":
        parameters = spec.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise bad(
                f"{param}.function.parameters must be a JSON Schema object.",
                f"{param}.function.parameters",
            )
    return name


def check_tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise bad("'tools' must be an array.", "tools")
    names = {_tool_name(tool, i) for i, tool in enumerate(tools or ())}
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not tools:
        raise bad("'tool_choice' is only allowed when 'tools' are given.", "tool_choice")
    if isinstance(choice, str):
        if choice not in TOOL_CHOICE_MODES:
            raise bad(
                f"'tool_choice' must be one of {', '.join(TOOL_CHOICE_MODES)} or an "
                "object naming a tool.",
                "tool_choice",
            )
        return
    if not isinstance(choice, dict):
        raise bad("'tool_choice' must be a string or an object.", "tool_choice")
    kind = choice.get("type")
    if kind == "allowed_tools":
        return
    spec = choice.get(kind) if kind in ("function", "custom") else None
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise bad(
            '\'tool_choice\' must name a tool: {"type": "function", "function": {"name": ...}}.',
            "tool_choice",
        )
    if spec["name"] not in names:
        raise bad(
            f"'tool_choice' names tool {spec['name']!r}, which is not in 'tools'.", "tool_choice"
        )


def check_response_format(body: dict[str, Any]) -> None:
    value = body.get("response_format")
    if value is None:
        return
    if not isinstance(value, dict) or value.get("type") not in RESPONSE_FORMATS:
        raise bad(
            "'response_format' must be an object whose type is one of "
            f"{', '.join(RESPONSE_FORMATS)}.",
            "response_format",
        )
    if value["type"] == "json_schema":
        schema = value.get("json_schema")
        if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
            raise bad(
                "'response_format.json_schema' needs a 'name' (and a 'schema').",
                "response_format.json_schema",
            )


def check_stream_options(body: dict[str, Any], stream: bool) -> bool:
    """Whether usage is asked for; stream_options only make sense with ``stream``."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise bad("'stream_options' must be an object.", "stream_options")
    if not stream:
        raise bad("'stream_options' is only allowed when 'stream' is true.", "stream_options")
    include_usage = options.get("include_usage")
    if include_usage is not None and not isinstance(include_usage, bool):
        raise bad(
            "'stream_options.include_usage' must be a boolean.", "stream_options.include_usage"
        )
    return include_usage is True
