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

from billing.apis import ActivityRowSerializer, RejectedRowSerializer

from .apis import GenerationSerializer
from .openapi_schemas import (
    ANTHROPIC_ERROR_REF,
    BOOLEAN,
    ENDPOINT,
    INTEGER,
    JSON,
    NULLABLE_NUMBER,
    NULLABLE_STR,
    NUMBER,
    OBJECT,
    SCHEMAS,
    STRING,
    errors_of,
)


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
_SECURED = [{"ApiKey": []}]
KEY = {
    "type": "object",
    "required": ["data"],
    "properties": {
        "data": {
            "type": "object",
            "required": ["label", "limit", "usage", "limit_remaining", "rate_limit"],
            "properties": {
                "label": STRING,
                "limit": NULLABLE_NUMBER,
                "usage": NUMBER,
                "usage_daily": NUMBER,
                "usage_weekly": NUMBER,
                "usage_monthly": NUMBER,
                "limit_remaining": NULLABLE_NUMBER,
                "limit_reset": NULLABLE_STR,
                "expires_at": NULLABLE_STR,
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
                "total_credits": NUMBER,
                "total_usage": NUMBER,
                "limit_remaining": NULLABLE_NUMBER,
            },
        }
    },
}
_SSE = {"text/event-stream": {"schema": STRING}}
_SLUG = [{"name": "slug", "in": "path", "required": True, "schema": STRING}]


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
            **errors_of(404),
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
                **errors_of(401),
            },
        }
    }


_MODEL_REF = {"$ref": "#/components/schemas/Model"}
_CHAT_ERRORS = errors_of(400, 401, 402, 404, 413, 415, 429, 502, 503, 504)
_MESSAGES_ERRORS = errors_of(
    400, 401, 402, 404, 413, 415, 429, 502, 503, 504, 529, schema=ANTHROPIC_ERROR_REF
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
            "properties": {"input_tokens": INTEGER},
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
                "object": STRING,
                "data": {"type": "array", "items": _MODEL_REF},
                "has_more": BOOLEAN,
                "first_id": {"type": "string", "nullable": True},
                "last_id": {"type": "string", "nullable": True},
                "total_count": INTEGER,
                "links": OBJECT,
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
                        "id": STRING,
                        "name": STRING,
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
