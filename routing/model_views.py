"""``GET /api/v1/models/{slug}`` (OpenAI's models.retrieve) and
``GET /api/v1/models/{slug}/endpoints`` (OpenRouter's): JSON, 404 for an unknown model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from billing.auth import authenticate

from .errors import GatewayError, unless_read
from .selectors import model_endpoints_payload, model_payload


async def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    return await _one_model(request, slug, model_payload)


async def model_endpoints(request: HttpRequest, slug: str) -> HttpResponse:
    """Anyone may read a model's endpoints; the measured latency, throughput and uptime
    are given to a caller with a valid API key (OpenRouter: null without one)."""
    principal = await authenticate(request.headers.get("Authorization"))
    measure = principal is not None

    async def read(model_slug: str) -> dict | None:
        return await model_endpoints_payload(model_slug, measure=measure)

    return await _one_model(request, slug, read)


async def _one_model(
    request: HttpRequest, slug: str, read: Callable[[str], Awaitable[dict | None]]
) -> HttpResponse:
    if (refused := unless_read(request)) is not None:
        return refused
    payload = await read(slug)
    if payload is None:
        return GatewayError(404, f"Unknown model '{slug}'.", code="model_not_found").response()
    return JsonResponse(payload)
