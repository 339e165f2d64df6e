"""Each upstream usage dialect on real HTTP (the emulator speaks it, ``usage_dialect``):
a cached 108k-token second turn is billed exactly, cache reads at the cache-read price,
and the client's reply shows the counts billed; a provider with no usage is billed
from the gateway's own count and marked estimated on the Activity row, in
``/generation`` and in the reply's ``usage``."""

from __future__ import annotations

import json
from decimal import Decimal

import httpx
import pytest

from routing.catalog import catalog_cache

from ..support import TEST_MODEL
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)

# The figures: input $1.00 and cache read $0.01 per 1M (output $2.00).
PRICES = {"input": Decimal("1.00"), "cache_read": Decimal("0.01"), "output": Decimal("2.00")}
# A first message of 108,528 tokens (chars / 4 + 4 per message, the emulator's count).
LONG = "x" * (108_524 * 4)
FIRST_TURN = [{"role": "user", "content": LONG}]
FOLLOW_UP = {"role": "user", "content": "And then?"}


@pytest.fixture
def alpha(market, emulator, monkeypatch):
    """alpha alone, priced like the issue; ``alpha(dialect, protocol)`` sets the
    emulator's usage dialect and the endpoint's."""
    for slug in ("bravo", "charlie"):
        market[slug].enabled = False
        market[slug].save()

    def configure(dialect: str, protocol: str = "openai_chat", endpoint_dialect: str = "") -> None:
        endpoint = market["alpha"]
        endpoint.protocol, endpoint.usage_dialect = protocol, endpoint_dialect or dialect
        endpoint.price_input, endpoint.price_cache_read = PRICES["input"], PRICES["cache_read"]
        endpoint.price_output = PRICES["output"]
        endpoint.save()
        catalog_cache.invalidate()
        emulator.control("alpha", usage_dialect=dialect)

    return configure


