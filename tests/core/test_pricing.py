import pytest

from routing.core import ModelInfo, RoutingOptions, request_cost, worst_case_within_max_price
from routing.core.pricing import list_price_cost

from .factories import endpoint, features, plan


@pytest.mark.parametrize(
    ("prompt", "cached", "output", "expected_usd"),
    [
        (1_000_000, 0, 0, 0.20),
        (1_000_000, 1_000_000, 0, 0.01),
        (1_000_000, 600_000, 0, 0.4 * 0.20 + 0.6 * 0.01),
        (0, 0, 1_000_000, 0.80),
        (100_000, 90_000, 2_000, (10_000 * 0.20 + 90_000 * 0.01 + 2_000 * 0.80) / 1e6),
        (1_000, 5_000, 0, 1_000 * 0.01 / 1e6),  # cached clamped to the prompt
        (1_000, -5, 0, 1_000 * 0.20 / 1e6),  # negative cached = none
    ],
)
def test_request_cost_prices_each_token_class(prompt, cached, output, expected_usd):
    provider = endpoint(1, price_input=0.20, cache_read=0.01, output=0.80)
    assert request_cost(provider, prompt, cached, output) == pytest.approx(expected_usd)


def test_long_cached_prompt_goes_to_the_cheaper_cache_read_not_the_cheaper_input():
    # product.md: a reseller charging $0.07/1M cached vs another provider at $0.0013.
    reseller = endpoint(1, "reseller", price_input=0.10, cache_read=0.07, output=0.40)
    provider = endpoint(2, "deepseek", price_input=0.27, cache_read=0.0013, output=0.40)
    request = features(prompt=120_000, output=500, cached={1: 115_000, 2: 115_000})
    assert (
        reseller.price_input + reseller.price_output < provider.price_input + provider.price_output
    )
    reseller_cost = request_cost(reseller, 120_000, 115_000, 500)
    provider_cost = request_cost(provider, 120_000, 115_000, 500)
    assert reseller_cost > 4 * provider_cost

    route_plan = plan([reseller, provider], request=request)

    assert route_plan.first.endpoint.provider_slug == "deepseek"
    assert route_plan.first.expected_cost_usd == pytest.approx(provider_cost)


def test_cached_tokens_are_per_endpoint():
    warm = endpoint(1, price_input=1.0, cache_read=0.1)
    cold = endpoint(2, price_input=0.5, cache_read=0.05)
    route_plan = plan([warm, cold], request=features(prompt=100_000, cached={1: 95_000}))
    assert route_plan.first.endpoint.endpoint_id == 1  # warm cache beats a cheaper cold input


def test_list_price_cost_uses_input_list_price_for_cache_reads_when_missing():
    model = ModelInfo("m", list_price_input=1.0, list_price_output=2.0)
    assert list_price_cost(model, 1_000_000, 500_000, 0) == pytest.approx(1.0)
    with_cache = ModelInfo("m", 1.0, 2.0, list_price_cache_read=0.1)
    assert list_price_cost(with_cache, 1_000_000, 500_000, 0) == pytest.approx(0.55)


CAPPED = endpoint(1, price_input=1.0, cache_read=0.1, cache_write=1.25, output=2.0)


@pytest.mark.parametrize(
    ("prompt_cap", "completion_cap", "within"),
    [
        (None, None, True),
        (1.25, 2.0, True),  # equal to the cap is allowed
        (1.0, None, False),  # cache write 1.25 > prompt cap
        (1.3, 1.99, False),  # output above completion cap
        (None, 2.0, True),
        (0.5, None, False),  # input above prompt cap
    ],
)
def test_max_price_caps_every_prompt_token_class_and_the_output(prompt_cap, completion_cap, within):
    options = RoutingOptions(max_price_prompt=prompt_cap, max_price_completion=completion_cap)
    assert worst_case_within_max_price(CAPPED, options) is within


def test_conversation_leaves_a_reseller_whose_cache_reads_are_dear():
    """Turn 2 of a conversation started at a reseller: its cache reads ($0.09) beat the
    honest provider's uncached input ($0.10) for this request alone, but not once the
    follow-up turns (cache reads at $0.01 there) are counted."""
    import random

    from routing.core import ModelInfo, RequestFeatures, RoutingOptions, SpeedSummary, plan_route

    reseller = endpoint(1, "reseller", price_input=0.05, cache_read=0.09, output=0.4)
    honest = endpoint(2, "honest", price_input=0.10, cache_read=0.01, output=0.4)
    model = ModelInfo("m", 0.5, 1.5)

    def first(followups: float) -> str:
        request = RequestFeatures(
            prompt_tokens=100_000,
            expected_output_tokens=100,
            cached_tokens={1: 95_000},
            expected_followup_turns=followups,
        )
        chosen = plan_route(
            model,
            [reseller, honest],
            request,
            RoutingOptions(),
            SpeedSummary(),
            frozenset(),
            random.Random(0),
        ).first
        assert chosen.expected_cost_usd == request_cost(
            chosen.endpoint, 100_000, 95_000 if chosen.endpoint.endpoint_id == 1 else 0, 100
        )  # the reported cost is this request's own
        return chosen.endpoint.provider_slug

    assert first(0.0) == "reseller"
    assert first(2.0) == "honest"
