"""The published OpenAPI 3 schema (``GET /api/v1/openapi.json``), made by drf-spectacular.

The DRF views (generation, activity) are described through spectacular's extensions
(no edit to the views themselves). The lean ASGI endpoints (chat completions, Anthropic
Messages) and the plain Django model reads are invisible to it: ``add_lean_paths``, a
postprocessing hook, adds their hand-written description. Only ``/api/v1/`` paths are
published (the ``/v1`` aliases are the same API).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiViewExtension
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers

JSON = "application/json"
_ERROR = {"$ref": "#/components/schemas/Error"}
_ANTHROPIC_ERROR = {"$ref": "#/components/schemas/AnthropicError"}


def only_public_api(endpoints: list[tuple], **kwargs: Any) -> list[tuple]:
    """Preprocessing hook: the ``/api/v1/`` endpoints only."""
    return [e for e in endpoints if e[0].startswith("/api/v1/")]


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "billing.drf.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "description": "An UberLLM API key."}


class _ErrorBody(serializers.Serializer):
    message = serializers.CharField()
    type = serializers.CharField()
    code = serializers.CharField(allow_null=True)
    param = serializers.CharField(allow_null=True)


ERROR = inline_serializer("ErrorResponse", {"error": _ErrorBody()})


class GenerationApiSchema(OpenApiViewExtension):
    target_class = "routing.apis.GenerationApi"

    def view_replacement(self):
        from .apis import GenerationSerializer

        class Documented(self.target_class):
            @extend_schema(
                summary="One call's record",
                parameters=[OpenApiParameter("id", str, required=True)],
                responses={
                    200: inline_serializer("GenerationResponse", {"data": GenerationSerializer()}),
                    401: ERROR,
                    404: ERROR,
                },
            )
            def get(self, request):
                return super().get(request)

        return Documented


class ActivityApiSchema(OpenApiViewExtension):
    target_class = "billing.apis.ActivityListApi"

    def view_replacement(self):
        from billing.apis import ActivityRowSerializer, RejectedRowSerializer

        totals = inline_serializer(
            "ActivityTotals",
            {
                "calls": serializers.IntegerField(),
                "rejected": serializers.IntegerField(required=False),
                "total_cost": serializers.CharField(),
                "tokens_prompt": serializers.IntegerField(),
                "tokens_cached": serializers.IntegerField(),
                "tokens_completion": serializers.IntegerField(),
            },
        )
        row = PolymorphicProxySerializer(
            component_name="ActivityListRow",
            serializers={"call": ActivityRowSerializer, "rejected": RejectedRowSerializer},
            resource_type_field_name="kind",
            many=True,
        )
        params = [OpenApiParameter(name, str) for name in ("model", "provider")]
        params.append(
            OpenApiParameter(
                "status", str, description='A call status, or "rejected" for refused requests'
            )
        )
        params += [OpenApiParameter(name, str) for name in ("date_from", "date_to")]
        params.append(
            OpenApiParameter(
                "include_rejected",
                bool,
                description="true: refused requests (kind rejected) among the calls, newest "
                "first; not with a call status filter",
            )
        )

        class Documented(self.target_class):
            @extend_schema(
                summary="The organisation's calls and totals",
                parameters=params,
                responses={
                    200: inline_serializer(
                        "ActivityResponse",
                        {
                            "data": row,
                            "has_more": serializers.BooleanField(),
                            "next_cursor": serializers.CharField(allow_null=True),
                            "totals": totals,
                        },
                    ),
                    400: ERROR,
                    401: ERROR,
                },
            )
            def get(self, request):
                return super().get(request)

        return Documented


# --- the lean endpoints, by hand ----------------------------------------------------------
def _number(low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "minimum": low, "maximum": high}


def _errors(*statuses: int, schema: dict[str, Any] = _ERROR) -> dict[str, Any]:
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
_NULLABLE_NUMBER = {"type": "number", "nullable": True}
_NULLABLE_INT = {"type": "integer", "nullable": True}
_NULLABLE_STR = {"type": "string", "nullable": True}
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
        "quantization": _NULLABLE_STR,
        "status": {"type": "integer", "description": "0 serving, -1 marked unusable now"},
        "supported_parameters": _STRINGS,
        "supports_implicit_caching": {"type": "boolean"},
        "pricing": PRICES,
        "pricing_per_1m": PRICES_PER_1M,
        "collects_data": {"type": "boolean"},
        "zdr": {"type": "boolean"},
        "uptime_last_5m": _NULLABLE_NUMBER,
        "uptime_last_30m": _NULLABLE_NUMBER,
        "uptime_last_1d": _NULLABLE_NUMBER,
        "latency_last_30m": PERCENTILES,
        "throughput_last_30m": PERCENTILES,
        "ttft_by_bucket": {"type": "object"},
        "throughput_tokens_per_s": _NULLABLE_NUMBER,
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
        "expiration_date": _NULLABLE_STR,
        "knowledge_cutoff": _NULLABLE_STR,
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
_SECURED = [{"ApiKey": []}]
KEY = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "object",
            "required": ["label", "limit", "usage", "limit_remaining", "rate_limit"],
            "properties": {
                "label": {"type": "string"},
                "limit": _NULLABLE_NUMBER,
                "usage": {"type": "number"},
                "usage_daily": {"type": "number"},
                "usage_weekly": {"type": "number"},
                "usage_monthly": {"type": "number"},
                "limit_remaining": _NULLABLE_NUMBER,
                "limit_reset": _NULLABLE_STR,
                "expires_at": _NULLABLE_STR,
                "rate_limit": {"type": "object", "required": ["requests", "interval"]},
            },
        }
    },
}
CREDITS = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "object",
            "required": ["total_credits", "total_usage"],
            "description": "total_credits: total_usage plus what the organisation's limits leave "
            "(UberLLM has no prepaid balance); limit_remaining null: no limit.",
            "properties": {
                "total_credits": {"type": "number"},
                "total_usage": {"type": "number"},
                "limit_remaining": _NULLABLE_NUMBER,
            },
        }
    },
}
_SSE = {"text/event-stream": {"schema": {"type": "string"}}}
_SLUG = [{"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}]


def _post(
    operation_id: str, summary: str, request: str, reply: dict[str, Any], errors: dict
) -> dict[str, Any]:
    return {
        "post": {
            "operationId": operation_id,
            "summary": summary,
            "security": _SECURED,
            "requestBody": {
                "required": True,
                "content": {JSON: {"schema": {"$ref": f"#/components/schemas/{request}"}}},
            },
            "responses": {
                "200": {
                    "description": "The reply (SSE when stream is true)",
                    "content": {JSON: {"schema": reply}, **_SSE},
                },
                **errors,
            },
        }
    }


def _get(
    operation_id: str, summary: str, schema: dict[str, Any], params: list | None = None
) -> dict[str, Any]:
    operation = {
        "operationId": operation_id,
        "summary": summary,
        "responses": {
            "200": {"description": "OK", "content": {JSON: {"schema": schema}}},
            **_errors(404),
        },
    }
    if params:
        operation["parameters"] = params
    return {"get": operation}


def _account(operation_id: str, summary: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "security": _SECURED,
            "responses": {
                "200": {"description": "OK", "content": {JSON: {"schema": schema}}},
                **_errors(401),
            },
        }
    }


_MODEL_REF = {"$ref": "#/components/schemas/Model"}
_CHAT_ERRORS = _errors(400, 401, 402, 404, 413, 415, 429, 502, 503, 504)
_MESSAGES_ERRORS = _errors(
    400, 401, 402, 404, 413, 415, 429, 502, 503, 504, 529, schema=_ANTHROPIC_ERROR
)
LEAN_PATHS = {
    "/api/v1/chat/completions": _post(
        "chat_completions_create",
        "Chat completion (OpenAI)",
        "ChatCompletionRequest",
        {"$ref": "#/components/schemas/ChatCompletion"},
        _CHAT_ERRORS,
    ),
    "/api/v1/responses": _post(
        "responses_create",
        "Response (OpenAI Responses API)",
        "ResponsesRequest",
        {"$ref": "#/components/schemas/Response"},
        _CHAT_ERRORS,
    ),
    "/api/v1/messages": _post(
        "messages_create",
        "Message (Anthropic)",
        "MessagesRequest",
        {"$ref": "#/components/schemas/Message"},
        _MESSAGES_ERRORS,
    ),
    "/api/v1/messages/count_tokens": _post(
        "messages_count_tokens",
        "Count a Messages request's input tokens",
        "MessagesRequest",
        {
            "type": "object",
            "required": ["input_tokens"],
            "properties": {"input_tokens": {"type": "integer"}},
        },
        _MESSAGES_ERRORS,
    ),
    "/api/v1/models": _get(
        "models_list",
        "The catalog",
        {
            "type": "object",
            "required": ["data", "has_more"],
            "properties": {
                "object": {"type": "string"},
                "data": {"type": "array", "items": _MODEL_REF},
                "has_more": {"type": "boolean"},
                "first_id": {"type": "string", "nullable": True},
                "last_id": {"type": "string", "nullable": True},
                "total_count": {"type": "integer"},
                "links": {"type": "object"},
            },
        },
    ),
    "/api/v1/key": _account("key_retrieve", "The calling key's limits and spend", KEY),
    "/api/v1/auth/key": _account("auth_key_retrieve", "/key's older path", KEY),
    "/api/v1/credits": _account("credits_retrieve", "The organisation's spend", CREDITS),
    "/api/v1/models/{slug}": _get("models_retrieve", "One model", _MODEL_REF, _SLUG),
    "/api/v1/models/{slug}/endpoints": _get(
        "models_endpoints",
        "A model's endpoints",
        {
            "type": "object",
            "required": ["data"],
            "properties": {
                "data": {
                    "type": "object",
                    "required": ["id", "name", "endpoints"],
                    "properties": {
                        "id": {"type": "string"},
                        "name": {"type": "string"},
                        "endpoints": {"type": "array", "items": ENDPOINT},
                    },
                }
            },
        },
        _SLUG,
    ),
}


def add_lean_paths(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: the endpoints drf-spectacular cannot see."""
    result.setdefault("paths", {}).update(LEAN_PATHS)
    result.setdefault("components", {}).setdefault("schemas", {}).update(SCHEMAS)
    schemes = result["components"].setdefault("securitySchemes", {})
    schemes.setdefault("ApiKey", {"type": "http", "scheme": "bearer"})
    return result
