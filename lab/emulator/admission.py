"""Parsing and admission of a chat-completions request (before any waiting)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

import orjson

from .scripted import Script
from .state import ProviderState

LAST_MESSAGE_HEAD_CHARS = 80


@dataclass
class Reject(Exception):
    """An immediate error answer: HTTP status, message, and the log status to record."""

    status: int
    message: str
    code: str | None = None
    param: str | None = None
    log_status: str = "error"


@dataclass(frozen=True)
class ChatRequest:
    """The parts of a chat-completions body the emulator acts on."""

    model: str
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None  # the smaller of max_tokens / max_completion_tokens, if any
    script: Script | None = None  # reasoning / a tool call asked for (scripted.py)


def check_auth(provider: ProviderState, headers: list[tuple[bytes, bytes]]) -> None:
    """Raise Reject(401) unless the profile has no api_key or the Bearer token (or an
    Anthropic-style ``x-api-key``) matches."""
    key = provider.profile["api_key"]
    if key is None:
        return
    sent = b""
    for name, value in headers:
        if name.lower() == b"authorization":
            sent = value
        elif name.lower() == b"x-api-key" and not sent:
            sent = b"Bearer " + value
    if not hmac.compare_digest(sent, b"Bearer " + key.encode()):
        raise Reject(401, "Incorrect API key provided.", code="invalid_api_key")


def parse_body(body: bytes, record: dict[str, Any]) -> dict[str, Any]:
    """Decode the JSON object body and note its keys in the log record."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise Reject(400, "The request body is not valid JSON.", code="invalid_json") from None
    if not isinstance(data, dict):
        raise Reject(400, "The request body must be a JSON object.", code="invalid_json")
    record["request_body_keys"] = sorted(data)
    for key in ("stream_options", "max_tokens", "max_completion_tokens"):
        record[key] = data.get(key)
    record["model"] = data.get("model") if isinstance(data.get("model"), str) else None
    record["stream"] = data.get("stream") is True
    record["last_message_head"] = _last_message_head(data.get("messages"))
    record["last_message_part_types"] = last_message_part_types(data.get("messages"))
    return data


def last_message_part_types(messages: Any) -> list[str]:
    """The types of the last message's content parts (blocks), when it has a list."""
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return []
    content = messages[-1].get("content")
    parts = content if isinstance(content, list) else ()
    return [str(p.get("type")) for p in parts if isinstance(p, dict)]


def _last_message_head(messages: Any) -> str | None:
    """The first characters of the last message's text: lets a load test match its
    requests to log records through a gateway that rewrites everything else."""
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    content = messages[-1].get("content")
    return content[:LAST_MESSAGE_HEAD_CHARS] if isinstance(content, str) else None


def _max_tokens(data: dict[str, Any]) -> int | None:
    limits = []
    for key in ("max_tokens", "max_completion_tokens"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise Reject(400, f"'{key}' must be a non-negative integer.", param=key)
        limits.append(value)
    return min(limits) if limits else None


def validate_chat(data: dict[str, Any]) -> ChatRequest:
    """Check the fields the emulator needs; raise Reject(400) on a bad body."""
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise Reject(400, "you must provide a model parameter", param="model")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Reject(400, "'messages' must be a non-empty array.", param="messages")
    if not all(isinstance(m, dict) for m in messages):
        raise Reject(400, "each message must be an object.", param="messages")
    stream = data.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise Reject(400, "'stream' must be a boolean.", param="stream")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise Reject(400, "'stream_options' must be an object.", param="stream_options")
    include_usage = bool(stream) and bool((options or {}).get("include_usage"))
    return ChatRequest(model, messages, bool(stream), include_usage, _max_tokens(data))


def check_model(provider: ProviderState, request: ChatRequest, prompt_tokens: int) -> None:
    """Raise 404 if the model is not served here, 400 if the prompt exceeds the context."""
    profile = provider.profile
    if request.model not in profile["models"]:
        raise Reject(
            404,
            f"The model '{request.model}' does not exist or is not served by {provider.slug}.",
            code="model_not_found",
            param="model",
        )
    limit = profile["context_length"]
    if limit is not None and prompt_tokens > limit:
        raise Reject(
            400,
            f"This model's maximum context length is {limit} tokens; "
            f"the messages resulted in {prompt_tokens} tokens.",
            code="context_length_exceeded",
            param="messages",
        )
