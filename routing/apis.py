"""DRF APIs authenticated by the customer's API key (sync, off the hot path)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from billing.drf import ApiKeyAuthentication
from billing.selectors import activity_get


class AttemptSerializer(serializers.Serializer):
    attempt_no = serializers.IntegerField()
    provider_name = serializers.CharField(source="provider_slug")
    outcome = serializers.CharField()
    status = serializers.IntegerField(source="http_status", allow_null=True)
    reason = serializers.CharField()
    error = serializers.CharField(source="error_message")
    ttft_ms = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(source="duration_ms", allow_null=True)


class GenerationSerializer(serializers.Serializer):
    id = serializers.CharField(source="request_id")
    model = serializers.CharField(source="model_slug")
    provider_name = serializers.CharField(source="provider_slug")
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    streamed = serializers.BooleanField(source="stream")
    tokens_prompt = serializers.IntegerField(source="prompt_tokens")
    tokens_cached = serializers.IntegerField(source="cached_tokens")
    tokens_completion = serializers.IntegerField(source="completion_tokens")
    total_cost = serializers.DecimalField(source="cost_usd", max_digits=20, decimal_places=10)
    usage_estimated = serializers.BooleanField()
    ttft_ms = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(source="total_ms", allow_null=True)
    routing_strategy = serializers.CharField()
    routing_reason = serializers.CharField()
    prompt_bucket = serializers.CharField()
    error = serializers.CharField(source="error_message")
    attempts = AttemptSerializer(many=True)


class GenerationApi(APIView):
    """GET /api/v1/generation?id=gen-...: one call's record, scoped to the key's organisation."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        activity = activity_get(
            organisation_id=request.auth.organisation_id,
            request_id=request.query_params.get("id", ""),
        )
        return Response({"data": GenerationSerializer(activity).data})
