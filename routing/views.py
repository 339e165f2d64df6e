"""The public API's Django views (the chat endpoint itself is the lean ASGI handler in
``routing.gateway.asgi``): models, and JSON answers for every error under ``/api/``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from .errors import GatewayError, unless_read
from .selectors import models_payload


async def models_list(request: HttpRequest) -> HttpResponse:
    """GET /api/v1/models: the catalog with every endpoint's prices (public, like OpenAI's)."""

    if (refused := unless_read(request)) is not None:
        return refused
    return JsonResponse(await models_payload())


def api_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return GatewayError(404, f"No API endpoint at {request.path}.", code="not_found").response()


def api_server_error(request: HttpRequest) -> HttpResponse:
    return GatewayError(500, "Internal server error.", code="internal").response()
