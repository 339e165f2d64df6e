"""JSON schemas of OpenRouter's read endpoints, transcribed from OpenRouter's own
OpenAPI document (repository OpenRouterTeam/docs @ c26125a, ``openapi/openapi.yaml``:
``ModelsListResponse``, ``Model``, ``ModelArchitecture``, ``TopProviderInfo``,
``PublicPricing``, ``ListEndpointsResponse``, ``PublicEndpoint``, ``PercentileStats``,
``EndpointStatus``, and the 200 answers of ``GET /key`` and ``GET /credits``): each
schema's required fields and their types, nullability as OpenRouter gives it. Written
apart from the gateway's own published schema (routing/openapi.py) so that one checks
the other. Extra fields are allowed, as they are in OpenRouter's schemas.
"""

from __future__ import annotations

from typing import Any

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}
STRINGS = {"type": "array", "items": STRING}
NUMBER_OR_NULL = {"type": ["number", "null"]}
INTEGER_OR_NULL = {"type": ["integer", "null"]}
STRING_OR_NULL = {"type": ["string", "null"]}
# A decimal number as a string: OpenRouter's prices are "0.00003", never "3e-05".
PRICE = {"type": "string", "pattern": r"^\d+(\.\d+)?$"}


def _object(required: dict[str, Any], **optional: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **optional},
    }


PUBLIC_PRICING = _object(
    {"prompt": PRICE, "completion": PRICE},
    input_cache_read=PRICE,
    input_cache_write=PRICE,
    request=PRICE,
    image=PRICE,
    audio=PRICE,
    internal_reasoning=PRICE,
    web_search=PRICE,
    discount=NUMBER,
)
MODALITIES = {
    "type": "array",
    "items": {"enum": ["text", "image", "file", "audio", "video", "embeddings", "speech"]},
}
MODEL_GROUPS = [
    "Router",
    "Media",
    "Other",
    "GPT",
    "Claude",
    "Gemini",
    "Gemma",
    "Grok",
    "Cohere",
    "Nova",
    "Qwen",
    "Yi",
    "DeepSeek",
    "Mistral",
    "Llama2",
    "Llama3",
    "Llama4",
    "PaLM",
    "RWKV",
    "Qwen3",
]
ARCHITECTURE = _object(
    {"modality": STRING_OR_NULL, "input_modalities": MODALITIES, "output_modalities": MODALITIES},
    tokenizer={"enum": MODEL_GROUPS},
    instruct_type={"type": ["string", "null"]},
)
TOP_PROVIDER = _object(
    {"is_moderated": BOOLEAN},
    context_length=INTEGER_OR_NULL,
    max_completion_tokens=INTEGER_OR_NULL,
)
MODEL = _object(
    {
        "id": STRING,
        "canonical_slug": STRING,
        "name": STRING,
        "created": INTEGER,
        "pricing": PUBLIC_PRICING,
        "context_length": INTEGER_OR_NULL,
        "architecture": ARCHITECTURE,
        "top_provider": TOP_PROVIDER,
        "per_request_limits": {"type": ["object", "null"]},
        "supported_parameters": STRINGS,
        "default_parameters": {"type": ["object", "null"]},
        "supported_voices": {"type": ["array", "null"]},
        "links": _object({"details": STRING}),
    },
    description=STRING,
    expiration_date=STRING_OR_NULL,
    knowledge_cutoff=STRING_OR_NULL,
)
MODELS_LIST = _object(
    {
        "data": {"type": "array", "items": MODEL},
        "total_count": INTEGER,
        "links": _object({"next": STRING_OR_NULL}),
    }
)
PERCENTILE_STATS = {
    "type": ["object", "null"],
    "required": ["p50", "p75", "p90", "p99"],
    "properties": {p: NUMBER for p in ("p50", "p75", "p90", "p99")},
}
PUBLIC_ENDPOINT = _object(
    {
        "name": STRING,
        "model_id": STRING,
        "model_name": STRING,
        "context_length": INTEGER,
        "pricing": PUBLIC_PRICING,
        "provider_name": STRING,
        "tag": STRING,
        "quantization": {
            "enum": [
                None,
                "int4",
                "int8",
                "fp4",
                "mxfp4",
                "nvfp4",
                "fp6",
                "fp8",
                "mxfp8",
                "fp16",
                "bf16",
                "fp32",
                "unknown",
            ]
        },
        "max_completion_tokens": INTEGER_OR_NULL,
        "max_prompt_tokens": INTEGER_OR_NULL,
        "supported_parameters": STRINGS,
        "uptime_last_30m": NUMBER_OR_NULL,
        "uptime_last_5m": NUMBER_OR_NULL,
        "uptime_last_1d": NUMBER_OR_NULL,
        "supports_implicit_caching": BOOLEAN,
        "latency_last_30m": PERCENTILE_STATS,
        "throughput_last_30m": PERCENTILE_STATS,
    },
    status={"enum": [0, -1, -2, -3, -5, -10]},
)
ENDPOINTS_LIST = _object(
    {
        "data": _object(
            {
                "id": STRING,
                "name": STRING,
                "created": INTEGER,
                "description": STRING,
                "architecture": ARCHITECTURE,
                "endpoints": {"type": "array", "items": PUBLIC_ENDPOINT},
            }
        )
    }
)
KEY = _object(
    {
        "data": _object(
            {
                "label": STRING,
                "limit": NUMBER_OR_NULL,
                "usage": NUMBER,
                "usage_daily": NUMBER,
                "usage_weekly": NUMBER,
                "usage_monthly": NUMBER,
                "byok_usage": NUMBER,
                "byok_usage_daily": NUMBER,
                "byok_usage_weekly": NUMBER,
                "byok_usage_monthly": NUMBER,
                "is_free_tier": BOOLEAN,
                "is_management_key": BOOLEAN,
                "is_provisioning_key": BOOLEAN,
                "limit_remaining": NUMBER_OR_NULL,
                "limit_reset": STRING_OR_NULL,
                "include_byok_in_limit": BOOLEAN,
                "creator_user_id": STRING_OR_NULL,
                "rate_limit": _object(
                    {
                        "requests": INTEGER,
                        "interval": STRING,
                        "note": STRING,
                    }
                ),
            },
            expires_at={"type": ["string", "null"], "format": "date-time"},
        )
    }
)
CREDITS = _object({"data": _object({"total_credits": NUMBER, "total_usage": NUMBER})})
