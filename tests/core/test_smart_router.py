"""The core router and its knowledge (routing/core/router.py, knowledge.py, config.py)."""

from __future__ import annotations

import random
from dataclasses import replace

from lab.simulator.fields import GATEWAY_DEFAULTS
from lab.simulator.strategies.stores import SimStores
from routing.core import InMemoryHedgeBudget, RoutingOptions, SpeedSample
from routing.core.config import DEFAULT_CONFIG, GatewayConfig
from routing.core.knowledge import RoutingKnowledge
from routing.core.lessons import Failed, HedgeSettled, Served
from routing.core.router import SmartRouter, failure_kind
from tests.core.market import ENDPOINTS, MODEL, PEERS, served

EPOCH = 1_800_000_000.0


def _router(daily_usd: float = 5.0) -> tuple[SmartRouter, InMemoryHedgeBudget]:
    budget = InMemoryHedgeBudget(daily_usd, lambda: EPOCH, burst_s=None)
    knowledge = RoutingKnowledge(DEFAULT_CONFIG, {1: 0, 2: 0, 3: 0})
    router = SmartRouter(DEFAULT_CONFIG, knowledge, SimStores(knowledge, budget), random.Random(1))
    return router, budget


def test_the_config_has_the_same_defaults_from_settings_and_from_a_scenario() -> None:
    from django.conf import settings

    assert GatewayConfig.from_scenario(GATEWAY_DEFAULTS) == DEFAULT_CONFIG
    live = GatewayConfig.from_settings(settings.UBERLLM)  # the test settings explore less
    assert live == replace(DEFAULT_CONFIG, exploration_rate=settings.UBERLLM["EXPLORATION_RATE"])
    tuned = GatewayConfig.from_settings({"ROUTING_FAST_ENOUGH_UNDER_S_LONG": "3"})
    assert tuned.tuning.fast_enough_under_s_long == 3.0


def test_one_failure_kind_normalisation() -> None:
    assert failure_kind("protocol", None) == ("http", 502)
    assert failure_kind("http", 429) == ("http", 429)
    assert failure_kind("timeout", 504) == ("timeout", None)


def test_attempts_count_per_model_so_a_fallback_model_gets_its_own() -> None:
    router, _ = _router()
    features = router.features("m", 1_000, [], PEERS, 0.0, stream=False, earlier=0, customer=None)
    plan = router.plan(MODEL, ENDPOINTS, features, RoutingOptions(), 0.0)
    tried = [1, 2, 3, 9]  # four attempts at the first model
    assert router.next_attempt(plan, tried) is None
    assert router.next_attempt(plan, tried, model_start=4) == (1, 0.0)


def test_a_hedge_reserves_the_dearer_prompt_and_settles_the_losers_cost() -> None:
    router, budget = _router()
    for endpoint_id in PEERS:  # all fast enough at 150k
        for t in (0.0, 0.1, 0.2):
            router.knowledge.book.record(endpoint_id, ">128k", SpeedSample(t, 2.0))
    features = router.features("m", 150_000, [], PEERS, 0.0, stream=True, earlier=0, customer=None)
    plan = router.plan(MODEL, ENDPOINTS, features, RoutingOptions(), 0.0)
    assert router.hedge_decision(plan, True).mode == "immediate"
    first = plan.choices[0].endpoint.endpoint_id
    start = router.start_hedge(plan, features, first, [first], EPOCH)
    assert start is not None and start.endpoint_id != first
    assert budget.spent_by_day[start.day] == start.reserve_usd
    loser = next(c.endpoint for c in plan.choices if c.endpoint.endpoint_id == first)
    cost = router.on_cancel(loser, features)
    (lesson,) = router.end_hedge(start, cost, 1.0)
    assert lesson == HedgeSettled(start.reserve_usd, min(cost, start.reserve_usd), start.day)
    assert budget.spent_by_day[start.day] == lesson.spent


def test_no_hedge_without_a_budget() -> None:
    router, _ = _router(daily_usd=0.0)
    router.config = GatewayConfig(hedge_budget_usd_per_day=0.0)
    features = router.features("m", 150_000, [], PEERS, 0.0, stream=True, earlier=0, customer=None)
    plan = router.plan(MODEL, ENDPOINTS, features, RoutingOptions(), 0.0)
    assert router.hedge_decision(plan, True).mode == "none"


def test_failures_teach_marks_and_a_served_call_teaches_speed_and_prefixes() -> None:
    router, _ = _router()
    knowledge = router.knowledge
    for t in (1.0, 2.0, 3.0):
        lessons, retry = router.on_failure(1, "http", 503, PEERS, t)
        assert retry and lessons == [Failed(1, "http", 503, True, 0, PEERS)]
    assert 1 in knowledge.unusable(3.0)
    call = served(2, 0.5, 1_000, completion=100, prefixes=("h0",))
    (lesson,) = router.on_success(call, 4.0)
    assert isinstance(lesson, Served) and lesson.tps == 50.0 and not lesson.cached
    assert knowledge.summary(4.0).typical(2, "<8k") == 0.5
    assert knowledge.cached_tokens([("h0", 800)], PEERS, 5.0) == {2: 800}
    assert knowledge.cached_tokens([("h0", 800)], PEERS, 400.0) == {}
