"""The customer's ledger over the API (API-key authenticated, scoped to its organisation)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from . import selectors
from .drf import ApiKeyAuthentication
from .forms import ActivityFilterForm

MAX_ROWS = 500


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
    total_cost = serializers.DecimalField(source="cost_usd", max_digits=20, decimal_places=10)
    ttft_ms = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(source="total_ms", allow_null=True)
    hedged = serializers.BooleanField()


class ActivityListApi(APIView):
    """GET /api/v1/activity: the organisation's calls (newest first, at most 500) and the
    totals of every call the filters select (the same filters as the dashboard)."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        organisation_id = request.auth.organisation_id
        form = ActivityFilterForm(request.query_params, organisation_id=organisation_id)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        queryset = selectors.activity_list(organisation_id=organisation_id, filters=form.filters())
        totals = selectors.activity_totals(queryset)
        rows = ActivityRowSerializer(queryset[:MAX_ROWS], many=True).data
        return Response(
            {
                "data": rows,
                "totals": {
                    "calls": totals["calls"],
                    "total_cost": str(totals["cost"]),
                    "tokens_prompt": totals["prompt"],
                    "tokens_cached": totals["cached"],
                    "tokens_completion": totals["completion"],
                },
            }
        )
