"""The customer's ledger over the API (API-key authenticated, scoped to its organisation).

Money is a JSON string holding the exact decimal without trailing zeros
(``"0.00002019"``): floats would round, and a fixed 10-place string reads as noise.
Listings are cursor-paginated, newest first: ``next_cursor`` is opaque, pass it back
as ``cursor`` while ``has_more`` is true.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from . import selectors
from .drf import ApiKeyAuthentication
from .forms import ActivityFilterForm
from .money import decimal_str

DEFAULT_LIMIT = 100
MAX_LIMIT = 500


@extend_schema_field(OpenApiTypes.STR)
class MoneyField(serializers.Field):
    """A Decimal as its exact string without trailing zeros; null stays null."""

    def to_representation(self, value) -> str:
        return decimal_str(value)


class ActivityRowSerializer(serializers.Serializer):
    id = serializers.CharField(source="request_id")
    created_at = serializers.DateTimeField()
    model = serializers.CharField(source="model_slug")
    provider_name = serializers.CharField(source="provider_slug")
    status = serializers.CharField()
    streamed = serializers.BooleanField(source="stream")
    tokens_prompt = serializers.IntegerField(source="prompt_tokens")
    tokens_cached = serializers.IntegerField(source="cached_tokens")
    tokens_completion = serializers.IntegerField(source="completion_tokens")
    total_cost = MoneyField(source="cost_usd")
    list_price_cost = MoneyField(source="list_cost_usd", allow_null=True)
    cheapest_input_route_cost = MoneyField(source="cheapest_cost_usd", allow_null=True)
    ttft_ms = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(source="total_ms", allow_null=True)
    hedged = serializers.BooleanField()


def encode_cursor(created_at: datetime, pk: int) -> str:
    raw = f"{created_at.isoformat()}|{pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The (created_at, id) a cursor points after; ValidationError if it is not ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, pk = raw.rsplit("|", 1)
        return datetime.fromisoformat(created_at), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ValidationError({"cursor": ["Invalid cursor: pass back a next_cursor."]}) from None


def _limit(value: str | None) -> int:
    if value in (None, ""):
        return DEFAULT_LIMIT
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError({"limit": [f"Enter a whole number from 1 to {MAX_LIMIT}."]})
    return limit


class ActivityListApi(APIView):
    """GET /api/v1/activity: the organisation's calls, newest first, ``limit`` (1-500,
    default 100) per page with ``cursor`` pagination, and the totals of every call the
    filters select (the dashboard's filters: date_from, date_to, model, provider,
    api_key, status, request_id)."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        organisation_id = request.auth.organisation_id
        params = request.query_params
        form = ActivityFilterForm(params, organisation_id=organisation_id)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        if form.rejected:
            raise ValidationError(
                {"status": ["Rejected requests are listed on the dashboard, not by this API."]}
            )
        limit = _limit(params.get("limit"))
        after = decode_cursor(params["cursor"]) if params.get("cursor") else None
        queryset = selectors.activity_list(organisation_id=organisation_id, filters=form.filters())
        totals = selectors.usage_totals(organisation_id=organisation_id, filters=form.filters())
        rows, has_more = [], False  # no scan for a filter combination without rows
        if totals["calls"]:
            rows, has_more = selectors.activity_page_after(queryset, after=after, limit=limit)
        savings = totals["savings"]
        last = rows[-1] if rows else None
        return Response(
            {
                "data": ActivityRowSerializer(rows, many=True).data,
                "has_more": has_more,
                "next_cursor": encode_cursor(last.created_at, last.id) if has_more else None,
                "totals": {
                    "calls": totals["calls"],
                    "total_cost": decimal_str(totals["cost"]),
                    "saved_vs_list": _money_or_none(savings.vs_list),
                    "saved_vs_cheapest_input_route": _money_or_none(savings.vs_cheapest),
                    "tokens_prompt": totals["prompt"],
                    "tokens_cached": totals["cached"],
                    "tokens_completion": totals["completion"],
                },
            }
        )


def _money_or_none(value) -> str | None:
    return None if value is None else decimal_str(value)


class CreditsApi(APIView):
    """GET /api/v1/credits (OpenRouter's shape): the organisation's credits (top-ups and
    adjustments) and its all-time usage as JSON numbers (what OpenRouter clients parse),
    and the same figures with the balance as exact decimal strings under ``exact``.
    Read from the ledgers, never from the quota store."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        summary = selectors.credit_summary(organisation_id=request.auth.organisation_id)
        return Response(
            {
                "data": {
                    "total_credits": float(summary.total_credits),
                    "total_usage": float(summary.total_usage),
                    "prepaid": request.auth.prepaid,
                    "exact": {
                        "total_credits": decimal_str(summary.total_credits),
                        "total_usage": decimal_str(summary.total_usage),
                        "balance": decimal_str(summary.balance),
                    },
                }
            }
        )
