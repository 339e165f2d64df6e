import random
from collections import Counter

import pytest

from routing.core import ModelInfo, RoutingOptions
from routing.core.smart import (
    CHEAPEST_BY_MODEL_TYPICAL,
    CHEAPEST_FAST_ENOUGH,
    EXPLORATION,
    FALLBACK_ABOVE_USUAL_PRICE,
    FALLBACK_FAST_ENOUGH,
    FALLBACK_TOO_SLOW,
    FASTEST_CHEAPER_TOO_SLOW,
    NO_SPEED_DATA,
)

from .factories import endpoint, features, ids, plan, reasons, speed

CHEAP = endpoint(1, "cheap", price_input=0.1)
DEARER = endpoint(2, "dearer", price_input=0.2)


@pytest.mark.parametrize(
    ("cheap_ttft", "dearer_ttft", "first_id", "first_reason"),
    [
        (4.0, 2.0, 1, CHEAPEST_FAST_ENOUGH),  # exactly 2x the fastest
        (4.01, 2.0, 2, FASTEST_CHEAPER_TOO_SLOW),
        (0.95, 0.3, 1, CHEAPEST_FAST_ENOUGH),  # > 2x but under 1 s
        (1.0, 0.3, 2, FASTEST_CHEAPER_TOO_SLOW),  # neither within 2x nor under 1 s
        (0.5, 0.6, 1, CHEAPEST_FAST_ENOUGH),
    ],
)
def test_fast_enough_is_within_2x_of_the_fastest_or_under_one_second(
    cheap_ttft, dearer_ttft, first_id, first_reason
):
    route_plan = plan([CHEAP, DEARER], speed({1: cheap_ttft, 2: dearer_ttft}))
    assert route_plan.first.endpoint.endpoint_id == first_id
    assert route_plan.first.reason == first_reason
    assert route_plan.first.fast_enough
    assert route_plan.strategy == "smart"


def test_cheapest_fast_enough_wins_then_fallbacks_in_documented_order():
    endpoints = [
        endpoint(1, price_input=0.10),  # too slow, cheapest
        endpoint(2, price_input=0.20),  # fast enough
        endpoint(3, price_input=0.30),  # fast enough
        endpoint(4, price_input=0.15),  # no data
        endpoint(5, price_input=0.25),  # too slow, but less so than 1
        endpoint(6, price_input=0.40),  # fastest
    ]
    speeds = speed({1: 10.0, 2: 1.8, 3: 1.5, 5: 5.0, 6: 1.0})
    route_plan = plan(endpoints, speeds)
    # O8 (issue 10): endpoint 4, without data, starts from the model's typical speed (the
    # median, 1.8 s): fast enough and the cheapest of those; its first calls measure it
    assert ids(route_plan) == [4, 2, 3, 6, 5, 1]
    assert reasons(route_plan) == [
        CHEAPEST_BY_MODEL_TYPICAL,
        FALLBACK_FAST_ENOUGH,
        FALLBACK_FAST_ENOUGH,
        FALLBACK_FAST_ENOUGH,
        FALLBACK_TOO_SLOW,
        FALLBACK_TOO_SLOW,
    ]
    assert [c.fast_enough for c in route_plan.choices] == [True, True, True, True, False, False]
    assert route_plan.first.typical_ttft_s is None  # the prior is not its own number
    assert route_plan.choices[1].typical_ttft_s == 1.8


def test_a_plan_with_an_endpoint_without_data_carries_the_models_typical_ttft():
    """Issue 44 (O8): the first-token budget of an endpoint without data comes from the
    model's typical TTFT in the bucket (the median of the endpoints' own figures, those
    a customer's filter leaves out included); a plan where every endpoint has data
    carries none."""
    endpoints = [endpoint(1, "a"), endpoint(2, "b"), endpoint(3, "c"), endpoint(4, "new")]
    speeds = speed({1: 1.0, 2: 3.0, 3: 8.0})
    assert {c.model_typical_ttft_s for c in plan(endpoints, speeds).choices} == {3.0}
    pinned = plan(endpoints, speeds, options=RoutingOptions(only=("new",)))
    assert pinned.first.endpoint_id == 4 and pinned.first.model_typical_ttft_s == 3.0
    measured = plan(endpoints[:3], speeds)
    assert {c.model_typical_ttft_s for c in measured.choices} == {None}
    assert plan(endpoints, speed({})).first.model_typical_ttft_s is None  # nothing known


