import pytest

from routing.core import BUCKETS, RequestFeatures, RouteChoice, RoutePlan, bucket_for

from .factories import endpoint


@pytest.mark.parametrize(
    ("prompt_tokens", "bucket"),
    [
        (0, "<8k"),
        (7_999, "<8k"),
        (8_000, "8k-32k"),
        (31_999, "8k-32k"),
        (32_000, "32k-128k"),
        (127_999, "32k-128k"),
        (128_000, ">128k"),
        (2_000_000, ">128k"),
    ],
)
def test_bucket_lower_bound_is_inclusive(prompt_tokens, bucket):
    assert bucket_for(prompt_tokens) == bucket


def test_buckets_are_the_four_product_buckets_in_order():
    assert BUCKETS == ("<8k", "8k-32k", "32k-128k", ">128k")


def test_negative_prompt_is_rejected():
    with pytest.raises(ValueError, match="prompt_tokens"):
        bucket_for(-1)


def test_route_plan_first_and_ids():
    first = RouteChoice(endpoint(7), "cheapest fast enough", 0.01, 1.2, True)
    second = RouteChoice(endpoint(3), "fallback: fast enough", 0.02, 1.5, True)
    route_plan = RoutePlan((first, second), "<8k", "smart")
    assert route_plan.first is first
    assert route_plan.endpoint_ids == (7, 3)
    assert first.endpoint_id == 7


@pytest.mark.parametrize(("prompt", "output"), [(-1, 10), (10, -1)])
def test_request_features_reject_negative_token_counts(prompt, output):
    with pytest.raises(ValueError, match=">= 0"):
        RequestFeatures(prompt, output)
