"""Parse and validate a chat completion request body into a ``ChatRequest``.

What the OpenAI spec defines is checked strictly (``routing.validate``); every other
field is passed through to the provider untouched. OpenRouter's own fields are taken
out of the body: ``provider`` (routing options), ``models`` (the fallback list) and
``usage`` (``{"include": true}``: usage in the stream, like ``stream_options``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from . import validate
from .validate import bad

# Request fields that only some endpoints support: they filter the candidates (R3 issue).
# (tool_choice goes with tools: an endpoint that takes tools takes tool_choice.)
FILTERING_PARAMETERS = ("tools", "response_format", "logprobs", "top_logprobs")
MODEL_SUFFIXES = ("floor", "nitro")
MAX_FALLBACK_MODELS = 8


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
    fallback_models: tuple[str, ...] = ()  # OpenRouter ``models``, after ``model``

    def sent_parameters(self) -> frozenset[str]:
        """Every top-level field that asks for something (``provider.require_parameters``
        filters on them): not null, false or empty (``asks_for``)."""
        return frozenset(k for k, v in self.body.items() if asks_for(v))


def asks_for(value: Any) -> bool:
    """Whether a field's value asks for a feature: ``logprobs: false`` or ``tools: []``
    ask for none, as OpenAI and OpenRouter read them (filtering endpoints on them left a
    client that always sends ``logprobs: false`` with no endpoint at all)."""
    return value is not None and value is not False and value != [] and value != {}


def _split_model(model: Any, param: str = "model") -> tuple[str, str | None]:
    if not isinstance(model, str) or not model.strip():
        raise bad(f"'{param}' must be a non-empty string.", param)
    slug, _, suffix = model.partition(":")
    if suffix and suffix not in MODEL_SUFFIXES:
        raise bad(f"Unknown model suffix ':{suffix}' (known: :floor, :nitro).", param)
    return slug, suffix or None


def _check_stream(body: dict) -> tuple[bool, bool]:
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad("'stream' must be a boolean.", "stream")
    include_usage = validate.check_stream_options(body, stream)
    usage = body.pop("usage", None)
    if usage is not None and not isinstance(usage, dict):
        raise bad("'usage' must be an object such as {\"include\": true}.", "usage")
    return stream, include_usage or (stream and bool(usage and usage.get("include") is True))


def _models(body: dict) -> tuple[Any, tuple[str, ...]]:
    """(the model asked for, the fallback models after it) from ``model`` and ``models``."""
    models = body.pop("models", None)
    if models is None:
        return body.get("model"), ()
    if not isinstance(models, list) or not models or len(models) > MAX_FALLBACK_MODELS:
        raise bad(f"'models' must be an array of 1 to {MAX_FALLBACK_MODELS} model ids.", "models")
    for index, item in enumerate(models):
        _split_model(item, f"models[{index}]")
    model = body.get("model")
    if model is None or model == "":  # absent: the list's first; any other value is checked
        model = models[0]
    fallbacks = tuple(m for m in dict.fromkeys(models) if m != model)
    return model, fallbacks


def _check_spec(body: dict) -> None:
    validate.check_ranges(body)
    validate.check_n(body)
    validate.check_misc(body)
    validate.check_tools(body)
    validate.check_response_format(body)


def parse_chat_request(raw: bytes, max_depth: int = validate.DEFAULT_MAX_JSON_DEPTH) -> ChatRequest:
    """Validate ``raw`` JSON (nested at most ``max_depth`` levels); raises
    ``GatewayError(400)`` with a clear message."""
    body = loads(raw, max_depth)
    if not isinstance(body, dict):
        raise bad("Request body must be a JSON object.")
    return chat_request_from(body)


def loads(raw: bytes, max_depth: int) -> Any:
    """The decoded body, nested at most ``max_depth`` levels, else ``GatewayError(400)``."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded"):  # orjson's own, past 1024 levels
            raise validate.too_deep(None, max_depth) from None
        raise bad(f"Request body is not valid JSON: {exc}") from None
    validate.check_depth(body, max_depth)
    return body


def chat_request_from(body: dict[str, Any]) -> ChatRequest:
    """Validate a decoded body (the Messages API's translation comes in here too)."""
    model, fallbacks = _models(body)
    slug, suffix = _split_model(model)
    body["model"] = model
    messages = validate.check_messages(body.get("messages"))
    stream, include_usage = _check_stream(body)
    max_tokens = validate.check_max_tokens(body)
    _check_spec(body)
    provider = body.pop("provider", None)
    if provider is not None and not isinstance(provider, dict):
        raise bad("'provider' must be an object.", "provider")
    return ChatRequest(
        body=body,
        model_slug=slug,
        model_suffix=suffix,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        provider_options=provider,
        required_parameters=frozenset(p for p in FILTERING_PARAMETERS if asks_for(body.get(p))),
        fallback_models=fallbacks,
    )
