"""The published OpenAPI schema, and schemathesis against the live gateway with it:
no 5xx, every status, content type and JSON body as the schema says."""

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db(transaction=True)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_schema_lists_every_public_path(gateway):
    schema = httpx.get(f"{gateway.api_url}/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert {
        "/api/v1/chat/completions",
        "/api/v1/messages",
        "/api/v1/messages/count_tokens",
        "/api/v1/responses",
        "/api/v1/models",
        "/api/v1/models/{slug}",
        "/api/v1/models/{slug}/endpoints",
        "/api/v1/generation",
        "/api/v1/activity",
        "/api/v1/key",
        "/api/v1/auth/key",
        "/api/v1/credits",
    } <= set(schema["paths"])
    assert httpx.get(f"{gateway.base_url}/v1/openapi.json").json() == schema


def _conforms(operation, gateway, key: str) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=30,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case):
        case.call_and_validate(
            base_url=gateway.base_url, checks=CHECKS, headers={"Authorization": f"Bearer {key}"}
        )

    check()


def test_api_conforms_to_its_schema(gateway, tenant, emulator):
    """schemathesis (property-based) on every operation: valid and invalid bodies,
    parameters and paths; any 5xx or any answer the schema does not describe fails."""
    loaded = schemathesis.openapi.from_url(f"{gateway.api_url}/openapi.json")
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) >= 8
    for operation in operations:
        _conforms(operation, gateway, tenant.key)
