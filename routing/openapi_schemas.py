"""The JSON schemas of the published OpenAPI document (``routing/openapi.py``): the
request and reply bodies of the lean ASGI endpoints and the catalog's model and endpoint
objects, written by hand because drf-spectacular cannot see those views."""

from __future__ import annotations

from typing import Any

JSON = "application/json"
STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}
OBJECT = {"type": "object"}
ERROR_REF = {"$ref": "#/components/schemas/Error"}
ANTHROPIC_ERROR_REF = {"$ref": "#/components/schemas/AnthropicError"}


def _number(low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "minimum": low, "maximum": high}


def errors_of(*statuses: int, schema: dict[str, Any] = ERROR_REF) -> dict[str, Any]:
    return {
        str(s): {"description": "Error", "content": {JSON: {"schema": schema}}} for s in statuses
    }


_ROLES = ["system", "developer", "user", "assistant", "tool", "function"]
_OBJECTS = {"type": "array", "items": OBJECT}
_PARTS = {"type": "array", "minItems": 1, "items": OBJECT}
_MODEL_NAME = {"type": "string", "minLength": 1}
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": _ROLES},
        "content": {"oneOf": [STRING, _PARTS], "nullable": True},
        "tool_call_id": STRING,
        "tool_calls": _OBJECTS,
        "name": STRING,
    },
}
CHAT_REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "description": "OpenAI Chat Completions; fields not listed pass through to the provider.",
    "properties": {
        "model": _MODEL_NAME,
        "models": {"type": "array", "items": STRING, "minItems": 1, "maxItems": 8},
        "messages": {"type": "array", "minItems": 1, "items": MESSAGE},
        "stream": BOOLEAN,
        "stream_options": OBJECT,
        "max_tokens": {"type": "integer", "minimum": 1},
        "max_completion_tokens": {"type": "integer", "minimum": 1},
        "temperature": _number(0, 2),
        "top_p": _number(0, 1),
        "frequency_penalty": _number(-2, 2),
        "presence_penalty": _number(-2, 2),
        "n": {"type": "integer", "minimum": 1, "maximum": 1},
        "tools": _OBJECTS,
        "tool_choice": {"oneOf": [STRING, OBJECT]},
        "response_format": OBJECT,
        "provider": {"type": "object", "description": "OpenRouter's provider preferences"},
    },
}
CHAT_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "choices"],
    "properties": {
        "id": STRING,
        "object": {"type": "string", "enum": ["chat.completion"]},
        "model": STRING,
        "provider": STRING,
        "choices": _OBJECTS,
        "usage": {"type": "object", "nullable": True},
    },
}
MESSAGES_REQUEST = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "description": "Anthropic Messages; translated to the catalog's upstreams.",
    "properties": {
        "model": _MODEL_NAME,
        "max_tokens": {"type": "integer", "minimum": 1},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                    "content": {"oneOf": [STRING, _OBJECTS]},
                },
            },
        },
        "system": {"oneOf": [STRING, _OBJECTS]},
        "stream": BOOLEAN,
        "tools": _OBJECTS,
        "thinking": OBJECT,
    },
}
MESSAGE_REPLY = {
    "type": "object",
    "required": ["id", "type", "role", "content"],
    "properties": {
        "id": STRING,
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": ["assistant"]},
        "content": _OBJECTS,
        "stop_reason": {"type": "string", "nullable": True},
        "usage": OBJECT,
    },
}
RESPONSES_REQUEST = {
    "type": "object",
    "required": ["model", "input"],
    "description": "OpenAI Responses, stateless (docs/api.md), on the catalog's upstreams.",
    "properties": {
        "model": _MODEL_NAME,
        "input": {"oneOf": [STRING, _PARTS]},
        "instructions": STRING,
        "stream": BOOLEAN,
        "tools": _OBJECTS,
        "max_output_tokens": {"type": "integer", "minimum": 1},
        "store": BOOLEAN,
    },
}
RESPONSE = {
    "type": "object",
    "required": ["id", "object", "status", "output"],
    "properties": {
        "id": STRING,
        "object": {"type": "string", "enum": ["response"]},
        "status": STRING,
        "model": STRING,
        "output": _OBJECTS,
        "usage": {"type": "object", "nullable": True},
    },
}
_STRINGS = {"type": "array", "items": STRING}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
_NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_STR = {"type": "string", "nullable": True}
_NULLABLE_OBJECT = {"type": "object", "nullable": True}
PRICES = {
    "type": "object",
    "description": "OpenRouter's prices: USD per token, as decimal strings.",
    "required": ["prompt", "completion"],
    "properties": {
        name: STRING
        for name in ("prompt", "completion", "input_cache_read", "input_cache_write", "request")
    },
}
PRICES_PER_1M = {
    "type": "object",
    "description": "The same prices in USD per 1M tokens.",
    "properties": {
        name: STRING for name in ("prompt", "completion", "input_cache_read", "input_cache_write")
    },
}
PERCENTILES = {
    "type": "object",
    "nullable": True,
    "required": ["p50", "p75", "p90", "p99"],
    "properties": {name: NUMBER for name in ("p50", "p75", "p90", "p99")},
}
ENDPOINT = {
    "type": "object",
    "description": "OpenRouter's PublicEndpoint, plus UberLLM's protocol, data policy and "
    "what routing learnt (ttft_by_bucket, throughput_tokens_per_s; /endpoints only).",
    "required": [
        "name",
        "model_id",
        "model_name",
        "provider_name",
        "tag",
        "context_length",
        "pricing",
        "status",
        "supported_parameters",
    ],
    "properties": {
        "name": STRING,
        "model_id": STRING,
        "model_name": STRING,
        "provider_name": STRING,
        "tag": {"type": "string", "description": "The provider's slug."},
        "protocol": {
            "type": "string",
            "enum": ["openai_chat", "anthropic_messages"],
            "description": "The wire format the endpoint's upstream speaks.",
        },
        "usage_dialect": {
            "type": "string",
            "enum": ["openai", "deepseek", "anthropic", "none"],
            "description": "How the upstream reports usage (docs/api.md 'Usage dialects'); "
            "'none': its calls are billed from the gateway's own count, marked estimated.",
        },
        "context_length": INTEGER,
        "max_completion_tokens": _NULLABLE_INT,
        "max_prompt_tokens": _NULLABLE_INT,
        "quantization": NULLABLE_STR,
        "status": {"type": "integer", "description": "0 serving, -1 marked unusable now"},
        "supported_parameters": _STRINGS,
        "supports_implicit_caching": BOOLEAN,
        "pricing": PRICES,
        "pricing_per_1m": PRICES_PER_1M,
        "collects_data": BOOLEAN,
        "zdr": BOOLEAN,
        "uptime_last_5m": NULLABLE_NUMBER,
        "uptime_last_30m": NULLABLE_NUMBER,
        "uptime_last_1d": NULLABLE_NUMBER,
        "latency_last_30m": PERCENTILES,
        "throughput_last_30m": PERCENTILES,
        "ttft_by_bucket": OBJECT,
        "throughput_tokens_per_s": NULLABLE_NUMBER,
    },
}
MODEL = {
    "type": "object",
    "description": "OpenRouter's Model, OpenAI's Model and Anthropic's ModelInfo at once.",
    "required": [
        "id",
        "object",
        "created",
        "owned_by",
        "type",
        "display_name",
        "created_at",
        "canonical_slug",
        "name",
        "pricing",
        "context_length",
        "architecture",
        "top_provider",
        "supported_parameters",
        "links",
    ],
    "properties": {
        "id": STRING,
        "object": {"type": "string", "enum": ["model"]},
        "created": {"type": "integer", "description": "Unix seconds (OpenAI)"},
        "owned_by": STRING,
        "type": {"type": "string", "enum": ["model"], "description": "Anthropic's ModelInfo"},
        "display_name": STRING,
        "created_at": {"type": "string", "format": "date-time"},
        "canonical_slug": STRING,
        "aliases": {
            **_STRINGS,
            "description": "UberLLM: other names a request may give for this model "
            "(e.g. Claude Code's claude-sonnet-4-5), served and billed as this model",
        },
        "name": STRING,
        "description": STRING,
        "context_length": INTEGER,
        "architecture": OBJECT,
        "top_provider": OBJECT,
        "per_request_limits": _NULLABLE_OBJECT,
        "default_parameters": _NULLABLE_OBJECT,
        "supported_voices": {"type": "array", "items": STRING, "nullable": True},
        "expiration_date": NULLABLE_STR,
        "knowledge_cutoff": NULLABLE_STR,
        "links": OBJECT,
        "supported_parameters": _STRINGS,
        "pricing": PRICES,
        "pricing_per_1m": PRICES_PER_1M,
        "endpoints": {"type": "array", "items": ENDPOINT},
    },
}
SCHEMAS = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type"],
                "properties": {
                    "message": STRING,
                    "type": STRING,
                    "code": {"oneOf": [STRING, INTEGER], "nullable": True},
                    "param": {"type": "string", "nullable": True},
                },
            }
        },
    },
    "AnthropicError": {
        "type": "object",
        "required": ["type", "error"],
        "properties": {
            "type": {"type": "string", "enum": ["error"]},
            "error": {
                "type": "object",
                "required": ["type", "message"],
                "properties": {"type": STRING, "message": STRING},
            },
        },
    },
    "ChatCompletionRequest": CHAT_REQUEST,
    "ChatCompletion": CHAT_COMPLETION,
    "MessagesRequest": MESSAGES_REQUEST,
    "ResponsesRequest": RESPONSES_REQUEST,
    "Response": RESPONSE,
    "Message": MESSAGE_REPLY,
    "Model": MODEL,
}
