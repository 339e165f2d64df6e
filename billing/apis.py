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
from .selectors.activity import MixedCursor

REJECTED_ID_PREFIX = "rej-"
DEFAULT_LIMIT = 100
MAX_LIMIT = 500


@extend_schema_field(OpenApiTypes.STR)
class MoneyField(serializers.Field):
    """A Decimal as its exact string without trailing zeros; null stays null."""

    def to_representation(self, value) -> str:
        return decimal_str(value)


class ActivityRowSerializer(serializers.Serializer):
    kind = serializers.SerializerMethodField()
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

    @extend_schema_field({"type": "string", "enum": ["call"]})
    def get_kind(self, row) -> str:
        return "call"


class RejectedRowSerializer(serializers.Serializer):
    """A request the gateway refused with a 4xx (``status=rejected``): no tokens, $0."""

    kind = serializers.SerializerMethodField()
    id = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    model = serializers.CharField(source="model_slug")
    status = serializers.SerializerMethodField()
    http_status = serializers.IntegerField()
    code = serializers.CharField()
    message = serializers.CharField()
    param = serializers.CharField(allow_null=True)
    total_cost = serializers.SerializerMethodField()

    @extend_schema_field({"type": "string", "enum": ["rejected"]})
    def get_kind(self, row) -> str:
        return "rejected"

    def get_id(self, row) -> str:
        return f"{REJECTED_ID_PREFIX}{row.id}"

    def get_status(self, row) -> str:
        return "rejected"

    def get_total_cost(self, row) -> str:
        return "0"

    def to_representation(self, instance) -> dict:
        data = super().to_representation(instance)
        data["param"] = data["param"] or None  # "" is stored for none
        return data


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


def encode_mixed_cursor(row) -> str:
    """The cursor after ``row`` of a mixed listing: its time, kind and id."""
    raw = f"{row.created_at.isoformat()}|{selectors.row_kind(row)}|{row.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_mixed_cursor(cursor: str) -> MixedCursor:
    """The (created_at, kind, id) a mixed listing's cursor points after; a calls-only
    cursor points after a call. ValidationError if it is not ours."""
    invalid = ValidationError({"cursor": ["Invalid cursor: pass back a next_cursor."]})
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise invalid from None
    created_at, _, rest = raw.partition("|")
    kind, _, pk = rest.rpartition("|")
    if kind not in ("", selectors.CALL_KIND, selectors.REJECTED_KIND):
        raise invalid
    try:
        return datetime.fromisoformat(created_at), kind or selectors.CALL_KIND, int(pk)
    except ValueError:
        raise invalid from None


TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes"), ("false", "0", "no", "")


def _include_rejected(value: str | None, form: ActivityFilterForm) -> bool:
    """``include_rejected``: true or false (default); refused requests have no call
    status, so it does not combine with a status filter other than "rejected"."""
    word = (value or "").strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise ValidationError({"include_rejected": ["Enter true or false."]})
    if word in TRUE_WORDS and form.filters().status:
        message = "Refused requests have no call status: drop status, or use status=rejected."
        raise ValidationError({"include_rejected": [message]})
    return word in TRUE_WORDS


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
    api_key, status, request_id); ``status=rejected`` lists refused requests instead
    (rows with ``kind: "rejected"``, same pagination); ``include_rejected=true`` lists
    both in one, newest first."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        organisation_id = request.auth.organisation_id
        params = request.query_params
        form = ActivityFilterForm(params, organisation_id=organisation_id)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        limit = _limit(params.get("limit"))
        cursor = params.get("cursor") or None
        if form.rejected:
            after = decode_cursor(cursor) if cursor else None
            return Response(_rejected_page(organisation_id, form, after=after, limit=limit))
        if _include_rejected(params.get("include_rejected"), form):
            after_mixed = decode_mixed_cursor(cursor) if cursor else None
            return Response(_mixed_page(organisation_id, form, after=after_mixed, limit=limit))
        after = decode_cursor(cursor) if cursor else None
        return Response(_calls_page(organisation_id, form, after=after, limit=limit))


