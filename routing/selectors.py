"""Reads for the public API."""

from __future__ import annotations

from .catalog import catalog_cache


def _price(value) -> str:
    return format(value, "f")


async def models_payload() -> dict:
    """``GET /api/v1/models``: OpenAI's list shape plus each endpoint's prices (USD / 1M)."""
    await catalog_cache.get("")
    data = []
    for slug, model in sorted(catalog_cache.snapshot().items()):
        endpoints = [
            {
                "provider": route.provider_slug,
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
        data.append(
            {
                "id": slug,
                "object": "model",
                "owned_by": slug.split("/")[0],
                "context_length": max(r.info.context_length for r in model.endpoints),
                "pricing": {
                    "prompt": str(model.info.list_price_input),
                    "completion": str(model.info.list_price_output),
                    "unit": "USD per 1M tokens (official list price)",
                },
                "endpoints": endpoints,
            }
        )
    return {"object": "list", "data": data}
