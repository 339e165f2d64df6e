import pytest

from routing.core import RoutingError, RoutingOptions, all_attempts_failed

from .factories import endpoint, features, ids, plan, reasons

SMALL = endpoint(1, "small", price_input=0.1, context=32_000)
LARGE = endpoint(2, "large", price_input=0.5, context=256_000)


@pytest.mark.parametrize(
    ("prompt", "output", "expected_ids"),
    [
        (31_000, 1_000, [1, 2]),  # exactly fits the small context
        (31_000, 1_001, [2]),
        (100_000, 500, [2]),
    ],
)
def test_context_length_filter_counts_prompt_and_expected_output(prompt, output, expected_ids):
    route_plan = plan([SMALL, LARGE], request=features(prompt=prompt, output=output))
    assert ids(route_plan) == expected_ids


def test_required_parameters_filter():
    no_tools = endpoint(1, price_input=0.1, params=frozenset({"temperature"}))
    tools = endpoint(2, price_input=0.5, params=frozenset({"tools", "temperature"}))
    route_plan = plan([no_tools, tools], request=features(params=frozenset({"tools"})))
    assert ids(route_plan) == [2]


def test_max_price_endpoint_is_never_tried_even_as_fallback():
    cheap = endpoint(1, price_input=0.1, output=0.5)
    dear_output = endpoint(2, price_input=0.1, output=5.0)
    dear_cache_write = endpoint(3, price_input=0.1, cache_write=3.0, output=0.5)
    options = RoutingOptions(max_price_prompt=1.0, max_price_completion=1.0)
    route_plan = plan([cheap, dear_output, dear_cache_write], options=options)
    assert ids(route_plan) == [1]
    assert route_plan.strategy == "smart"  # max_price works with smart routing


@pytest.mark.parametrize(
    "options",
    [
        RoutingOptions(only=("nosuch",)),
        RoutingOptions(ignore=("nosuch",)),
        RoutingOptions(order=("large", "nosuch"), allow_fallbacks=False),
    ],
)
def test_unknown_provider_slug_is_a_400(options):
    with pytest.raises(RoutingError) as caught:
        plan([SMALL, LARGE], options=options)
    assert caught.value.status == 400
    assert caught.value.code == "unknown_provider"
    assert "nosuch" in caught.value.message
    assert "large, small" in caught.value.message  # says which providers exist


def test_unknown_provider_in_order_falls_back():
    route_plan = plan([SMALL, LARGE], options=RoutingOptions(order=("nosuch", "large")))
    assert route_plan.choices[0].endpoint.provider_slug == "large"
    assert {c.endpoint.provider_slug for c in route_plan.choices} == {"large", "small"}


def test_base_slug_matches_provider_variants():
    base = endpoint(1, "deepinfra", price_input=0.3)
    turbo = endpoint(2, "deepinfra/turbo", price_input=0.2)
    other = endpoint(3, "novita", price_input=0.1)
    route_plan = plan([base, turbo, other], options=RoutingOptions(only=("deepinfra",)))
    assert ids(route_plan) == [2, 1]


@pytest.mark.parametrize(
    ("request_kwargs", "options", "code", "message"),
    [
        (
            {"prompt": 300_000},
            RoutingOptions(),
            "context_length_exceeded",
            "fits a prompt of 300000 tokens",
        ),
        (
            {"params": frozenset({"logprobs"})},
            RoutingOptions(),
            "unsupported_parameters",
            "supports parameter(s): logprobs",
        ),
        (
            {},
            RoutingOptions(max_price_prompt=0.01),
            "max_price_exceeded",
            "under provider.max_price (prompt <= $0.01/1M)",
        ),
        (
            {"prompt": 100_000},
            RoutingOptions(only=("small",)),
            "no_allowed_provider",
            "left after provider.only/ignore; providers that can serve this request: large",
        ),
        (
            {},
            RoutingOptions(ignore=("small", "large")),
            "no_allowed_provider",
            "left after provider.only/ignore",
        ),
    ],
)
def test_nothing_left_is_a_404_that_says_why(request_kwargs, options, code, message):
    with pytest.raises(RoutingError) as caught:
        plan([SMALL, LARGE], options=options, request=features(**request_kwargs))
    assert caught.value.status == 404
    assert caught.value.code == code
    assert message in caught.value.message


def test_no_single_endpoint_with_all_required_parameters():
    tools_only = endpoint(1, params=frozenset({"tools"}))
    logprobs_only = endpoint(2, params=frozenset({"logprobs"}))
    with pytest.raises(RoutingError, match="supports all of: logprobs, tools together"):
        plan([tools_only, logprobs_only], request=features(params=frozenset({"tools", "logprobs"})))


def test_model_without_endpoints_is_a_404():
    with pytest.raises(RoutingError) as caught:
        plan([])
    assert caught.value.status == 404


def test_every_endpoint_unusable_still_gives_a_plan_cheapest_first():
    route_plan = plan([LARGE, SMALL], unusable=frozenset({1, 2}))
    assert ids(route_plan) == [1, 2]
    assert all(reason.startswith("last resort: marked unusable") for reason in reasons(route_plan))


def test_when_every_attempt_failed_the_answer_is_a_503_naming_them():
    error = all_attempts_failed("m", [("small", "429"), ("large", "timeout")])
    assert error.status == 503
    assert error.message == "every endpoint tried for model m failed: small (429), large (timeout)"


def test_order_without_fallbacks_whose_providers_cannot_serve_is_a_404():
    options = RoutingOptions(order=("small",), allow_fallbacks=False)
    with pytest.raises(RoutingError) as caught:
        plan([SMALL, LARGE], options=options, request=features(prompt=100_000))
    assert caught.value.status == 404
    assert "allow_fallbacks is false" in caught.value.message