def _page(serialized: list, rows: list, has_more: bool, totals: dict) -> dict:
    """The listing's shape, calls or rejections: rows, the cursor and the totals."""
    last = rows[-1] if rows else None
    return {
        "data": serialized,
        "has_more": has_more,
        "next_cursor": encode_cursor(last.created_at, last.id) if has_more else None,
        "totals": totals,
    }


def _calls_page(
    organisation_id: int, form: ActivityFilterForm, *, after: tuple | None, limit: int
) -> dict:
    queryset = selectors.activity_list(organisation_id=organisation_id, filters=form.filters())
    totals = selectors.usage_totals(organisation_id=organisation_id, filters=form.filters())
    rows, has_more = [], False  # no scan for a filter combination without rows
    if totals["calls"]:
        rows, has_more = selectors.activity_page_after(queryset, after=after, limit=limit)
    summary = _calls_summary(totals)
    return _page(ActivityRowSerializer(rows, many=True).data, rows, has_more, summary)


def _calls_summary(totals: dict) -> dict:
    savings = totals["savings"]
    return {
        "calls": totals["calls"],
        "total_cost": decimal_str(totals["cost"]),
        "saved_vs_list": _money_or_none(savings.vs_list),
        "saved_vs_cheapest_input_route": _money_or_none(savings.vs_cheapest),
        "tokens_prompt": totals["prompt"],
        "tokens_cached": totals["cached"],
        "tokens_completion": totals["completion"],
    }


def _mixed_page(
    organisation_id: int, form: ActivityFilterForm, *, after: MixedCursor | None, limit: int
) -> dict:
    """``include_rejected=true``: calls and refused requests in one listing, newest
    first (``kind`` tells them apart); the totals are the calls' plus ``rejected``. A
    provider or request id filter selects no rejection (they have neither)."""
    filters = form.filters()
    calls = selectors.activity_list(organisation_id=organisation_id, filters=filters)
    rejected = selectors.rejected_list(organisation_id=organisation_id, filters=filters)
    if filters.provider or filters.request_id:
        rejected = rejected.none()
    totals = selectors.usage_totals(organisation_id=organisation_id, filters=filters)
    if not totals["calls"]:
        calls = calls.none()  # no scan for a filter combination without calls
    rows, has_more = selectors.mixed_page_after(calls, rejected, after=after, limit=limit)
    summary = {**_calls_summary(totals), "rejected": rejected.count()}
    return {
        "data": [_row_data(row) for row in rows],
        "has_more": has_more,
        "next_cursor": encode_mixed_cursor(rows[-1]) if has_more else None,
        "totals": summary,
    }


def _row_data(row) -> dict:
    if selectors.row_kind(row) == selectors.REJECTED_KIND:
        return RejectedRowSerializer(row).data
    return ActivityRowSerializer(row).data


def _rejected_page(
    organisation_id: int, form: ActivityFilterForm, *, after: tuple | None, limit: int
) -> dict:
    """``status=rejected``: the refused requests the filters select (date, model, key);
    not calls, so the totals count them under ``rejected`` with no calls and $0."""
    queryset = selectors.rejected_list(organisation_id=organisation_id, filters=form.filters())
    rows, has_more = selectors.activity_page_after(queryset, after=after, limit=limit)
    summary = {
        "calls": 0,
        "rejected": queryset.count(),
        "total_cost": "0",
        "saved_vs_list": None,
        "saved_vs_cheapest_input_route": None,
        "tokens_prompt": 0,
        "tokens_cached": 0,
        "tokens_completion": 0,
    }
    return _page(RejectedRowSerializer(rows, many=True).data, rows, has_more, summary)


def _money_or_none(value) -> str | None:
    return None if value is None else decimal_str(value)
