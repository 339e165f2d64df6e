"""OpenRouter's provider preferences that act on routing, live on the emulator:
``data_collection: "deny"`` / ``zdr`` (the catalog's data policy) and
``preferred_max_latency`` (moved back, never excluded)."""

import pytest
from asgiref.sync import async_to_sync

from ..support import TEST_MODEL, post_chat
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)


def _set_policy(market, **policies: tuple[bool, bool]) -> None:
    """``slug=(collects_data, zdr)``; the next request reads the new catalog."""
    from routing.catalog import catalog_cache

    for slug, (collects_data, zdr) in policies.items():
        endpoint = market[slug]
        endpoint.collects_data, endpoint.zdr = collects_data, zdr
        endpoint.full_clean()
        endpoint.save()
    catalog_cache.invalidate()


def test_data_collection_deny_never_reaches_an_endpoint_that_keeps_data(
    gateway, tenant, emulator, market
):
    # alpha (the cheapest) keeps data; charlie keeps none; bravo keeps none but fails
    _set_policy(market, alpha=(True, False), bravo=(False, False), charlie=(False, False))
    emulator.control("bravo", status_override=503)
    emulator.control("charlie", status_override=503)
    refused = post_chat(gateway, tenant.key, provider={"data_collection": "deny"})
    # every private endpoint failed: alpha, which keeps data, was not tried as a fallback
    assert refused.status_code == 503, refused.text
    assert {r["provider"] for r in emulator.log()} == {"bravo", "charlie"}
    emulator.control("charlie", reset=True)
    served = post_chat(gateway, tenant.key, provider={"data_collection": "deny"})
    assert served.status_code == 200, served.text
    assert served.json()["provider"] == "charlie"
    assert "alpha" not in {r["provider"] for r in emulator.log()}
    assert post_chat(gateway, tenant.key).json()["provider"] == "alpha"  # without: the cheapest


def test_zdr_goes_only_to_zero_retention_endpoints_and_none_is_a_404(
    gateway, tenant, emulator, market
):
    _set_policy(market, bravo=(False, False), charlie=(False, True))
    served = post_chat(gateway, tenant.key, provider={"zdr": True})
    assert served.status_code == 200, served.text
    assert served.json()["provider"] == "charlie"
    _set_policy(market, charlie=(False, False))
    refused = post_chat(gateway, tenant.key, provider={"zdr": True})
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "data_policy"
    assert [r["provider"] for r in emulator.log()] == ["charlie"]


def _learn(market, slug: str, ttfts_ms: list[int]) -> None:
    from routing.models import SpeedSample

    SpeedSample.objects.bulk_create(
        SpeedSample(endpoint=market[slug], bucket="<8k", ttft_ms=ms, output_tokens_per_s=90.0)
        for ms in ttfts_ms
    )


def _refresh() -> None:
    from routing.catalog import catalog_cache
    from routing.memory import refresher

    async_to_sync(catalog_cache.get)(TEST_MODEL)
    async_to_sync(refresher.refresh_now)()


def test_preferred_max_latency_p90_moves_a_stalling_endpoint_back_not_out(
    gateway, tenant, emulator, market
):
    _learn(market, "alpha", [100] * 8 + [3000, 3500])  # cheapest, fast, stalls 1 in 5
    _learn(market, "bravo", [150] * 10)
    _learn(market, "charlie", [150] * 10)
    _refresh()
    assert post_chat(gateway, tenant.key).json()["provider"] == "alpha"
    preferring = {"preferred_max_latency": {"p90": 1}}
    reply = post_chat(gateway, tenant.key, provider=preferring)
    assert reply.json()["provider"] == "bravo"
    reason = wait_finished(reply.json()["id"]).routing_reason
    assert reason.startswith("preferred performance: ")
    # not excluded: when the others fail, alpha still serves the call
    emulator.control("bravo", status_override=503)
    emulator.control("charlie", status_override=503)
    fallback = post_chat(gateway, tenant.key, provider=preferring)
    assert fallback.status_code == 200, fallback.text
    assert fallback.json()["provider"] == "alpha"
    assert [r["provider"] for r in emulator.log()][-3:] == ["bravo", "charlie", "alpha"]


def test_sort_as_an_object(gateway, tenant, emulator):
    sort = {"by": "price", "partition": "none"}
    reply = post_chat(gateway, tenant.key, provider={"sort": sort})
    assert reply.status_code == 200, reply.text
    assert wait_finished(reply.json()["id"]).routing_reason == "sorted by price"
    bad = post_chat(gateway, tenant.key, provider={"sort": {"by": "fastest"}})
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "provider"
