"""OpenRouter's ``models`` fallback list after run-time failures: when every endpoint of
the first model fails before the first token, the call goes on with the next model;
the reply and the Activity row name the model actually used."""

import httpx
import pytest

from providers.services import catalog_import
from routing.catalog import catalog_cache

from ..support import TEST_MODEL
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)
MODEL_B = "test/model-b"
HI = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def two_models(market, emulator):
    """Model A on alpha and bravo (charlie's endpoint of A disabled); model B on charlie
    (the emulator serves it under A's upstream name)."""
    catalog_import(
        data={
            "models": [
                {
                    "slug": MODEL_B,
                    "name": "Test model B",
                    "endpoints": [
                        {
                            "provider": "charlie",
                            "base_url": f"{emulator.base_url}/charlie/v1",
                            "upstream_model": TEST_MODEL,
                            "context_length": 200_000,
                            "supported_parameters": ["max_tokens", "temperature", "tools"],
                            "price_input": "0.30",
                            "price_cache_read": "0.03",
                            "price_cache_write": "0",
                            "price_output": "0.90",
                        }
                    ],
                }
            ]
        }
    )
    market["charlie"].enabled = False
    market["charlie"].save()
    catalog_cache.invalidate()
    emulator.control("alpha", status_override=500)
    emulator.control("bravo", status_override=500)
    return emulator


def _attempts(row) -> list[tuple]:
    return list(
        row.attempts.order_by("attempt_no").values_list("provider_slug", "outcome", "http_status")
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_all_endpoints_of_the_first_model_fail_then_the_next_model_serves(
    two_models, client, stream
):
    kwargs = {"model": TEST_MODEL, "messages": HI, "extra_body": {"models": [TEST_MODEL, MODEL_B]}}
    if stream:
        chunks = list(client.chat.completions.create(stream=True, **kwargs))
        reply_id, model = chunks[0].id, {c.model for c in chunks}
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = client.chat.completions.create(**kwargs)
        reply_id, model = reply.id, {reply.model}
        assert reply.model_extra["provider"] == "charlie"
    assert model == {MODEL_B}
    row = wait_finished(reply_id)
    assert (row.status, row.model_slug, row.provider_slug) == ("success", MODEL_B, "charlie")
    assert _attempts(row) == [
        ("alpha", "http_error", 500),
        ("bravo", "http_error", 500),
        ("charlie", "success", None),
    ]
    assert row.cost_usd > 0
    (served,) = two_models.log("charlie")
    assert served["status"] == "completed"


def test_without_a_fallback_list_the_call_fails(two_models, gateway, tenant):
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json={"model": TEST_MODEL, "messages": HI},
        headers={"Authorization": f"Bearer {tenant.key}"},
        timeout=10,
    )
    assert response.status_code == 502
    assert two_models.log("charlie") == []
    row = wait_finished(response.headers["x-generation-id"])
    assert (row.status, row.model_slug, row.attempt_count) == ("error", TEST_MODEL, 2)


def test_every_model_fails_answers_the_last_error(two_models, gateway, tenant):
    two_models.control("charlie", status_override=503)
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json={"model": TEST_MODEL, "models": [TEST_MODEL, MODEL_B], "messages": HI},
        headers={"Authorization": f"Bearer {tenant.key}"},
        timeout=10,
    )
    assert response.status_code == 503  # the last error, a 503: overloaded
    assert "3 upstream attempt" in response.json()["error"]["message"]
    row = wait_finished(response.headers["x-generation-id"])
    assert row.status == "error" and row.cost_usd == 0
    assert [a[2] for a in _attempts(row)] == [500, 500, 503]


def test_messages_api_falls_back_too(two_models, claude):
    message = claude.messages.create(
        model=TEST_MODEL, max_tokens=50, messages=HI, extra_body={"models": [TEST_MODEL, MODEL_B]}
    )
    assert message.model == MODEL_B and message.content[0].text.startswith("lorem")
    assert wait_finished(message.id).model_slug == MODEL_B


def test_a_limited_key_reserves_for_the_dearest_fallback_model(market, emulator, gateway, tenant):
    """A call may switch to a ``models`` fallback at run time, so its reservation covers
    the dearest endpoint of every model it may use: a fallback that could cost more than
    the key has left is refused before any upstream call."""
    from billing.auth import forget_cached_key
    from billing.models import ApiKey

    catalog_import(
        data={
            "models": [
                {
                    "slug": MODEL_B,
                    "name": "Dear model B",
                    "endpoints": [
                        {
                            "provider": "charlie",
                            "base_url": f"{emulator.base_url}/charlie/v1",
                            "upstream_model": TEST_MODEL,
                            "context_length": 200_000,
                            "supported_parameters": ["max_tokens"],
                            "price_input": "0.30",
                            "price_cache_read": "0.03",
                            "price_cache_write": "0",
                            "price_output": "900",
                        }
                    ],
                }
            ]
        }
    )
    catalog_cache.invalidate()
    ApiKey.unscoped_objects.filter(id=tenant.api_key.id).update(monthly_limit_usd="0.01")
    forget_cached_key(tenant.api_key.prefix)

    def post(**extra) -> httpx.Response:
        body = {"model": TEST_MODEL, "messages": HI, "max_tokens": 100, **extra}
        return httpx.post(
            f"{gateway.api_url}/chat/completions",
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {tenant.key}"},
        )

    assert post().status_code == 200  # model A alone: its worst case fits
    refused = post(models=[TEST_MODEL, MODEL_B])  # B's 100 tokens could cost $0.09
    assert refused.status_code == 402, refused.text
    assert len(emulator.log()) == 1  # only the first call went upstream
