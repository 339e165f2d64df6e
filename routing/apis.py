"""DRF APIs authenticated by the customer's API key (sync, off the hot path)."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import APIView

from billing.apis import ActivityRowSerializer
from billing.drf import ApiKeyAuthentication
from billing.generations import generation_record
from billing.models import Activity


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
    attempts = AttemptSerializer(many=True, source="attempt_rows")


class GenerationNotFinal(APIException):
    """A call in flight, or finished by another process whose ledger batch is not
    written yet: 404 with ``Retry-After``, as OpenRouter answers until its record
    exists, never a pending record with a cost of $0 that reads as final."""

    status_code = 404
    default_code = "generation_pending"
    wait = 1  # seconds: DRF sends it as Retry-After

    def __init__(self, request_id: str) -> None:
        super().__init__(
            f"Generation {request_id} is not final yet (the call is in flight, or its "
            "record is being written): retry in a second."
        )


class GenerationApi(APIView):
    """GET /api/v1/generation?id=gen-...: one call's record, scoped to the key's organisation."""

    authentication_classes = [ApiKeyAuthentication]

    def get(self, request):
        request_id = request.query_params.get("id", "")
        activity = generation_record(
            organisation_id=request.auth.organisation_id, request_id=request_id
        )
        if activity.status == Activity.Status.PENDING:
            raise GenerationNotFinal(request_id)
        return Response({"data": GenerationSerializer(activity).data})
