"""Shared helpers of the dashboard tests (real database, Django test client)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from django.test import Client

from billing.ledger import CallResult, activity_finish, activity_open
from billing.models import Activity
from providers.services import catalog_import

from ..support import catalog_for_tests

JAN = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)
# tests.support.TEST_PRICES: alpha (cheapest input) 0.10 / 0.01 / 0.40; bravo 0.20 / 0.02
# / 0.60; list prices 0.50 input, 0.05 cache read, 1.50 output (USD per 1M tokens).


def install_test_catalog() -> dict:
    from providers.models import Endpoint

    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    return {e.provider.slug: e for e in Endpoint.objects.select_related("provider")}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def finished_call(
    tenant,
    request_id: str,
    *,
    endpoint,
    prompt: int,
    cached: int = 0,
    completion: int,
    created_at=JAN,
    ttft_ms: int = 120,
    prompt_bucket: str = "<8k",
    **extra,
) -> Activity:
    """A call through the real ledger (open, then finish at the endpoint's prices)."""
    from billing.pricing import call_cost

    prices = {n: getattr(endpoint, f"price_{n}") for n in ("input", "cache_read", "output")}
    activity_open(
        request_id=request_id,
        organisation_id=tenant.organisation.id,
        api_key_id=tenant.api_key.id,
        model_slug=endpoint.model.slug,
        stream=True,
        created_at=created_at,
    )
    cost = call_cost(
        prices=prices, prompt_tokens=prompt, cached_tokens=cached, completion_tokens=completion
    )
    result = CallResult(
        request_id=request_id,
        status="success",
        http_status=200,
        endpoint_id=endpoint.id,
        provider_slug=endpoint.provider.slug,
        prompt_tokens=prompt,
        cached_tokens=cached,
        completion_tokens=completion,
        cost_usd=cost,
        prices={k: str(v) for k, v in prices.items()},
        ttft_ms=ttft_ms,
        total_ms=400,
        routing_strategy="smart",
        routing_reason="cheapest fast-enough",
        prompt_bucket=prompt_bucket,
        **extra,
    )
    assert activity_finish(result)
    return Activity.unscoped_objects.get(request_id=request_id)


D = Decimal
