"""Code written for OpenRouter works: its provider preferences, the ``models`` fallback
list, ``usage.include``, models.retrieve, and the ``/v1`` base URL without ``/api``."""

import httpx
import pytest

from ..support import HI, TEST_MODEL, post_chat, stream_chat
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_documented_provider_preference_is_accepted(gateway, tenant, emulator, market):
    from routing.catalog import catalog_cache

    bravo = market["bravo"]
    bravo.collects_data, bravo.zdr = False, True  # the only endpoint zdr lets through
    bravo.save()
    catalog_cache.invalidate()
    provider = {
        "data_collection": "deny",
        "zdr": True,
        "enforce_distillable_text": False,
        "quantizations": ["fp8", "bf16"],
        "preferred_max_latency": {"p90": 3},
        "preferred_min_throughput": 20,
        "allow_fallbacks": True,
        "sort": "price",
        "max_price": {"prompt": 5, "completion": 5, "request": 0.1, "image": 0.1},
    }
    response = post_chat(gateway, tenant.key, provider=provider)
    assert response.status_code == 200, response.text
    assert response.json()["provider"] == "bravo"
    assert "provider" not in emulator.log()[0]["request_body_keys"]
    reason = wait_finished(response.json()["id"]).routing_reason
    assert reason == "sorted by price (ignored: enforce_distillable_text, quantizations)"


def test_order_naming_an_unknown_provider_falls_back(gateway, tenant, emulator):
    response = post_chat(gateway, tenant.key, provider={"order": ["retired", "bravo"]})
    assert response.status_code == 200, response.text
    assert response.json()["provider"] == "bravo"


def test_order_naming_an_unknown_provider_without_fallbacks_is_an_error(gateway, tenant, emulator):
    response = post_chat(
        gateway, tenant.key, provider={"order": ["retired"], "allow_fallbacks": False}
    )
    assert response.status_code == 400
    assert "retired" in response.json()["error"]["message"]
    assert emulator.log() == []


def test_require_parameters_filters_on_supported_parameters(gateway, tenant, emulator):
    # The test catalog's endpoints support max_tokens, temperature and tools.
    ok = post_chat(gateway, tenant.key, temperature=0.5, provider={"require_parameters": True})
    assert ok.status_code == 200, ok.text
    refused = post_chat(gateway, tenant.key, top_p=0.5, provider={"require_parameters": True})
    assert refused.status_code == 404
    assert "top_p" in refused.json()["error"]["message"]
    assert post_chat(gateway, tenant.key, top_p=0.5).status_code == 200  # dropped-by-default


def test_models_fallback_list_plans_the_next_model(gateway, tenant, emulator):
    response = post_chat(gateway, tenant.key, model="gone/model", models=["gone/model", TEST_MODEL])
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["model"] == TEST_MODEL
    assert wait_finished(reply["id"]).model_slug == TEST_MODEL
    assert "models" not in emulator.log()[0]["request_body_keys"]


def test_models_list_without_model_uses_its_first(gateway, tenant, emulator):
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        headers={"Authorization": f"Bearer {tenant.key}"},
        json={"models": [TEST_MODEL], "messages": HI},
        timeout=30,
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("model", [0, False, []])
def test_a_falsy_model_beside_a_models_list_is_a_400(gateway, tenant, emulator, model):
    # It fell back to the list as if absent (found by fuzzing): only absence does.
    response = post_chat(gateway, tenant.key, model=model, models=[TEST_MODEL])
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "model"


def test_models_fallback_all_unknown_is_the_first_models_error(gateway, tenant, emulator):
    response = post_chat(gateway, tenant.key, model="gone/a", models=["gone/b"])
    assert response.status_code == 404
    assert "gone/a" in response.json()["error"]["message"]


