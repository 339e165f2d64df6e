"""OpenRouter's account reads, in OpenRouter's shape:

- ``GET /api/v1/key`` (and the older ``/api/v1/auth/key``): the calling key's label,
  spend (all time, today, this week, this month; UTC), monthly limit and what is left of
  it, and rate limit; plus UberLLM's other limits (daily, the organisation's, expiry,
  allowed models);
- ``GET /api/v1/credits``: the organisation's spend. UberLLM has no prepaid balance:
  ``total_credits`` is what the organisation may have spent by the end of this period,
  ``total_usage`` plus what its monthly and daily limits leave now (just
  ``total_usage`` without a limit), so ``total_credits - total_usage`` is what it may
  still spend, as a client computes it; ``limit_remaining`` says the same, null when no
  limit caps it.
"""

from __future__ import annotations

from decimal import Decimal

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from billing.auth import KeyPrincipal, authenticate
from billing.money import decimal_str
from billing.selectors import api_key_usage, credit_summary, organisation_usage
from common.aio import db_call

from .errors import GatewayError, unless_read

# OpenRouter's usage through the customer's own provider keys: UberLLM has none.
BYOK_USAGE = {
    "byok_usage": 0.0,
    "byok_usage_daily": 0.0,
    "byok_usage_weekly": 0.0,
    "byok_usage_monthly": 0.0,
}
RATE_LIMIT_NOTE = (
    "requests per minute for this key (-1: none); tokens_per_minute and concurrent are "
    "UberLLM's other rate limits"
)


async def _caller(request: HttpRequest) -> KeyPrincipal | HttpResponse:
    """The calling key, or the answer refusing the request (405, 401)."""
    if (refused := unless_read(request)) is not None:
        return refused
    principal = await authenticate(request.headers.get("Authorization"))
    if principal is None:
        return GatewayError(
            401, "Missing, invalid or revoked API key.", code="invalid_api_key"
        ).response()
    if principal.expires_at is not None and principal.expires_at <= timezone.now():
        return GatewayError(401, "This API key has expired.", code="expired_api_key").response()
    return principal


async def current_key(request: HttpRequest) -> HttpResponse:
    """OpenRouter's ``GET /key``."""
    principal = await _caller(request)
    if isinstance(principal, HttpResponse):
        return principal
    usage = await db_call(api_key_usage)(
        organisation_id=principal.organisation_id, api_key_id=principal.api_key_id
    )
    return JsonResponse({"data": key_data(principal, usage)})


def key_data(principal: KeyPrincipal, usage: dict) -> dict:
    limit = principal.monthly_limit_usd
    remaining = None if limit is None else max(limit - usage["month"], Decimal(0))
    return {
        "label": usage["name"],
        "limit": _num(limit),
        "limit_remaining": _num(remaining),
        "limit_reset": None if limit is None else "monthly",
        "usage": float(usage["total"]),
        "usage_daily": float(usage["day"]),
        "usage_weekly": float(usage["week"]),
        "usage_monthly": float(usage["month"]),
        **BYOK_USAGE,
        "include_byok_in_limit": False,
        "is_free_tier": False,
        "is_management_key": False,
        "is_provisioning_key": False,
        "creator_user_id": None,
        "rate_limit": {
            "requests": -1 if principal.rate_limit_rpm is None else principal.rate_limit_rpm,
            "interval": "1m",
            "note": RATE_LIMIT_NOTE,
            "tokens_per_minute": principal.rate_limit_tpm,
            "concurrent": principal.max_concurrent,
        },
        "expires_at": principal.expires_at.isoformat() if principal.expires_at else None,
        "daily_limit": _num(principal.daily_limit_usd),
        "organisation_monthly_limit": _num(principal.org_monthly_limit_usd),
        "organisation_daily_limit": _num(principal.org_daily_limit_usd),
        "allowed_models": list(principal.allowed_models) or None,
    }


async def credits(request: HttpRequest) -> HttpResponse:
    """OpenRouter's ``GET /credits`` for the calling key's organisation: a prepaid one's
    top-ups and all-time usage (its balance is the difference); a post-paid one's usage
    plus what its limits leave (docs/api.md)."""
    principal = await _caller(request)
    if isinstance(principal, HttpResponse):
        return principal
    if principal.prepaid:
        summary = await db_call(credit_summary)(organisation_id=principal.organisation_id)
        return JsonResponse({"data": _prepaid(summary)})
    usage = await db_call(organisation_usage)(organisation_id=principal.organisation_id)
    return JsonResponse({"data": _postpaid(principal, usage)})


def _prepaid(summary) -> dict:
    return {
        "total_credits": float(summary.total_credits),
        "total_usage": float(summary.total_usage),
        "prepaid": True,
        "exact": {
            "total_credits": decimal_str(summary.total_credits),
            "total_usage": decimal_str(summary.total_usage),
            "balance": decimal_str(summary.balance),
        },
    }


def _postpaid(principal: KeyPrincipal, usage: dict) -> dict:
    left = [
        max(limit - spent, Decimal(0))
        for limit, spent in (
            (principal.org_monthly_limit_usd, usage["month"]),
            (principal.org_daily_limit_usd, usage["day"]),
        )
        if limit is not None
    ]
    remaining = min(left) if left else None
    return {
        "total_credits": float(usage["total"] + (remaining or 0)),
        "total_usage": float(usage["total"]),
        "prepaid": False,
        "usage_monthly": float(usage["month"]),
        "usage_daily": float(usage["day"]),
        "limit_monthly": _num(principal.org_monthly_limit_usd),
        "limit_daily": _num(principal.org_daily_limit_usd),
        "limit_remaining": _num(remaining),
    }


def _num(value: Decimal | None) -> float | None:
    return None if value is None else float(value)
