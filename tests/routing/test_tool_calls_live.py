"""Tool-call quality (O5) live: alpha, the cheapest, sends malformed tool calls on 20% of
calls (emulator profile ``malformed_tool_calls``); the gateway checks each served reply's
tool calls against the request's tools and, once alpha is far worse than its peers,
sends requests with tools elsewhere while plain-text requests stay at alpha.

"Within minutes": the rates decay with a 5-minute half-life and need 20 recent checks;
here the calls come back to back, so the move takes seconds (no exploration draw)."""

import time

import pytest
from django.conf import settings

from routing.memory import memory

from ..support import TEST_MODEL
from .test_smart_live import SHORT, _served, fresh

pytestmark = pytest.mark.django_db(transaction=True)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    },
}
ASK = [{"role": "user", "content": "What is the weather in Paris? Use get_weather."}]


@pytest.fixture
def no_exploration():
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(EXPLORATION_RATE=0.0)
    yield conf
    conf.clear()
    conf.update(saved)


def _tool_call(client, stream: bool) -> str:
    """One request with tools; the provider that served it."""
    if not stream:
        reply = client.chat.completions.create(
            model=TEST_MODEL, messages=fresh(ASK), tools=[WEATHER]
        )
        assert reply.choices[0].finish_reason == "tool_calls"
        return reply.model_extra["provider"]
    chunks = list(
        client.chat.completions.create(
            model=TEST_MODEL, messages=fresh(ASK), tools=[WEATHER], stream=True
        )
    )
    return chunks[-1].model_extra["provider"]


def test_a_provider_with_malformed_tool_calls_loses_tool_traffic_and_keeps_plain_text(
    client, emulator, market, no_exploration
):
    alpha = market["alpha"].id
    emulator.control("alpha", malformed_tool_calls=0.2)
    served = [_tool_call(client, stream=i % 2 == 0) for i in range(40)]
    assert served[:20] == ["alpha"] * 20  # the cheapest, until 20 checks say otherwise
    assert served[-10:].count("alpha") == 0  # then the tool calls go to a clean peer
    rate = memory.knowledge.tool_calls.rate(alpha, time.time())
    assert rate is not None and rate >= 0.1
    assert _served(client, fresh(SHORT)) == "alpha"  # plain text stays at the cheapest
    assert _served(client, fresh(SHORT)) == "alpha"


def test_a_clean_provider_keeps_its_tool_traffic(client, emulator, market, no_exploration):
    served = [_tool_call(client, stream=i % 2 == 0) for i in range(30)]
    assert served == ["alpha"] * 30
    assert memory.knowledge.tool_calls.rate(market["alpha"].id, time.time()) == 0.0
