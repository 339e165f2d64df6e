"""Reads for the public API: the catalog in OpenRouter's shape (``/models``,
``/models/{slug}/endpoints``), with OpenAI's and Anthropic's model fields beside it.

Prices: ``pricing`` holds OpenRouter's USD per token, as decimal strings (what
OpenRouter's clients and cost tools parse); ``pricing_per_1m`` the same prices per
million tokens (the catalog's unit). A model's prices are its maker's official list
prices (what R2.9 compares with); a model has no list price for cache writes, so its
``input_cache_write`` is the highest of its endpoints'. An endpoint's are what it
charges, what a call served there is billed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

from common.aio import db_call

from .catalog import CatalogModel, EndpointRoute, catalog_cache
from .core.types import BUCKETS
from .endpoint_stats import NOT_MEASURED, measured
from .memory import memory

PER_MILLION = Decimal(1_000_000)
ARCHITECTURE = {
    # The catalog records no modalities or tokenizer: text in, text out.
    "modality": "text->text",
    "input_modalities": ["text"],
    "output_modalities": ["text"],
    "tokenizer": "Other",
    "instruct_type": None,
}
STATUS_SERVING, STATUS_MARKED = 0, -1  # OpenRouter's endpoint status codes we use


def per_token(per_million: Decimal) -> str:
    """USD per 1M tokens -> USD per token as a plain decimal string (0.56 -> '0.00000056')."""
    value = (Decimal(per_million) / PER_MILLION).normalize()
    return format(value, "f")


def _plain(value: Decimal) -> str:
    return format(Decimal(value).normalize(), "f")


def _pricing(prices: dict[str, Decimal]) -> tuple[dict[str, str], dict[str, str]]:
    """(per token, per 1M): prompt, completion, input_cache_read, input_cache_write."""
    names = {
        "prompt": "input",
        "completion": "output",
        "input_cache_read": "cache_read",
        "input_cache_write": "cache_write",
    }
    per_1m = {name: _plain(prices[key]) for name, key in names.items()}
    tokens = {name: per_token(prices[key]) for name, key in names.items()}
    return {**tokens, "request": "0"}, per_1m


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


def _endpoint(slug: str, model: CatalogModel, route: EndpointRoute, marked: frozenset) -> dict:
    """One endpoint in OpenRouter's ``PublicEndpoint`` shape (without the measured
    figures), plus UberLLM's protocol, data policy and per-1M prices."""
    info = route.info
    pricing, per_1m = _pricing(route.prices)
    return {
        "name": f"{route.provider_name} | {slug}",
        "model_id": slug,
        "model_name": model.name or slug,
        "provider_name": route.provider_name or route.provider_slug,
        "tag": route.provider_slug,
        "context_length": info.context_length,
        "max_completion_tokens": info.max_output_tokens,
        "max_prompt_tokens": None,
        "quantization": None,
        "status": STATUS_MARKED if route.endpoint_id in marked else STATUS_SERVING,
        "supported_parameters": sorted(info.supported_parameters),
        "supports_implicit_caching": route.prices["cache_read"] < route.prices["input"],
        "pricing": pricing,
        "pricing_per_1m": per_1m,
        "protocol": route.protocol,
        "usage_dialect": route.usage_dialect,
        "collects_data": info.collects_data,
        "zdr": info.zdr,
    }


def _model_pricing(model: CatalogModel) -> tuple[dict[str, str], dict[str, str]]:
    info = model.info
    writes = (route.prices["cache_write"] for route in model.endpoints)
    prices = {
        "input": Decimal(repr(info.list_price_input)),
        "output": Decimal(repr(info.list_price_output)),
        "cache_read": Decimal(repr(info.list_price_cache_read or 0.0)),
        "cache_write": max(writes, default=Decimal(0)),
    }
    return _pricing(prices)


def _model_entry(slug: str, model: CatalogModel) -> dict:
    """One model in OpenRouter's ``Model`` shape, OpenAI's and Anthropic's at once (each
    client reads its own fields and ignores the others'), plus its endpoints."""
    routes = model.endpoints
    context = max((r.info.context_length for r in routes), default=0)
    outputs = [r.info.max_output_tokens for r in routes if r.info.max_output_tokens]
    pricing, per_1m = _model_pricing(model)
    marked = memory.knowledge.marks.unusable_ids(time.time())
    return {
        "id": slug,
        "canonical_slug": slug,
        # UberLLM: other names a request may give for this model (Claude Code's
        # claude-sonnet-4-5, ...); served, billed and listed as ``id``.
        "aliases": list(model.aliases),
        "name": model.name or slug,
        "object": "model",
        "created": model.created,  # required by OpenAI's Model (the SDK types it int)
        "owned_by": slug.split("/")[0],
        "type": "model",  # Anthropic's ModelInfo: type, display_name, created_at
        "display_name": model.name or slug,
        "created_at": _rfc3339(model.created),
        "description": model.description,
        "context_length": context,
        "architecture": ARCHITECTURE,
        "pricing": pricing,
        "pricing_per_1m": per_1m,
        "top_provider": {
            "context_length": context,
            "max_completion_tokens": max(outputs, default=None),
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": sorted(
            frozenset().union(*(r.info.supported_parameters for r in routes))
        ),
        "default_parameters": None,
        "supported_voices": None,
        "expiration_date": None,
        "knowledge_cutoff": None,
        "links": {"details": f"/api/v1/models/{slug}/endpoints"},
        "endpoints": [_endpoint(slug, model, route, marked) for route in routes],
    }


async def models_payload() -> dict:
    """``GET /api/v1/models``: OpenRouter's list (``data``, ``total_count``, ``links``),
    OpenAI's (``object``) and Anthropic's page fields: the whole catalog is one page."""
    await catalog_cache.get("")
    data = [_model_entry(slug, m) for slug, m in sorted(catalog_cache.snapshot().items())]
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {
        "object": "list",
        "data": data,
        "total_count": len(data),
        "links": {"next": None},
        "has_more": False,
        "first_id": first,
        "last_id": last,
    }


def _rfc3339(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def model_payload(slug: str) -> dict | None:
    """``GET /api/v1/models/{slug}`` (OpenAI's models.retrieve): one model, or None."""
    model = await catalog_cache.get(slug)  # an alias answers its catalog model
    return None if model is None else _model_entry(model.info.slug, model)


async def model_endpoints_payload(slug: str, *, measure: bool = False) -> dict | None:
    """``GET /api/v1/models/{slug}/endpoints`` in OpenRouter's shape; the measured
    latency, throughput and uptime only with ``measure`` (a caller with an API key, as
    on OpenRouter), else null."""
    model = await catalog_cache.get(slug)
    if model is None:
        return None
    slug = model.info.slug  # asked by an alias: the catalog model's endpoints
    ids = [route.endpoint_id for route in model.endpoints]
    stats = await db_call(measured)(ids) if measure else dict.fromkeys(ids, NOT_MEASURED)
    marked = memory.knowledge.marks.unusable_ids(time.time())
    endpoints = [
        {
            **_endpoint(slug, model, route, marked),
            **stats[route.endpoint_id],
            **_speed(route.endpoint_id),
        }
        for route in model.endpoints
    ]
    entry = _model_entry(slug, model)
    keep = ("id", "name", "created", "description", "architecture")
    return {"data": {**{k: entry[k] for k in keep}, "endpoints": endpoints}}
