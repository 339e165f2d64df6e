"""DRF APIs authenticated by the customer's API key (sync, off the hot path)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from billing.apis import ActivityRowSerializer
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


class GenerationSerializer(ActivityRowSerializer):
    """One call: the Activity API's row, plus routing, errors and every attempt."""

    usage_estimated = serializers.BooleanField()
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