def test_usage_include_streams_the_usage_chunk(gateway, tenant, emulator):
    body = {"model": TEST_MODEL, "messages": HI, "stream": True, "usage": {"include": True}}
    with stream_chat(gateway.api_url, tenant.key, body) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: {")]
    assert '"usage":{"prompt_tokens"' in lines[-1]


def test_models_retrieve_and_endpoints(gateway, tenant, client):
    model = client.models.retrieve(TEST_MODEL)
    assert model.id == TEST_MODEL
    assert "tools" in model.model_extra["supported_parameters"]
    endpoints = httpx.get(f"{gateway.api_url}/models/{TEST_MODEL}/endpoints").json()["data"]
    assert {e["tag"] for e in endpoints["endpoints"]} == {"alpha", "bravo", "charlie"}
    assert all("ttft_by_bucket" in e for e in endpoints["endpoints"])
    missing = httpx.get(f"{gateway.api_url}/models/nobody/none")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"


def test_v1_base_url_without_api(gateway, tenant, emulator):
    from openai import OpenAI

    with OpenAI(base_url=f"{gateway.base_url}/v1", api_key=tenant.key, max_retries=0) as client:
        assert TEST_MODEL in {m.id for m in client.models.list()}
        assert client.models.retrieve(TEST_MODEL).id == TEST_MODEL
        reply = client.chat.completions.create(model=TEST_MODEL, messages=HI)
    assert reply.choices[0].message.content


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/api/v1/nothing", "/v1/nothing", "/api/other"])
def test_unknown_api_paths_are_json_404s(gateway, path, method):
    # POST, PUT, PATCH and DELETE were Django's CSRF page (HTML 403): found by fuzzing.
    response = httpx.request(
        method, gateway.base_url + path, json={}, headers={"Authorization": "Bearer x"}
    )
    assert response.status_code == 404
    assert response.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/api/v1/models", f"/v1/models/{TEST_MODEL}"])
def test_wrong_method_is_a_405_with_allow(gateway, path):
    response = httpx.post(gateway.base_url + path, json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"
    assert response.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    "path", ["/api/v1/models", f"/v1/models/{TEST_MODEL}", f"/api/v1/models/{TEST_MODEL}/endpoints"]
)
def test_head_on_a_read_route_is_a_get_without_body(gateway, path):
    # Was a 405 (found by fuzzing): HTTP says a server that answers GET answers HEAD.
    head = httpx.head(gateway.base_url + path)
    get = httpx.get(gateway.base_url + path)
    assert head.status_code == get.status_code == 200
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.content == b""


@pytest.mark.parametrize("path", ["/api/v1/activity", "/api/v1/generation?id=x"])
def test_a_wrong_method_on_a_drf_route_is_a_request_error(gateway, tenant, path):
    # Said api_error, where the chat routes say invalid_request_error (found by fuzzing).
    response = httpx.put(
        gateway.base_url + path, json={}, headers={"Authorization": f"Bearer {tenant.key}"}
    )
    assert response.status_code == 405
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_key_endpoint_reports_limit_and_spend(gateway, tenant, client):
    from decimal import Decimal

    tenant.api_key.monthly_limit_usd = Decimal("5.00")
    tenant.api_key.save()
    from billing import auth

    auth._cache.clear()
    auth._unknown.clear()
    reply = client.chat.completions.create(model=TEST_MODEL, messages=HI)
    spent = float(wait_finished(reply.id).cost_usd)
    data = httpx.get(
        f"{gateway.api_url}/key", headers={"Authorization": f"Bearer {tenant.key}"}
    ).json()["data"]
    assert data["limit"] == 5.0
    assert data["usage"] == pytest.approx(spent)
    assert data["limit_remaining"] == pytest.approx(5.0 - spent)
    assert httpx.get(f"{gateway.api_url}/key").status_code == 401


def test_endpoints_show_learnt_ttft(gateway, tenant, market):
    from asgiref.sync import async_to_sync

    from routing.catalog import catalog_cache
    from routing.memory import refresher
    from routing.models import SpeedSample

    SpeedSample.objects.bulk_create(
        SpeedSample(endpoint=market["alpha"], bucket="<8k", ttft_ms=250, output_tokens_per_s=90.0)
        for _ in range(7)
    )
    async_to_sync(catalog_cache.get)(TEST_MODEL)
    async_to_sync(refresher.refresh_now)()
    data = httpx.get(f"{gateway.api_url}/models/{TEST_MODEL}/endpoints").json()["data"]
    by_provider = {e["tag"]: e for e in data["endpoints"]}
    assert by_provider["alpha"]["ttft_by_bucket"] == {"<8k": {"typical_ms": 250, "samples": 7}}
    assert by_provider["alpha"]["throughput_tokens_per_s"] == 90.0
    assert by_provider["bravo"]["ttft_by_bucket"] == {}


@pytest.mark.parametrize(("path", "json_expected"), [("/api/v1/x", True), ("/keys/", False)])
def test_a_csrf_failure_is_json_under_the_api(path, json_expected):
    from django.test import RequestFactory

    from uberllm.urls import csrf_failure

    response = csrf_failure(RequestFactory().post(path), reason="no token")
    assert response.status_code == 403
    assert response["Content-Type"].startswith("application/json") is json_expected