def _chat(gateway, tenant, messages: list, stream: bool) -> tuple[str, dict]:
    """The reply's id and its usage (streamed: the usage chunk's)."""
    body = {"model": TEST_MODEL, "messages": messages, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    headers = {"Authorization": f"Bearer {tenant.key}"}
    response = httpx.post(
        f"{gateway.api_url}/chat/completions", json=body, headers=headers, timeout=60
    )
    assert response.status_code == 200, response.text
    if not stream:
        reply = response.json()
        return reply["id"], reply["usage"]
    events = [line[6:] for line in response.text.split("\n") if line.startswith("data: {")]
    (last,) = [chunk for chunk in map(json.loads, events) if chunk.get("usage")]
    return last["id"], last["usage"]


def _two_turns(gateway, tenant, stream: bool) -> tuple[str, dict]:
    first_id, _ = _chat(gateway, tenant, FIRST_TURN, stream)
    assert wait_finished(first_id).status == "success"
    reply = "lorem " * 8
    second = [*FIRST_TURN, {"role": "assistant", "content": reply}, FOLLOW_UP]
    return _chat(gateway, tenant, second, stream)


def _hand_cost(uncached: int, cached: int, completion: int) -> Decimal:
    """USD, by hand: each class of token at its price per 1M."""
    return (
        uncached * PRICES["input"] + cached * PRICES["cache_read"] + completion * PRICES["output"]
    ) / Decimal(1_000_000)


def _generation(gateway, tenant, request_id: str) -> dict:
    response = httpx.get(
        f"{gateway.api_url}/generation",
        params={"id": request_id},
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]


DIALECTS = [
    ("openai", "openai_chat"),
    ("deepseek", "openai_chat"),
    ("anthropic", "openai_chat"),  # Anthropic's counts on an OpenAI-compatible host
    ("anthropic", "anthropic_messages"),  # Anthropic's own API
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("dialect", "protocol"), DIALECTS, ids=lambda v: v)
def test_a_cached_108k_turn_is_billed_exactly(
    alpha, gateway, tenant, emulator, dialect, protocol, stream
):
    alpha(dialect, protocol)
    request_id, usage = _two_turns(gateway, tenant, stream)
    provider = emulator.log("alpha")[-1]  # the provider's own counts of the second turn
    cached, prompt = provider["cached_tokens"], provider["prompt_tokens"]
    assert cached == 108_528 and prompt > cached
    row = wait_finished(request_id)
    expected = _hand_cost(prompt - cached, cached, 8)
    assert row.cost_usd == expected  # ~$0.00113, not the uncached $0.1086
    assert row.cost_usd * 90 < _hand_cost(prompt, 0, 8)
    assert (row.prompt_tokens, row.cached_tokens, row.completion_tokens) == (prompt, cached, 8)
    assert not row.usage_estimated
    # The reply shows what is billed, in one form whatever the provider's dialect.
    assert usage["prompt_tokens"] == prompt and usage["completion_tokens"] == 8
    assert usage["prompt_tokens_details"]["cached_tokens"] == cached
    assert Decimal(str(usage["cost"])) == expected and usage["cost_estimated"] is False
    assert not {"prompt_cache_hit_tokens", "input_tokens"} & usage.keys()
    generation = _generation(gateway, tenant, request_id)
    assert (generation["tokens_cached"], generation["usage_estimated"]) == (cached, False)


def test_an_endpoint_misnamed_openai_bills_what_its_reply_shows(alpha, gateway, tenant, emulator):
    """A DeepSeek upstream (old replies: no prompt_tokens_details) named ``openai``: no
    cached count is read, so none is billed, and the reply no longer passes DeepSeek's
    hit count through beside a cost that ignores it (the issue's contradiction)."""
    alpha("deepseek", endpoint_dialect="openai")
    request_id, usage = _two_turns(gateway, tenant, stream=False)
    prompt = emulator.log("alpha")[-1]["prompt_tokens"]
    row = wait_finished(request_id)
    assert row.cost_usd == _hand_cost(prompt, 0, 8)  # ~$0.1086: the dialect matters
    assert usage["prompt_tokens_details"]["cached_tokens"] == row.cached_tokens == 0
    assert "prompt_cache_hit_tokens" not in usage


def test_deepseek_hit_count_wins_over_openai_cached_tokens(alpha, gateway, tenant, emulator):
    """Both fields sent and disagreeing: DeepSeek's own field decides (docs/api.md)."""
    alpha("deepseek")
    emulator.control("alpha", usage_override={"prompt_tokens_details": {"cached_tokens": 5}})
    request_id, usage = _two_turns(gateway, tenant, stream=False)
    cached = emulator.log("alpha")[-1]["cached_tokens"]
    assert wait_finished(request_id).cached_tokens == cached == 108_528
    assert usage["prompt_tokens_details"]["cached_tokens"] == cached


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("sent", ["none", "openai"], ids=["sends-none", "sends-some"])
def test_no_usage_is_billed_from_our_count_and_marked_estimated(
    alpha, gateway, tenant, emulator, sent, stream
):
    """An endpoint whose dialect is ``none``: whatever its provider sends (nothing, or a
    report the endpoint says not to trust) the gateway bills its own count."""
    alpha(sent, endpoint_dialect="none")
    messages = [{"role": "user", "content": "y" * 4_000}]  # 1,004 tokens by our count
    request_id, usage = _chat(gateway, tenant, messages, stream)
    row = wait_finished(request_id)
    assert row.usage_estimated and row.status == "success"
    assert (row.prompt_tokens, row.cached_tokens, row.completion_tokens) == (1_004, 0, 8)
    assert row.cost_usd == _hand_cost(1_004, 0, 8)
    assert usage["cost_estimated"] is True and Decimal(str(usage["cost"])) == row.cost_usd
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (1_004, 8)
    assert _generation(gateway, tenant, request_id)["usage_estimated"] is True


def test_no_usage_chunk_unless_asked(alpha, gateway, tenant):
    alpha("none")
    body = {"model": TEST_MODEL, "messages": [FOLLOW_UP], "stream": True}
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json=body,
        timeout=20,
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert response.status_code == 200 and '"usage"' not in response.text
    assert response.text.rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_openai_cache_writes_are_billed_at_the_cache_write_price(
    alpha, market, gateway, tenant, emulator, stream
):
    """OpenAI's dialect with cache writes (``prompt_tokens_details.cache_write_tokens``,
    as OpenRouter and Anthropic-backed OpenAI-compatible hosts report them) on real HTTP:
    reads at the cache-read price, writes at the cache-write price, the rest at input."""
    alpha("openai")
    market["alpha"].price_cache_write = Decimal("1.25")
    market["alpha"].save()
    catalog_cache.invalidate()
    details = {"cached_tokens": 100, "cache_write_tokens": 600}
    emulator.control("alpha", usage_override={"prompt_tokens_details": details})
    request_id, usage = _chat(gateway, tenant, [{"role": "user", "content": "y" * 4000}], stream)
    prompt = emulator.log("alpha")[-1]["prompt_tokens"]
    assert prompt > 700
    row = wait_finished(request_id)
    expected = (
        (prompt - 700) * PRICES["input"]
        + 100 * PRICES["cache_read"]
        + 600 * Decimal("1.25")
        + 8 * PRICES["output"]
    ) / Decimal(1_000_000)
    assert row.cost_usd == expected and not row.usage_estimated
    assert (row.prompt_tokens, row.cached_tokens) == (prompt, 100)
    assert Decimal(str(usage["cost"])) == expected
