"""Conversation placement by horizon (issue 43, ``routing.core.horizon``): a
conversation is judged by its warm turns, moves from a warm cache only when clearly
cheaper over its expected turns, an endpoint without cached samples is judged from its
own uncached speed, and an exploration send is not hedged."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from routing.core import RequestFeatures
from routing.core.candidate import DEFAULT_TUNING
from routing.core.config import GatewayConfig
from routing.core.horizon import STAYS_WARM, model_cache_speedup, own_cached_estimate
from routing.core.knowledge import RoutingKnowledge
from routing.core.router import SmartRouter
from routing.core.smart import EXPLORATION
from routing.core.speed import speed_bucket
from routing.core.types import RouteChoice, RoutePlan

from .factories import endpoint, ids, plan, reasons, summary_of

BUCKET = "32k-128k"
CACHED = speed_bucket(BUCKET, True)
SHORT = "<8k"
OLD = replace(DEFAULT_TUNING, conversation_horizon=False)

# The market: the reseller (fast, $0.07 cache reads), the cheap-cache provider
# ($0.0013 cache reads, ~3x slower cold, about as fast warm), a fast dear one, and a
# cheap slow one without a cache (its cache reads cost its input price).
RESELLER = endpoint(1, "reseller", price_input=0.10, cache_read=0.07)
CHEAP_CACHE = endpoint(2, "cheapcache", price_input=0.14, cache_read=0.0013)
DEAR = endpoint(3, "dear", price_input=0.50, cache_read=0.05)
NO_CACHE = endpoint(4, "nocache", price_input=0.08, cache_read=0.08)
MARKET = [RESELLER, CHEAP_CACHE, DEAR, NO_CACHE]
ROWS = {
    (1, SHORT): (0.5, 20),
    (1, BUCKET): (2.7, 20),
    (1, CACHED): (0.7, 20),
    (2, SHORT): (0.35, 20),
    (2, BUCKET): (8.7, 20),
    (2, CACHED): (0.86, 20),
    (3, SHORT): (0.4, 20),
    (3, BUCKET): (1.6, 20),
    (3, CACHED): (0.55, 20),
    (4, SHORT): (0.7, 20),
    (4, BUCKET): (13.0, 20),
}


def _turn(cached: dict[int, int], followups: float = 5.0) -> RequestFeatures:
    return RequestFeatures(100_000, 300, cached, stream=True, expected_followup_turns=followups)


def test_a_warm_conversation_moves_from_the_reseller_to_the_cheap_cache_once():
    """Warm at the reseller: this turn there is 0.7 s, at the cheap cache a cold 8.7 s.
    Judged turn by turn (or by the mean over this turn and five more) the cheap cache is
    too slow; judged by its warm turns (0.86 s, within 2x of the dear one's 0.55 s) it is
    fast enough, and over six turns it costs a third of staying. Once there it stays."""
    speeds = summary_of(ROWS)
    at_reseller = _turn({1: 95_000})
    assert ids(plan(MARKET, speeds, request=at_reseller, tuning=OLD))[0] == 1
    route = plan(MARKET, speeds, request=at_reseller)
    assert ids(route)[0] == 2
    assert route.first.typical_ttft_s == 8.7  # what this very turn should see there
    assert route.choices[0].expected_cost_usd > route.choices[1].expected_cost_usd
    assert ids(plan(MARKET, speeds, request=_turn({2: 95_000})))[0] == 2


def test_without_follow_ups_one_cold_read_is_not_worth_a_move():
    route = plan(MARKET, summary_of(ROWS), request=_turn({1: 95_000}, followups=0))
    assert ids(route)[0] == 1


def test_a_warm_conversation_stays_unless_clearly_cheaper_elsewhere():
    """O7: a second cheap cache ~11% cheaper over the horizon (its cold read included)
    does not move a warm conversation (a move needs 20%: ``move_min_saving``); with 0 it
    moves."""
    twin = endpoint(5, "twin", price_input=0.012, cache_read=0.0001)
    rows = {**ROWS, (5, SHORT): (0.35, 20), (5, BUCKET): (8.7, 20), (5, CACHED): (0.86, 20)}
    request = _turn({2: 95_000})
    route = plan([*MARKET, twin], summary_of(rows), request=request)
    assert ids(route)[:2] == [2, 5]
    assert reasons(route)[0] == STAYS_WARM
    assert reasons(route)[1].startswith("fallback: ")
    eager = replace(DEFAULT_TUNING, move_min_saving=0.0)
    assert ids(plan([*MARKET, twin], summary_of(rows), request=request, tuning=eager))[0] == 5


def test_a_warm_home_whose_warm_turns_are_too_slow_is_left():
    """R2.4 still applies to the warm turns: a reseller whose cache reads got slow (3 s,
    > 2 x 0.55 s) does not keep the conversation, however warm."""
    rows = {**ROWS, (1, CACHED): (3.0, 20)}
    assert ids(plan(MARKET, summary_of(rows), request=_turn({1: 95_000})))[0] == 2


def test_a_first_turn_of_an_agent_starts_where_its_warm_turns_are_cheap():
    assert ids(plan(MARKET, summary_of(ROWS), request=_turn({})))[0] == 2
    assert ids(plan(MARKET, summary_of(ROWS), request=_turn({}, followups=0)))[0] == 1


def test_a_cached_estimate_without_cached_samples_comes_from_the_endpoints_own_speed():
    """Before the cheap cache has cached samples its cached turn is its base latency
    (0.35 s) plus its uncached prefill (8.35 s) / the model's cache speed-up (the median
    of the reseller's (2.7 - 0.5) / (0.7 - 0.5) = 11 and the dear one's (1.6 - 0.4) /
    (0.55 - 0.4) = 8): ~1.23 s, near its real 0.86 s. The reseller's cached/uncached
    ratio (0.26, mostly its fixed latency) would have made it 2.3-2.6 s."""
    rows = {k: v for k, v in ROWS.items() if k != (2, CACHED)}
    speeds = summary_of(rows)
    speedup = model_cache_speedup(speeds, [1, 2, 3, 4], BUCKET, 3)
    assert speedup == pytest.approx(9.5)
    assert own_cached_estimate(speeds, CHEAP_CACHE, BUCKET, speedup) == pytest.approx(1.229, 1e-3)
    route = plan(MARKET, speeds, request=_turn({2: 95_000}))
    cheap = next(c for c in route.choices if c.endpoint.endpoint_id == 2)
    assert cheap.typical_ttft_s == pytest.approx(1.229, 1e-3)
    old = plan(MARKET, speeds, request=_turn({2: 95_000}), tuning=OLD)
    cheap_old = next(c for c in old.choices if c.endpoint.endpoint_id == 2)
    assert cheap_old.typical_ttft_s == pytest.approx(8.7 * (0.7 / 2.7 + 0.55 / 1.6) / 2)


def test_an_endpoint_without_a_cache_is_no_faster_warm():
    speeds = summary_of(ROWS)
    assert own_cached_estimate(speeds, NO_CACHE, BUCKET, 9.5) == 13.0
    assert own_cached_estimate(speeds, NO_CACHE, "8k-32k", 9.5) is None


def _plan(first_reason: str) -> RoutePlan:
    choices = (
        RouteChoice(CHEAP_CACHE, first_reason, 0.01, 8.7, True),
        RouteChoice(RESELLER, "fallback: fast enough", 0.01, 2.7, True),
    )
    return RoutePlan(choices, BUCKET, "smart")


@pytest.mark.parametrize("horizon", [True, False])
def test_an_exploration_send_is_not_hedged(horizon):
    """A hedge leg that wins would cancel the exploration send before its first token:
    it would teach nothing and leave no warm cache (issue 43: six such sends live)."""
    config = GatewayConfig(conversation_horizon=horizon)
    router = SmartRouter(config, RoutingKnowledge(config), None, random.Random(0))  # type: ignore[arg-type]
    assert router.hedge_decision(_plan("cheapest fast enough"), True).mode == "delayed"
    explored = router.hedge_decision(_plan(EXPLORATION), True).mode
    assert explored == ("none" if horizon else "delayed")
