"""Reads for the public API."""

from __future__ import annotations

from datetime import UTC, datetime

from .catalog import catalog_cache
from .core.types import BUCKETS
from .memory import memory


def _price(value) -> str:
    return format(value, "f")


def _speed(endpoint_id: int) -> dict:
    """What routing has learnt of an endpoint (this process's snapshot): typical TTFT per
    prompt-size bucket (ms) with its sample count, and output tokens per second."""

    speed = memory.knowledge.shared_speed
    ttft = {}
    for bucket in BUCKETS:
        key = (endpoint_id, bucket)
        if (typical := speed.typical_by_key.get(key)) is not None:
            samples = speed.count_by_key.get(key, 0)
            ttft[bucket] = {"typical_ms": round(typical * 1000), "samples": samples}
    throughput = speed.throughput_by_endpoint.get(endpoint_id)
    return {"ttft_by_bucket": ttft, "throughput_tokens_per_s": throughput}


def _endpoints(model, *, live: bool = False) -> list[dict]:
    return [
        {
            "provider": route.provider_slug,
            "protocol": route.protocol,
            "usage_dialect": route.usage_dialect,
            **(_speed(route.endpoint_id) if live else {}),
            "context_length": route.info.context_length,
            "supported_parameters": sorted(route.info.supported_parameters),
            "pricing": {
                "prompt": _price(route.prices["input"]),
                "input_cache_read": _price(route.prices["cache_read"]),
                "input_cache_write": _price(route.prices["cache_write"]),
                "completion": _price(route.prices["output"]),
                "unit": "USD per 1M tokens",
            },
        }
        for route in model.endpoints
    ]


def _model_entry(slug: str, model) -> dict:
    """One model, in OpenAI's shape and Anthropic's at once (each SDK reads its own
    fields and ignores the others'), plus the catalog's context, parameters and prices."""
    return {
        "id": slug,
        "object": "model",
        "created": model.created,  # required by OpenAI's Model (the SDK types it int)
        "owned_by": slug.split("/")[0],
        "type": "model",  # Anthropic's ModelInfo: type, display_name, created_at
        "display_name": model.name or slug,
        "created_at": _rfc3339(model.created),
        "context_length": max((r.info.context_length for r in model.endpoints), default=0),
        "supported_parameters": sorted(
            frozenset().union(*(r.info.supported_parameters for r in model.endpoints))
        ),
        "pricing": {
            "prompt": str(model.info.list_price_input),
            "completion": str(model.info.list_price_output),
            "unit": "USD per 1M tokens (official list price)",
        },
        "endpoints": _endpoints(model),
    }


async def models_payload() -> dict:
    """``GET /api/v1/models``: OpenAI's list shape plus each endpoint's prices (USD / 1M)."""
    await catalog_cache.get("")
    data = [_model_entry(slug, m) for slug, m in sorted(catalog_cache.snapshot().items())]
    # Anthropic's page fields beside OpenAI's: the whole catalog is one page.
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"object": "list", "data": data, "has_more": False, "first_id": first,
            "last_id": last}  # fmt: skip


def _rfc3339(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def model_payload(slug: str) -> dict | None:
    """``GET /api/v1/models/{slug}`` (OpenAI's models.retrieve): one model, or None."""
    model = await catalog_cache.get(slug)
    return None if model is None else _model_entry(slug, model)


async def model_endpoints_payload(slug: str) -> dict | None:
    """``GET /api/v1/models/{slug}/endpoints`` (OpenRouter's shape, prices per 1M)."""
    model = await catalog_cache.get(slug)
    if model is None:
        return None
    endpoints = _endpoints(model, live=True)
    return {"data": {"id": slug, "name": model.info.slug, "endpoints": endpoints}}
