"""Parse and validate a chat completion request body into a ``ChatRequest``.

Only what the gateway needs is checked; every other OpenAI field is passed through
to the provider untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .errors import GatewayError

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# Request fields that only some endpoints support: they filter the candidates (R3 issue).
FILTERING_PARAMETERS = ("tools", "tool_choice", "response_format", "logprobs", "top_logprobs")
MODEL_SUFFIXES = ("floor", "nitro")
_INT_FIELDS = ("max_tokens", "max_completion_tokens", "n", "top_logprobs")


@dataclass(slots=True)
class ChatRequest:
    """A validated chat request; ``body`` is what goes upstream (minus our own fields)."""

    body: dict[str, Any]
    model_slug: str
    model_suffix: str | None
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    provider_options: dict[str, Any] | None
    required_parameters: frozenset[str]


def _bad(message: str, param: str | None = None) -> GatewayError:
    return GatewayError(400, message, code="invalid_request_error", param=param)


def _check_int(body: dict, name: str, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"'{name}' must be an integer.", name)
    if value < minimum:
        raise _bad(f"'{name}' must be at least {minimum}.", name)
    return value


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty array.", "messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _bad(f"messages[{index}] must be an object.", "messages")
        if message.get("role") not in ROLES:
            raise _bad(f"messages[{index}].role must be one of {sorted(ROLES)}.", "messages")
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise _bad(f"messages[{index}].content must be a string or an array.", "messages")
    return messages


def _split_model(model: Any) -> tuple[str, str | None]:
    if not isinstance(model, str) or not model.strip():
        raise _bad("'model' must be a non-empty string.", "model")
    slug, _, suffix = model.partition(":")
    if suffix and suffix not in MODEL_SUFFIXES:
        raise _bad(f"Unknown model suffix ':{suffix}' (known: :floor, :nitro).", "model")
    return slug, suffix or None


def _check_stream(body: dict) -> tuple[bool, bool]:
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise _bad("'stream' must be a boolean.", "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise _bad("'stream_options' must be an object.", "stream_options")
    include_usage = bool(options and options.get("include_usage") is True)
    return stream, include_usage


def parse_chat_request(raw: bytes) -> ChatRequest:
    """Validate ``raw`` JSON; raises ``GatewayError(400)`` with a clear message."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _bad(f"Request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _bad("Request body must be a JSON object.")
    slug, suffix = _split_model(body.get("model"))
    messages = _check_messages(body.get("messages"))
    stream, include_usage = _check_stream(body)
    limits = {name: _check_int(body, name, 1) for name in _INT_FIELDS}
    provider = body.pop("provider", None)
    if provider is not None and not isinstance(provider, dict):
        raise _bad("'provider' must be an object.", "provider")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _bad("'tools' must be an array.", "tools")
    return ChatRequest(
        body=body,
        model_slug=slug,
        model_suffix=suffix,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=limits["max_completion_tokens"] or limits["max_tokens"],
        provider_options=provider,
        required_parameters=frozenset(p for p in FILTERING_PARAMETERS if body.get(p) is not None),
    )
