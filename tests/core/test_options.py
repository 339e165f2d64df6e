import pytest

from routing.core import RoutingError, RoutingOptions, split_model_suffix


def test_no_provider_object_means_defaults_and_smart_routing():
    options = RoutingOptions.from_request(None, None)
    assert options == RoutingOptions()
    assert options.allow_fallbacks is True
    assert not options.is_customer_choice


def test_full_provider_object_is_parsed():
    options = RoutingOptions.from_request(
        {
            "only": ["DeepInfra", " novita "],
            "ignore": ["chutes"],
            "order": ["novita", "deepinfra", "novita"],
            "sort": "latency",
            "allow_fallbacks": False,
            "max_price": {"prompt": 1, "completion": 2.5},
        },
        None,
    )
    assert options.only == ("deepinfra", "novita")
    assert options.ignore == ("chutes",)
    assert options.order == ("novita", "deepinfra")  # lower-cased, de-duplicated
    assert options.sort == "latency"
    assert options.allow_fallbacks is False
    assert (options.max_price_prompt, options.max_price_completion) == (1.0, 2.5)


@pytest.mark.parametrize(
    ("suffix", "sort"), [("floor", "price"), (":floor", "price"), (":nitro", "throughput")]
)
def test_model_suffix_sets_the_sort(suffix, sort):
    options = RoutingOptions.from_request(None, suffix)
    assert options.sort == sort
    assert options.is_customer_choice


def test_suffix_agreeing_with_sort_is_fine():
    assert RoutingOptions.from_request({"sort": "price"}, ":floor").sort == "price"


@pytest.mark.parametrize(
    ("provider", "suffix", "message"),
    [
        ("deepinfra", None, "provider must be an object"),
        ({"only": "deepinfra"}, None, "provider.only must be a list"),
        ({"ignore": [1]}, None, "provider.ignore must contain non-empty strings"),
        ({"order": [""]}, None, "provider.order must contain non-empty strings"),
        ({"sort": "cheapest"}, None, "provider.sort must be one of"),
        ({"sort": 1}, None, "provider.sort must be one of"),
        ({"allow_fallbacks": "false"}, None, "allow_fallbacks must be true or false"),
        ({"max_price": 1}, None, "max_price must be an object"),
        ({"max_price": {"prompt": "1"}}, None, "max_price.prompt must be a number"),
        ({"max_price": {"completion": True}}, None, "max_price.completion must be a number"),
        ({"max_price": {"prompt": -1}}, None, "must be a finite number >= 0"),
        ({"max_price": {"tokens": 0.1}}, None, "unsupported provider.max_price field"),
        ({"made_up": "deny"}, None, "unsupported provider option(s): made_up"),
        ({"require_parameters": "yes"}, None, "require_parameters must be true or false"),
        ({"data_collection": "never"}, None, "data_collection must be allow or deny"),
        ({"zdr": "yes"}, None, "provider.zdr must be true or false"),
        ({"preferred_max_latency": "fast"}, None, "preferred_max_latency must be a number"),
        ({"preferred_max_latency": {"p95": 2}}, None, "takes p50, p75, p90 and p99, not p95"),
        ({"preferred_max_latency": {"p90": -1}}, None, "p90 must be a finite number >= 0"),
        ({"preferred_min_throughput": True}, None, "preferred_min_throughput must be a number"),
        ({"sort": {"by": "cheapest"}}, None, "provider.sort must be one of"),
        ({"sort": {"by": "price", "partition": "all"}}, None, "partition must be model or none"),
        ({"sort": {"order": "price"}}, None, "unsupported provider.sort field(s): order"),
        (None, ":free", "unknown model suffix :free"),
        ({"sort": "latency"}, ":nitro", "contradicts the model suffix"),
    ],
)
def test_invalid_options_are_a_clear_400(provider, suffix, message):
    with pytest.raises(RoutingError) as caught:
        RoutingOptions.from_request(provider, suffix)
    assert caught.value.status == 400
    assert caught.value.code == "invalid_provider_options"
    assert message in caught.value.message


