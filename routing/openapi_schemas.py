"""The JSON schemas of the published OpenAPI document (``routing/openapi.py``): the
request and reply bodies of the lean ASGI endpoints and the catalog's model and endpoint
objects, written by hand because drf-spectacular cannot see those views."""

from __future__ import annotations

from typing import Any

JSON = "application/json"
ERROR_REF = {"$ref": "#/components/schemas/Error"}
ANTHROPIC_ERROR_REF = {"$ref": "#/components/schemas/AnthropicError"}


def _number(low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "minimum": low, "maximum": high}


def errors_of(*statuses: int, schema: dict[str, Any] = ERROR_REF) -> dict[str, Any]:
    return {
        str(s): {"description": "Error", "content": {JSON: {"schema": schema}}} for s in statuses
    }


_ROLES = ["system", "developer", "user", "assistant", "tool", "function"]
_PARTS = {"type": "array", "minItems": 1, "items": {"type": "object"}}
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": _ROLES},
        "content": {"oneOf": [{"type": "string"}, _PARTS], "nullable": True},
        "tool_call_id": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "name": {"type": "string"},
    },
}
CHAT_REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "description": "OpenAI Chat Completions; fields not listed pass through to the provider.",
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 8},
        "messages": {"type": "array", "minItems": 1, "items": MESSAGE},
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "max_completion_tokens": {"type": "integer", "minimum": 1},
        "temperature": _number(0, 2),
        "top_p": _number(0, 1),
        "frequency_penalty": _number(-2, 2),
        "presence_penalty": _number(-2, 2),
        "n": {"type": "integer", "minimum": 1, "maximum": 1},
        "tools": {"type": "array", "items": {"type": "object"}},
        "tool_choice": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        "response_format": {"type": "object"},
        "provider": {"type": "object", "description": "OpenRouter's provider preferences"},
    },
}
CHAT_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["chat.completion"]},
        "model": {"type": "string"},
        "provider": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object"}},
        "usage": {"type": "object", "nullable": True},
    },
}
MESSAGES_REQUEST = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "description": "Anthropic Messages; translated to the catalog's upstreams.",
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                    "content": {
                        "oneOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "object"}},
                        ]
                    },
                },
            },
        },
        "system": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
        "stream": {"type": "boolean"},
        "tools": {"type": "array", "items": {"type": "object"}},
        "thinking": {"type": "object"},
    },
}
MESSAGE_REPLY = {
    "type": "object",
    "required": ["id", "type", "role", "content"],
    "properties": {
        "id": {"type": "string"},
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": ["assistant"]},
        "content": {"type": "array", "items": {"type": "object"}},
        "stop_reason": {"type": "string", "nullable": True},
        "usage": {"type": "object"},
    },
}
RESPONSES_REQUEST = {
    "type": "object",
    "required": ["model", "input"],
    "description": "OpenAI Responses, stateless (docs/api.md), on the catalog's upstreams.",
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "input": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "minItems": 1, "items": {"type": "object"}},
            ]
        },
        "instructions": {"type": "string"},
        "stream": {"type": "boolean"},
        "tools": {"type": "array", "items": {"type": "object"}},
        "max_output_tokens": {"type": "integer", "minimum": 1},
        "store": {"type": "boolean"},
    },
}
RESPONSE = {
    "type": "object",
    "required": ["id", "object", "status", "output"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["response"]},
        "status": {"type": "string"},
        "model": {"type": "string"},
        "output": {"type": "array", "items": {"type": "object"}},
        "usage": {"type": "object", "nullable": True},
    },
}
_STRINGS = {"type": "array", "items": {"type": "string"}}
NULLABLE_NUMBER = {"type": "number", "nullable": True}
_NULLABLE_INT = {"type": "integer", "nullable": True}
NULLABLE_STR = {"type": "string", "nullable": True}
_NULLABLE_OBJECT = {"type": "object", "nullable": True}
PRICES = {
    "type": "object",
    "description": "OpenRouter's prices: USD per token, as decimal strings.",
    "required": ["prompt", "completion"],
    "properties": {
        name: {"type": "string"}
        for name in ("prompt", "completion", "input_cache_read", "input_cache_write", "request")
    },
}
PRICES_PER_1M = {
    "type": "object",
    "description": "The same prices in USD per 1M tokens.",
    "properties": {
        name: {"type": "string"}
        for name in ("prompt", "completion", "input_cache_read", "input_cache_write")
    },
}
PERCENTILES = {
    "type": "object",
    "nullable": True,
    "required": ["p50", "p75", "p90", "p99"],
    "properties": {name: {"type": "number"} for name in ("p50", "p75", "p90", "p99")},
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
        "name": {"type": "string"},
        "model_id": {"type": "string"},
        "model_name": {"type": "string"},
        "provider_name": {"type": "string"},
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
        "context_length": {"type": "integer"},
        "max_completion_tokens": _NULLABLE_INT,
        "max_prompt_tokens": _NULLABLE_INT,
        "quantization": NULLABLE_STR,
        "status": {"type": "integer", "description": "0 serving, -1 marked unusable now"},
        "supported_parameters": _STRINGS,
        "supports_implicit_caching": {"type": "boolean"},
        "pricing": PRICES,
        "pricing_per_1m": PRICES_PER_1M,
        "collects_data": {"type": "boolean"},
        "zdr": {"type": "boolean"},
        "uptime_last_5m": NULLABLE_NUMBER,
        "uptime_last_30m": NULLABLE_NUMBER,
        "uptime_last_1d": NULLABLE_NUMBER,
        "latency_last_30m": PERCENTILES,
        "throughput_last_30m": PERCENTILES,
        "ttft_by_bucket": {"type": "object"},
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
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["model"]},
        "created": {"type": "integer", "description": "Unix seconds (OpenAI)"},
        "owned_by": {"type": "string"},
        "type": {"type": "string", "enum": ["model"], "description": "Anthropic's ModelInfo"},
        "display_name": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "canonical_slug": {"type": "string"},
        "aliases": {
            **_STRINGS,
            "description": "UberLLM: other names a request may give for this model "
            "(e.g. Claude Code's claude-sonnet-4-5), served and billed as this model",
        },
        "name": {"type": "string"},
        "description": {"type": "string"},
        "context_length": {"type": "integer"},
        "architecture": {"type": "object"},
        "top_provider": {"type": "object"},
        "per_request_limits": _NULLABLE_OBJECT,
        "default_parameters": _NULLABLE_OBJECT,
        "supported_voices": {"type": "array", "items": {"type": "string"}, "nullable": True},
        "expiration_date": NULLABLE_STR,
        "knowledge_cutoff": NULLABLE_STR,
        "links": {"type": "object"},
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
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "code": {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
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
                "properties": {"type": {"type": "string"}, "message": {"type": "string"}},
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