def test_an_endpoint_without_data_is_a_fallback_when_the_model_typical_is_too_slow():
    endpoints = [endpoint(1, price_input=0.10), endpoint(2, price_input=0.20)]
    endpoints.append(endpoint(3, price_input=0.05))  # no data, cheapest
    route_plan = plan(endpoints, speed({1: 10.0, 2: 1.0}))  # model typical: 5.5 s
    assert ids(route_plan) == [2, 3, 1]
    assert reasons(route_plan)[1] == FALLBACK_TOO_SLOW


def test_speed_is_per_prompt_size_bucket():
    # Fast on short prompts, 15 s on long ones: long prompts go elsewhere.
    speeds = speed({1: 0.5, 2: 0.6}, bucket="<8k")
    long_speeds = speed({1: 15.0, 2: 1.8}, bucket="32k-128k")
    merged = type(speeds)(
        {**speeds.typical_by_key, **long_speeds.typical_by_key},
        {**speeds.count_by_key, **long_speeds.count_by_key},
    )
    assert plan([CHEAP, DEARER], merged, request=features(prompt=1_000)).first.endpoint is CHEAP
    long_plan = plan([CHEAP, DEARER], merged, request=features(prompt=100_000))
    assert long_plan.bucket == "32k-128k"
    assert long_plan.first.endpoint is DEARER


@pytest.mark.parametrize(
    "speeds",
    [
        speed({}),
        speed({1: 0.5, 2: 0.1}, bucket=">128k"),  # data only in another bucket
    ],
)
def test_no_speed_data_sends_to_the_cheapest(speeds):
    route_plan = plan([DEARER, CHEAP], speeds)
    assert ids(route_plan) == [1, 2]
    assert route_plan.first.reason == NO_SPEED_DATA
    assert route_plan.first.typical_ttft_s is None


def test_thin_data_counts_from_the_first_sample():
    # issue 10, cold start: one probe each is enough to tell 9 s from 0.1 s (the bucket
    # is still explored until it has min_samples)
    route_plan = plan([DEARER, CHEAP], speed({1: 9.0, 2: 0.1}, count=1))
    assert ids(route_plan) == [2, 1]
    assert route_plan.first.reason == FASTEST_CHEAPER_TOO_SLOW


def _r29_endpoints():
    return [
        endpoint(1, price_input=0.1, output=0.0),  # 15 s
        endpoint(2, price_input=0.2, output=0.0),  # 12 s; usual price = median = this one
        endpoint(3, price_input=1.0, output=0.0),  # 1 s, dear
    ]


@pytest.mark.parametrize(
    ("list_price_input", "first_id", "first_reason"),
    [
        (2.5, 3, FASTEST_CHEAPER_TOO_SLOW),  # dear one costs 60% below list
        (2.0, 3, FASTEST_CHEAPER_TOO_SLOW),  # exactly 50% below list
        (1.5, 1, CHEAPEST_FAST_ENOUGH),  # only 33% below list: not picked for speed
    ],
)
def test_dear_endpoint_is_picked_for_speed_only_when_half_below_list(
    list_price_input, first_id, first_reason
):
    model = ModelInfo("m", list_price_input=list_price_input, list_price_output=0.0)
    route_plan = plan(_r29_endpoints(), speed({1: 15.0, 2: 12.0, 3: 1.0}), model=model)
    assert route_plan.first.endpoint.endpoint_id == first_id
    assert route_plan.first.reason == first_reason
    if first_id == 1:
        assert route_plan.choices[-1].endpoint.endpoint_id == 3
        assert route_plan.choices[-1].reason == FALLBACK_ABOVE_USUAL_PRICE


def test_only_dear_endpoints_measured_means_cheapest():
    model = ModelInfo("m", list_price_input=1.5, list_price_output=0.0)
    route_plan = plan(_r29_endpoints(), speed({3: 1.0}), model=model)
    assert route_plan.first.endpoint.endpoint_id == 1
    # O8 (issue 10): the unmeasured ones start from the model's typical speed
    assert route_plan.first.reason == CHEAPEST_BY_MODEL_TYPICAL


