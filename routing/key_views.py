"""``GET /api/v1/key``: the calling key's monthly limit, spend this month and what is left
(OpenRouter's ``/key``; the month is the calendar month, UTC), plus its other limits
(daily, the organisation's, rate limits, expiry, allowed models)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from billing.auth import authenticate
from billing.selectors import api_key_month_spend
from common.aio import db_call

from .errors import GatewayError, unless_read


async def current_key(request: HttpRequest) -> HttpResponse:
    if (refused := unless_read(request)) is not None:
        return refused
    principal = await authenticate(request.headers.get("Authorization"))
    if principal is None:
        return GatewayError(401, "Missing, invalid or revoked API key.",
                            code="invalid_api_key").response()  # fmt: skip
    if principal.expires_at is not None and principal.expires_at <= timezone.now():
        return GatewayError(401, "This API key has expired.", code="expired_api_key").response()
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
        "daily_limit": _num(principal.daily_limit_usd),
        "organisation_monthly_limit": _num(principal.org_monthly_limit_usd),
        "organisation_daily_limit": _num(principal.org_daily_limit_usd),
        "rate_limit": {"requests_per_minute": principal.rate_limit_rpm,
                       "tokens_per_minute": principal.rate_limit_tpm,
                       "concurrent": principal.max_concurrent},
        "expires_at": principal.expires_at.isoformat() if principal.expires_at else None,
        "allowed_models": list(principal.allowed_models) or None,
    }})  # fmt: skip


def _num(value) -> float | None:
    return None if value is None else float(value)
