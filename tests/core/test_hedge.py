import pytest

from routing.core import HedgeDecision, RouteChoice, RoutePlan, hedge_partner, hedge_policy
from routing.core.hedge import (
    MIN_LATE_SHARE,
    HedgeValues,
    expected_ttft_s,
    hedge_value,
    late_after_s,
    late_share,
    ration_share,
)
from routing.core.speed import SpeedBook, SpeedSample, size_line, typical_for_size

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


def _timed(eid, slug, typical, model_typical=None):
    return RouteChoice(endpoint(eid, slug), "r", 0.01, typical, True, model_typical)


@pytest.mark.parametrize(
    ("typical", "model_typical", "trigger", "expected"),
    [
        (0.3, None, "late", 1.0),  # a fast endpoint: the seed's 1 s floor
        (2.0, None, "late", 4.0),  # a long prefill of 2 s is late after 4 s
        (None, 1.5, "late", 3.0),  # no figure of its own: the model's
        (None, None, "late", 1.0),  # nothing known: the floor
        (2.0, None, "flat", 1.0),  # the seed's trigger, kept as a setting
    ],
)
def test_late_after_s(typical, model_typical, trigger, expected):
    choice = _timed(1, "a", typical, model_typical)
    assert late_after_s(choice, floor_s=1.0, factor=2.0, trigger=trigger) == expected


def test_partner_most_likely_to_beat_a_stalled_primary():
    """With expected TTFTs the partner is the first other provider in plan order (the
    cheapest) whose expected TTFT is within 1.5x of the best one's, wherever it stands
    in the plan; not one tried already, not the primary's provider."""
    plan = RoutePlan(
        (_choice(1, "a"), _choice(2, "b"), _choice(3, "c"), _choice(4, "d"), _choice(5, "a/x")),
        "32k-128k",
        "smart",
    )
    expected = {1: 0.5, 2: 3.0, 3: 1.4, 4: 1.0, 5: 0.2}
    assert hedge_partner(plan, plan.choices[0], expected).endpoint_id == 3  # 1.4 <= 1.5
    assert hedge_partner(plan, plan.choices[0], expected, tried=(1, 3)).endpoint_id == 4
    assert hedge_partner(plan, plan.choices[3], expected).endpoint_id == 5  # before it
    assert hedge_partner(plan, plan.choices[0], {2: 3.0}).endpoint_id == 2  # known first


def test_expected_ttft_counts_stalls_and_late_share():
    assert expected_ttft_s((1.0, 1.0, 1.0, 9.0), 1.0) == 3.0
    assert expected_ttft_s((), 1.4) == 1.4
    assert late_share((1.0, 1.0, 1.0, 9.0), 2.0) == 0.25
    assert late_share((), 2.0) == MIN_LATE_SHARE


def test_ration_share_and_hedge_values():
    assert ration_share(1.0, 1.0) == 1.0  # a full burst left: every hedge
    assert ration_share(0.25, 1.0) == 0.5
    assert ration_share(0.0, 1.0) == 0.0
    values = HedgeValues(size=100)
    for value in range(1, 101):
        assert values.admits(float(value), 1.0)
    assert not values.admits(50.0, 0.25)  # the best quarter starts near 76
    assert values.admits(90.0, 0.25)
    assert not values.admits(1000.0, 0.0)


def test_hedge_value_prefers_likely_costly_cheap_hedges():
    assert hedge_value(1.0, 6.0, 0.01) > hedge_value(0.1, 6.0, 0.01)  # late now vs maybe
    assert hedge_value(1.0, 6.0, 0.01) > hedge_value(1.0, 6.0, 0.04)  # a dearer leg


def test_size_line_puts_the_reference_at_the_prompts_size():
    """A window of 32k-128k prompts at 0.6 s + 20 µs per token, one call in ten stalled
    8 s: the line through the halves' medians ignores the stalls, and a 40k prompt's
    reference is ~1.4 s where the window's typical value is ~2.2 s."""
    samples = []
    for i in range(40):
        prompt = 32_000 + i * 2_400
        ttft = 0.6 + prompt / 50_000 + (8.0 if i % 10 == 3 else 0.0)
        samples.append(SpeedSample(float(i), ttft, prompt_tokens=prompt))
    line = size_line(samples)
    assert line is not None
    assert line[1] == pytest.approx(1 / 50_000, rel=0.05)
    assert typical_for_size(2.2, line, 40_000) == pytest.approx(1.4, abs=0.05)
    assert typical_for_size(2.2, line, 400_000) == 4.4  # at most 2x the typical value
    assert size_line(samples[:9]) is None  # too few
    same_size = [SpeedSample(float(i), 1.0 + i / 100, prompt_tokens=64_000) for i in range(20)]
    assert size_line(same_size) is None  # no spread of sizes: no line


def test_summary_reads_the_reference_at_a_size():
    book = SpeedBook()
    for i in range(20):
        prompt = 32_000 + i * 4_800
        book.record(
            1, "32k-128k", SpeedSample(float(i), 0.6 + prompt / 50_000, prompt_tokens=prompt)
        )
    summary = book.summary()
    assert summary.typical_at(1, "32k-128k", 40_000) == pytest.approx(1.4, abs=0.05)
    assert summary.typical_at(1, "32k-128k", 0) == summary.typical(1, "32k-128k")
    assert summary.typical_at(2, "32k-128k", 40_000) is None
