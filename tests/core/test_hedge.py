import pytest

from routing.core import HedgeDecision, RouteChoice, RoutePlan, hedge_partner, hedge_policy

from .factories import endpoint


@pytest.mark.parametrize(
    ("bucket", "stream", "budget", "leg_cost", "expected"),
    [
        ("<8k", True, 10.0, 0.01, HedgeDecision("none")),
        ("8k-32k", True, 10.0, 0.01, HedgeDecision("none")),
        ("32k-128k", True, 10.0, 0.01, HedgeDecision("delayed", 1.0)),
        (">128k", True, 10.0, 0.01, HedgeDecision("immediate", 0.0)),
        (">128k", False, 10.0, 0.01, HedgeDecision("none")),  # not streaming
        (">128k", True, 0.005, 0.01, HedgeDecision("none")),  # budget spent
        ("32k-128k", True, 0.01, 0.01, HedgeDecision("delayed", 1.0)),
    ],
)
def test_hedge_policy(bucket, stream, budget, leg_cost, expected):
    assert hedge_policy(bucket, stream, budget, leg_cost) == expected


def test_hedge_thresholds_are_parameters():
    decision = hedge_policy("8k-32k", True, 1.0, 0.01, delayed_from_tokens=8_000, delay_s=0.5)
    assert decision == HedgeDecision("delayed", 0.5)
    assert hedge_policy(">128k", True, 1.0, 0.01, immediate_from_tokens=10**9).mode == "delayed"


def _choice(eid, slug, fast_enough=True):
    return RouteChoice(endpoint(eid, slug), "r", 0.01, 1.0, fast_enough)


def test_partner_is_the_next_fast_enough_endpoint_of_another_provider():
    route_plan = RoutePlan(
        (
            _choice(1, "deepinfra"),
            _choice(2, "deepinfra/turbo"),  # same provider
            _choice(3, "novita", fast_enough=False),  # too slow
            _choice(4, "chutes"),
            _choice(5, "parasail"),
        ),
        "32k-128k",
        "smart",
    )
    assert hedge_partner(route_plan).endpoint.endpoint_id == 4
    assert hedge_partner(route_plan, route_plan.choices[3]).endpoint.endpoint_id == 5


def test_no_partner_when_none_qualifies():
    route_plan = RoutePlan(
        (_choice(1, "a"), _choice(2, "a"), _choice(3, "b", fast_enough=False)), ">128k", "smart"
    )
    assert hedge_partner(route_plan) is None
