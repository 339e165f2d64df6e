"""A first turn priced with its API key's share of continued first turns (round 23,
``ROUTING_FIRST_TURN_FOLLOWUPS``), end to end through the gateway to the emulator."""

import time

import pytest
from django.conf import settings
from openai import OpenAI

from providers.models import Endpoint
from routing.catalog import catalog_cache

from ..support import TEST_MODEL, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _first_turn() -> list[dict]:
    context = f"{time.time_ns()} You are a coding agent. " + "ctx " * 4_000
    return [{"role": "system", "content": context}, {"role": "user", "content": "first"}]


def _served(client: OpenAI, messages: list[dict]) -> str:
    reply = client.chat.completions.create(model=TEST_MODEL, messages=messages, max_tokens=2)
    return reply.model_extra["provider"]


def _cache_reads(**prices: str) -> None:
    for slug, price in prices.items():
        Endpoint.objects.filter(provider__slug=slug).update(price_cache_read=price)
    catalog_cache.invalidate()


def test_a_keys_first_turns_start_where_its_conversations_will_be_cheap(client, gateway):
    """alpha: the cheapest input, dear cache reads; bravo: cache reads at a 45th of
    alpha's. Priced alone a first turn goes to alpha; once this key's first turns are
    seen to continue, its next first turn starts at bravo. Another key has no such
    history, and the setting switches it off."""
    _cache_reads(alpha="0.09", bravo="0.002")
    assert _served(client, _first_turn()) == "alpha"
    for _ in range(3):  # three conversations of two turns
        first = _first_turn()
        _served(client, first)
        second = [
            *first,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second"},
        ]
        _served(client, second)
    assert _served(client, _first_turn()) == "bravo"

    other = make_tenant("Batch")
    with OpenAI(base_url=gateway.api_url, api_key=other.key, max_retries=0) as batch:
        assert _served(batch, _first_turn()) == "alpha"
    settings.UBERLLM["ROUTING_FIRST_TURN_FOLLOWUPS"] = False
    try:
        assert _served(client, _first_turn()) == "alpha"
    finally:
        settings.UBERLLM["ROUTING_FIRST_TURN_FOLLOWUPS"] = True
