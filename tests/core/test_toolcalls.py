"""Tool-call quality (O5): the validator, the per-endpoint error rates and the router's
use of them (routing/core/toolcalls.py, knowledge.py, router.py)."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import replace

from lab.simulator.strategies.stores import SimStores
from routing.core import InMemoryHedgeBudget, ModelInfo, RoutingOptions
from routing.core.config import DEFAULT_CONFIG, GatewayConfig
from routing.core.knowledge import RoutingKnowledge
from routing.core.lessons import ToolCallChecked
from routing.core.router import SmartRouter
from routing.core.toolcalls import ToolCallQuality, check_tool_calls, fits
from routing.core.types import EndpointInfo

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "days": {"type": "integer"},
                    "hours": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {"type": "function", "function": {"name": "now"}},  # no parameters
]


def _call(name: str, arguments: object) -> dict:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": "c1", "type": "function", "function": {"name": name, "arguments": text}}


def test_well_formed_calls_pass() -> None:
    calls = [
        _call("get_weather", {"city": "Oslo", "unit": "c", "days": 3, "hours": [1, 2]}),
        _call("now", ""),
        _call("now", {}),
    ]
    assert check_tool_calls(TOOLS, calls)
    assert check_tool_calls(TOOLS, [_call("get_weather", {"city": "Oslo", "days": 2.0})])


def test_each_kind_of_malformed_call_is_caught() -> None:
    malformed = [
        _call("get_weather", '{"city": "Oslo"'),  # not JSON
        _call("get_wether", {"city": "Oslo"}),  # unknown function
        _call("get_weather", {}),  # a required property missing
        _call("get_weather", {"city": 7}),  # wrong type
        _call("get_weather", {"city": "Oslo", "unit": "k"}),  # not in the enum
        _call("get_weather", {"city": "Oslo", "days": True}),  # a boolean is no integer
        _call("get_weather", {"city": "Oslo", "hours": ["one"]}),  # an item's type
        _call("get_weather", {"city": "Oslo", "wind": 1}),  # additionalProperties: false
        _call("get_weather", '["Oslo"]'),  # arguments not an object
        {"id": "c1", "type": "function"},  # no function at all
    ]
    for call in malformed:
        assert not check_tool_calls(TOOLS, [call]), call
    # one bad call spoils the reply
    assert not check_tool_calls(TOOLS, [_call("now", {}), malformed[0]])


def test_keywords_outside_the_subset_are_not_judged() -> None:
    assert fits("x", {"type": "string", "minLength": 5, "pattern": "^y"})
    assert fits({"a": 1}, {"anyOf": [{"type": "string"}]})
    assert fits(None, {"type": ["string", "null"]})


def test_an_endpoint_far_worse_than_its_peers_is_a_laggard_once_measured() -> None:
    quality = ToolCallQuality()
    for i in range(40):
        quality.checked(1, i % 5 != 0, float(i))  # 20% malformed
        quality.checked(2, True, float(i))
        if i == 10:  # too few checks yet
            assert quality.laggards((1, 2), float(i)) == frozenset()
    assert quality.laggards((1, 2), 40.0) == {1}
    assert quality.laggards((1,), 40.0) == frozenset()  # no peer: nothing to compare
    for i in range(40):  # the peer turns as bad: nobody is far worse
        quality.checked(2, i % 5 != 0, 40.0 + i)
    assert quality.laggards((1, 2), 80.0) == frozenset()


def test_a_rare_malformed_call_does_not_make_a_laggard() -> None:
    quality = ToolCallQuality()
    for i in range(50):
        quality.checked(1, i != 7, float(i))  # 2%: under the floor
        quality.checked(2, True, float(i))
    assert quality.laggards((1, 2), 50.0) == frozenset()


MODEL = ModelInfo("m", 1.0, 2.0, 0.1)
TOOLED = frozenset({"tools"})
ENDPOINTS = (
    EndpointInfo(1, "alpha", 0.20, 0.02, 0.0, 0.4, 200_000, TOOLED),
    EndpointInfo(2, "bravo", 0.30, 0.03, 0.0, 0.5, 200_000, TOOLED),
)


def _router(config: GatewayConfig = DEFAULT_CONFIG) -> SmartRouter:
    budget = InMemoryHedgeBudget(5.0, lambda: 0.0, burst_s=None)
    knowledge = RoutingKnowledge(config, {1: 0, 2: 0})
    return SmartRouter(config, knowledge, SimStores(knowledge, budget), random.Random(3))


def _first(router: SmartRouter, tools: bool, now: float) -> int:
    required = TOOLED if tools else frozenset()
    features = router.features(
        "m", 1_000, [], (1, 2), now, stream=False, earlier=0, customer=None, required=required
    )
    plan = router.plan(MODEL, ENDPOINTS, features, RoutingOptions(), now)
    return plan.choices[0].endpoint.endpoint_id


def _serve_tool_calls(router: SmartRouter, n: int, now: float) -> None:
    """n requests with tools; alpha's replies are malformed on every 5th call (20%)."""
    good = [_call("get_weather", {"city": "Oslo"})]
    bad = [_call("get_weather", '{"city": ')]
    for i in range(n):
        endpoint_id = _first(router, True, now)
        calls = bad if endpoint_id == 1 and i % 5 == 4 else good
        (lesson,) = router.on_tool_calls(endpoint_id, TOOLS, calls, now)
        assert lesson == ToolCallChecked(endpoint_id, calls is good)


def test_a_laggard_loses_requests_with_tools_and_keeps_plain_ones() -> None:
    router = _router(replace(DEFAULT_CONFIG, exploration_rate=0.0))
    assert _first(router, True, 0.0) == 1  # cheapest, no checks yet
    _serve_tool_calls(router, 25, 0.0)
    assert router.knowledge.tool_calls.rate(1, 0.0) == 0.2
    assert _first(router, True, 0.0) == 2  # alpha is a laggard for tools
    assert _first(router, False, 0.0) == 1  # plain text: still the cheapest
    # its checks age (half-life 5 minutes): under 20 recent ones it is tried again
    assert _first(router, True, 60.0) == 1


def test_a_laggard_gets_only_exploration_traffic_with_tools() -> None:
    router = _router()  # exploration_rate 0.05
    _serve_tool_calls(router, 25, 0.0)
    firsts = Counter(_first(router, True, 0.0) for _ in range(2_000))
    assert 50 <= firsts[1] <= 150  # ~5%: the exploration draws
    assert firsts[1] + firsts[2] == 2_000


def test_the_setting_turns_the_checks_off() -> None:
    router = _router(GatewayConfig(exploration_rate=0.0, tool_call_checks=False))
    assert router.on_tool_calls(1, TOOLS, [_call("nope", "{")], 0.0) == []
    router.knowledge.learn(ToolCallChecked(1, False), 0.0)
    assert _first(router, True, 0.0) == 1
