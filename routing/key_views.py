"""``GET /api/v1/key``: the calling key's monthly limit, spend this month and what is left
(OpenRouter's ``/key``; the month is the calendar month, UTC)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from billing.auth import authenticate
from billing.selectors import api_key_month_spend
from uberllm.aio import db_call

from .errors import GatewayError


async def current_key(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return GatewayError(405, "Use GET.", allow="GET").response()
    principal = await authenticate(request.headers.get("Authorization"))
    if principal is None:
        return GatewayError(401, "Missing, invalid or revoked API key.",
                            code="invalid_api_key").response()  # fmt: skip
    spend = await db_call(api_key_month_spend)(
        organisation_id=principal.organisation_id, api_key_id=principal.api_key_id
    )
    limit = principal.monthly_limit_usd
    remaining = None if limit is None else max(limit - spend, 0)
    return JsonResponse({"data": {
        "limit": None if limit is None else float(limit),
        "usage": float(spend),
        "limit_remaining": None if remaining is None else float(remaining),
        "limit_reset": "monthly",
    }})  # fmt: skip
