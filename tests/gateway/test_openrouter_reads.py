"""OpenRouter's reads, live: /models, /models/{slug}/endpoints, /key (+ /auth/key) and
/credits answer in OpenRouter's documented shapes (tests/gateway/openrouter_schemas.py)
with the gateway's real figures."""

from decimal import Decimal

import httpx
import jsonschema
import pytest
from asgiref.sync import async_to_sync

from ..support import HI, TEST_MODEL, make_tenant, post_chat
from . import openrouter_schemas as schemas
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


def _get(gateway, path: str, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{gateway.api_url}{path}", headers=headers, timeout=30)


def _valid(payload: dict, schema: dict) -> dict:
    jsonschema.validate(payload, schema, format_checker=jsonschema.FormatChecker())
    return payload


def test_models_in_openrouter_shape_with_per_token_prices(gateway, tenant, market):
    market["alpha"].price_cache_write = Decimal("0.125")
    market["alpha"].save()
    listing = _valid(_get(gateway, "/models").json(), schemas.MODELS_LIST)
    model = next(m for m in listing["data"] if m["id"] == TEST_MODEL)
    # list prices 0.50 / 0.05 / 1.50 per 1M; cache writes: the dearest endpoint's
    assert model["pricing"]["prompt"] == "0.0000005"
    assert model["pricing"]["completion"] == "0.0000015"
    assert model["pricing"]["input_cache_read"] == "0.00000005"
    assert model["pricing"]["input_cache_write"] == "0.000000125"
    assert model["pricing_per_1m"]["prompt"] == "0.5"
    assert listing["total_count"] == len(listing["data"]) and listing["links"]["next"] is None
    by_tag = {e["tag"]: e for e in model["endpoints"]}
    assert by_tag["charlie"]["pricing"]["completion"] == "0.0000009"  # 0.90 per 1M
    assert by_tag["alpha"]["provider_name"] == "Alpha"


def test_sdks_still_parse_the_model_list(client, claude):
    assert TEST_MODEL in {m.id for m in client.models.list()}
    page = claude.models.list()
    model = next(m for m in page.data if m.id == TEST_MODEL)
    assert model.display_name == "Test model A"


def _learn(market) -> None:
    from routing.catalog import catalog_cache
    from routing.memory import refresher
    from routing.models import SpeedSample

    SpeedSample.objects.bulk_create(
        SpeedSample(endpoint=market["alpha"], bucket="<8k", ttft_ms=ms, output_tokens_per_s=tps)
        for ms, tps in [(100, 80.0), (200, 60.0), (300, 40.0), (400, 20.0)]
    )
    async_to_sync(catalog_cache.get)(TEST_MODEL)
    async_to_sync(refresher.refresh_now)()


def test_endpoints_in_openrouter_shape_with_measured_figures(gateway, tenant, market):
    _learn(market)
    wait_finished(post_chat(gateway, tenant.key, provider={"order": ["bravo"]}).json()["id"])
    path = f"/models/{TEST_MODEL}/endpoints"
    data = _valid(_get(gateway, path, tenant.key).json(), schemas.ENDPOINTS_LIST)["data"]
    assert data["id"] == TEST_MODEL
    by_tag = {e["tag"]: e for e in data["endpoints"]}
    alpha = by_tag["alpha"]
    assert (alpha["provider_name"], alpha["status"], alpha["context_length"]) == (
        "Alpha",
        0,
        200_000,
    )
    assert alpha["pricing"]["prompt"] == "0.0000001"
    assert alpha["latency_last_30m"] == {"p50": 200, "p75": 300, "p90": 400, "p99": 400}
    # speeds: p90 is what 90% of the calls reached (OpenRouter's order)
    assert alpha["throughput_last_30m"] == {"p50": 40, "p75": 20, "p90": 20, "p99": 20}
    assert by_tag["bravo"]["uptime_last_5m"] == by_tag["bravo"]["uptime_last_1d"] == 100.0
    assert alpha["uptime_last_30m"] is None  # no attempt there
    assert alpha["ttft_by_bucket"]["<8k"]["samples"] == 4
    # without a key: the same shape, the measured figures null (as on OpenRouter)
    anonymous = _valid(_get(gateway, path).json(), schemas.ENDPOINTS_LIST)["data"]
    assert all(e["latency_last_30m"] is None for e in anonymous["endpoints"])


def test_a_failing_endpoint_loses_uptime_and_a_429_does_not_count(gateway, tenant, emulator):
    emulator.control("alpha", status_override=500)
    first = post_chat(gateway, tenant.key)
    assert first.json()["provider"] == "bravo"
    emulator.control("bravo", status_override=429)
    wait_finished(first.json()["id"])
    last = wait_finished(post_chat(gateway, tenant.key, provider={"order": ["bravo"]}).json()["id"])
    path = f"/models/{TEST_MODEL}/endpoints"
    by_tag = {e["tag"]: e for e in _get(gateway, path, tenant.key).json()["data"]["endpoints"]}
    assert last.provider_slug in {"alpha", "charlie"}
    assert by_tag["alpha"]["uptime_last_5m"] < 100.0
    assert by_tag["bravo"]["uptime_last_5m"] == 100.0  # its 429 is left out


def _spend(client) -> float:
    reply = client.chat.completions.create(model=TEST_MODEL, messages=HI)
    return float(wait_finished(reply.id).cost_usd)


@pytest.mark.parametrize("path", ["/key", "/auth/key"])
def test_key_in_openrouter_shape(gateway, tenant, client, path):
    from billing import auth

    tenant.api_key.monthly_limit_usd, tenant.api_key.rate_limit_rpm = Decimal("5.00"), 120
    tenant.api_key.save()
    auth._cache.clear()
    spent = _spend(client)
    data = _valid(_get(gateway, path, tenant.key).json(), schemas.KEY)["data"]
    assert data["limit"] == 5.0 and data["limit_reset"] == "monthly"
    for period in ("usage", "usage_daily", "usage_weekly", "usage_monthly"):
        assert data[period] == pytest.approx(spent)
    assert data["limit_remaining"] == pytest.approx(5.0 - spent)
    assert data["rate_limit"]["requests"] == 120 and data["rate_limit"]["interval"] == "1m"
    assert data["label"] == tenant.api_key.name
    assert _get(gateway, path).status_code == 401


def test_key_without_limits(gateway, tenant):
    data = _valid(_get(gateway, "/key", tenant.key).json(), schemas.KEY)["data"]
    assert (data["limit"], data["limit_remaining"], data["limit_reset"]) == (None, None, None)
    assert data["usage"] == 0.0 and data["rate_limit"]["requests"] == -1


def test_credits_is_the_organisations_spend(gateway, tenant, client):
    from billing import auth

    spent = _spend(client)
    other = make_tenant("Other")  # its spend is not this organisation's
    data = _valid(_get(gateway, "/credits", tenant.key).json(), schemas.CREDITS)["data"]
    assert data["total_usage"] == pytest.approx(spent)
    assert data["total_credits"] == data["total_usage"]  # no limit: nothing left to count
    assert data["limit_remaining"] is None
    tenant.organisation.monthly_limit_usd = Decimal("10")
    tenant.organisation.save()
    auth._cache.clear()
    limited = _get(gateway, "/credits", tenant.key).json()["data"]
    assert limited["limit_remaining"] == pytest.approx(10 - spent)
    assert limited["total_credits"] - limited["total_usage"] == pytest.approx(10 - spent)
    assert _get(gateway, "/credits", other.key).json()["data"]["total_usage"] == 0.0
    assert _get(gateway, "/credits").status_code == 401
