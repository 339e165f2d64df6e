import pytest

from routing.core import RoutingOptions
from routing.core.customer import YOUR_ORDER, YOUR_PROVIDER_LIST

from .factories import endpoint, features, ids, plan, reasons, speed

# 1 cheapest but slow, 2 mid and fast, 3 dear and fastest, 4 no data at all.
ENDPOINTS = [
    endpoint(1, "alpha", price_input=0.1),
    endpoint(2, "beta", price_input=0.2),
    endpoint(3, "gamma", price_input=0.4),
    endpoint(4, "delta", price_input=0.3),
]
SPEEDS = speed({1: 12.0, 2: 1.5, 3: 0.8}, throughput={1: 20.0, 2: 90.0, 3: 60.0})


def test_smart_baseline_for_these_endpoints():
    assert plan(ENDPOINTS, SPEEDS).first.endpoint.provider_slug == "beta"


def test_order_puts_listed_providers_first_then_smart_fallbacks():
    route_plan = plan(ENDPOINTS, SPEEDS, options=RoutingOptions(order=("gamma", "alpha")))
    assert ids(route_plan) == [3, 1, 2, 4]
    assert reasons(route_plan)[:2] == [YOUR_ORDER, YOUR_ORDER]
    assert reasons(route_plan)[2:] == ["fallback: cheapest fast enough", "fallback: no speed data"]
    assert route_plan.strategy == "customer"


def test_order_without_fallbacks_keeps_only_listed_providers():
    options = RoutingOptions(order=("gamma", "alpha"), allow_fallbacks=False)
    assert ids(plan(ENDPOINTS, SPEEDS, options=options)) == [3, 1]


def test_order_then_sort_for_the_rest():
    options = RoutingOptions(order=("gamma",), sort="price")
    route_plan = plan(ENDPOINTS, SPEEDS, options=options)
    assert ids(route_plan) == [3, 1, 2, 4]
    assert reasons(route_plan)[1:] == ["fallback: sorted by price"] * 3


def test_only_filters_then_cheapest_even_if_slow():
    options = RoutingOptions(only=("alpha", "gamma"))
    route_plan = plan(ENDPOINTS, SPEEDS, options=options)
    assert ids(route_plan) == [1, 3]
    assert reasons(route_plan) == [YOUR_PROVIDER_LIST] * 2


def test_ignore_filters_then_cheapest():
    route_plan = plan(ENDPOINTS, SPEEDS, options=RoutingOptions(ignore=("alpha",)))
    assert ids(route_plan) == [2, 4, 3]
    assert route_plan.strategy == "customer"


def test_only_without_fallbacks_keeps_the_whole_allowed_list():
    options = RoutingOptions(only=("alpha", "gamma"), allow_fallbacks=False)
    assert ids(plan(ENDPOINTS, SPEEDS, options=options)) == [1, 3]


@pytest.mark.parametrize(
    ("sort", "expected_ids", "expected_reasons"),
    [
        ("price", [1, 2, 4, 3], ["sorted by price"] * 4),
        ("latency", [3, 2, 1, 4], ["sorted by latency"] * 3 + ["sorted by latency (no data)"]),
        (
            "throughput",
            [2, 3, 1, 4],
            ["sorted by throughput"] * 3 + ["sorted by throughput (no data)"],
        ),
    ],
)
def test_sort(sort, expected_ids, expected_reasons):
    route_plan = plan(ENDPOINTS, SPEEDS, options=RoutingOptions(sort=sort))
    assert ids(route_plan) == expected_ids
    assert reasons(route_plan) == expected_reasons


@pytest.mark.parametrize(("suffix", "first_id"), [(":floor", 1), (":nitro", 2)])
def test_suffixes(suffix, first_id):
    options = RoutingOptions.from_request(None, suffix)
    route_plan = plan(ENDPOINTS, SPEEDS, options=options)
    assert route_plan.first.endpoint.endpoint_id == first_id
    assert route_plan.strategy == "customer"


def test_sort_without_fallbacks_is_only_the_top_choice():
    options = RoutingOptions(sort="latency", allow_fallbacks=False)
    assert ids(plan(ENDPOINTS, SPEEDS, options=options)) == [3]


def test_max_price_applies_to_the_customer_choice_too():
    options = RoutingOptions(order=("gamma", "beta"), max_price_prompt=0.35)
    route_plan = plan(ENDPOINTS, SPEEDS, options=options)
    assert 3 not in ids(route_plan)
    assert route_plan.first.endpoint.endpoint_id == 2


def test_sort_by_price_uses_this_requests_cached_tokens():
    request = features(prompt=100_000, cached={3: 99_000})
    options = RoutingOptions(sort="price")
    assert plan(ENDPOINTS, SPEEDS, options=options, request=request).first.endpoint.endpoint_id == 3


def test_unusable_provider_in_the_order_goes_last():
    options = RoutingOptions(order=("gamma", "alpha"), allow_fallbacks=False)
    route_plan = plan(ENDPOINTS, SPEEDS, options=options, unusable=frozenset({3}))
    assert ids(route_plan) == [1, 3]
    assert reasons(route_plan) == [YOUR_ORDER, f"last resort: marked unusable; {YOUR_ORDER}"]