def test_require_parameters_is_parsed():
    assert RoutingOptions.from_request({"require_parameters": True}).require_parameters
    assert not RoutingOptions.from_request({}).require_parameters


def test_openrouter_preferences_are_parsed_and_the_rest_reported_ignored():
    provider = {
        "data_collection": "deny",
        "zdr": True,
        "quantizations": ["fp8"],
        "preferred_max_latency": 2,
        "preferred_min_throughput": {"p50": 50, "p90": None},
        "enforce_distillable_text": False,
        "max_price": {"prompt": 1, "request": 0.01},
    }
    options = RoutingOptions.from_request(provider)
    assert options.ignored_keys == ("enforce_distillable_text", "quantizations")
    assert options.deny_data_collection and options.zdr
    assert options.max_latency_s == (("p50", 2.0),)
    assert options.min_throughput == (("p50", 50.0),)
    assert options.max_price_prompt == 1.0
    assert not options.is_customer_choice  # preferences and filters keep smart routing


def test_percentile_cutoffs_keep_every_given_one():
    options = RoutingOptions.from_request(
        {"preferred_max_latency": {"p50": 1, "p75": 1.5, "p90": 3, "p99": 9.5}}
    )
    assert options.max_latency_s == (("p50", 1.0), ("p75", 1.5), ("p90", 3.0), ("p99", 9.5))


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ({"by": "latency"}, "latency"),
        ({"by": "price", "partition": "model"}, "price"),
        ({"by": "throughput", "partition": "none"}, "throughput"),
        ({"by": None, "partition": "none"}, None),
        ({}, None),
    ],
)
def test_sort_as_an_object(sort, expected):
    assert RoutingOptions.from_request({"sort": sort}).sort == expected


def test_null_preferences_are_the_defaults():
    nulls = ("data_collection", "zdr", "allow_fallbacks", "sort", "preferred_max_latency")
    options = RoutingOptions.from_request(dict.fromkeys(nulls))
    assert options == RoutingOptions()


def test_unknown_provider_in_order_is_required_only_without_fallbacks():
    assert RoutingOptions(order=("gone",)).named_providers == ()
    strict = RoutingOptions(order=("gone",), allow_fallbacks=False)
    assert strict.named_providers == ("gone",)


@pytest.mark.parametrize(
    ("options", "customer"),
    [
        (RoutingOptions(), False),
        (RoutingOptions(max_price_prompt=1.0), False),
        (RoutingOptions(allow_fallbacks=False), False),
        (RoutingOptions(only=("a",)), True),
        (RoutingOptions(ignore=("a",)), True),
        (RoutingOptions(order=("a",)), True),
        (RoutingOptions(sort="price"), True),
    ],
)
def test_smart_routing_runs_unless_the_customer_chose(options, customer):
    assert options.is_customer_choice is customer


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("deepseek/deepseek-v4.1-flash:floor", ("deepseek/deepseek-v4.1-flash", "floor")),
        ("deepseek/deepseek-v4.1-flash:nitro", ("deepseek/deepseek-v4.1-flash", "nitro")),
        ("deepseek/deepseek-v4.1-flash", ("deepseek/deepseek-v4.1-flash", None)),
        ("vendor/model:free", ("vendor/model:free", None)),
        (":floor", (":floor", None)),
    ],
)
def test_split_model_suffix(model_id, expected):
    assert split_model_suffix(model_id) == expected


def test_no_options_is_one_shared_default_and_a_falsy_non_object_is_still_refused():
    """Most requests name no provider options: nothing is parsed, one object is shared."""
    plain = RoutingOptions.from_request(None)
    assert plain is RoutingOptions.from_request({}) and plain == RoutingOptions()
    assert RoutingOptions.from_request({}, "floor").sort == "price"
    for not_an_object in ([], "", 0, False):
        with pytest.raises(RoutingError):
            RoutingOptions.from_request(not_an_object)