def _exploration_setup():
    endpoints = [endpoint(i, price_input=0.1 * i) for i in range(1, 6)]
    return endpoints, speed({1: 1.0, 2: 1.1})  # 3, 4, 5 have too little data


def test_about_five_percent_of_decisions_explore_an_endpoint_with_too_little_data():
    endpoints, speeds = _exploration_setup()
    rng = random.Random(2026)
    first_ids = Counter()
    for _ in range(10_000):
        route_plan = plan(endpoints, speeds, rng=rng, exploration_rate=0.05)
        if route_plan.first.reason == EXPLORATION:
            first_ids[route_plan.first.endpoint.endpoint_id] += 1
            assert route_plan.choices[1].endpoint.endpoint_id == 1
            assert route_plan.choices[1].reason == f"fallback: {CHEAPEST_FAST_ENOUGH}"
            assert len(set(route_plan.endpoint_ids)) == 5
        else:
            assert route_plan.first.endpoint.endpoint_id == 1
    assert 300 <= sum(first_ids.values()) <= 700
    assert set(first_ids) == {3, 4, 5}


def test_exploration_skips_unusable_and_dearer_than_usual_endpoints():
    model = ModelInfo("m", list_price_input=0.6, list_price_output=0.0)
    endpoints = [endpoint(i, price_input=0.1 * i, output=0.0) for i in range(1, 6)]
    speeds = speed({1: 1.0})
    # usual price = 0.3 (median); endpoint 4 and 5 are above it and not 50% below list
    # (0.3); endpoint 2 is unusable: only endpoint 3 may be explored.
    for seed in range(50):
        route_plan = plan(
            endpoints,
            speeds,
            model=model,
            unusable=frozenset({2}),
            rng=random.Random(seed),
            exploration_rate=1.0,
        )
        assert route_plan.first.endpoint.endpoint_id == 3
        assert route_plan.first.reason == EXPLORATION


def test_no_exploration_without_candidates_and_rng_untouched():
    rng = random.Random(5)
    state = rng.getstate()
    route_plan = plan([CHEAP, DEARER], speed({1: 1.0, 2: 1.0}), rng=rng, exploration_rate=1.0)
    assert route_plan.first.reason == CHEAPEST_FAST_ENOUGH
    assert rng.getstate() == state


def test_exploration_rate_zero_never_explores():
    endpoints, speeds = _exploration_setup()
    rng = random.Random(1)
    assert all(plan(endpoints, speeds, rng=rng).first.reason != EXPLORATION for _ in range(2_000))


def test_without_fallbacks_smart_routing_returns_only_the_first_choice():
    route_plan = plan([CHEAP, DEARER], options=RoutingOptions(allow_fallbacks=False))
    assert ids(route_plan) == [1]
    assert route_plan.strategy == "smart"


def test_a_turn_cached_at_the_first_choice_is_explored_only_where_it_is_cached_too():
    """An agent's warm turn explored at a cold endpoint would be an uncached prompt of the
    conversation's whole size there (slow, and many times its cache read's price)."""
    endpoints, speeds = _exploration_setup()
    warm = features(prompt=5_000, cached={1: 4_800})
    for seed in range(50):
        route_plan = plan(
            endpoints, speeds, request=warm, rng=random.Random(seed), exploration_rate=1.0
        )
        assert route_plan.first.endpoint.endpoint_id == 1
        assert route_plan.first.reason != EXPLORATION
    also_warm_at_4 = features(prompt=5_000, cached={1: 4_800, 4: 4_800})
    route_plan = plan(
        endpoints, speeds, request=also_warm_at_4, rng=random.Random(1), exploration_rate=1.0
    )
    assert (route_plan.first.endpoint.endpoint_id, route_plan.first.reason) == (4, EXPLORATION)
    cold = features(prompt=5_000)
    route_plan = plan(endpoints, speeds, request=cold, rng=random.Random(1), exploration_rate=1.0)
    assert route_plan.first.reason == EXPLORATION
