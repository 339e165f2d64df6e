"""Per-provider reply length (issue 10): a provider whose replies run longer bills more
output for the same request; routing prices each endpoint with its learnt factor."""

from __future__ import annotations

from dataclasses import replace

import pytest

from routing.core import OutputLengths

from .factories import endpoint, features, ids, plan, speed

MODEL = "m"


def test_a_factor_needs_enough_calls_and_a_real_difference() -> None:
    lengths = OutputLengths(min_calls=50, threshold=0.3)
    for _ in range(49):
        lengths.observe(MODEL, 1, 300)  # rambles
        lengths.observe(MODEL, 2, 100)
        lengths.observe(MODEL, 3, 110)  # within noise of 2
    assert lengths.factors(MODEL) == {}  # 49 calls each: not yet
    for endpoint_id, served in ((1, 300), (2, 100), (3, 110)):
        lengths.observe(MODEL, endpoint_id, served)
    # Against the model's average (170): 1.76 and 0.59, 0.65; the ratio between is 3x.
    factors = lengths.factors(MODEL)
    assert set(factors) == {1, 2, 3}
    assert factors[1] / factors[2] == pytest.approx(3.0)
    assert lengths.factors("other-model") == {}


def test_equal_lengths_give_no_factor_and_the_first_calls_do_not_weigh_more() -> None:
    lengths = OutputLengths(min_calls=1, threshold=0.3)
    lengths.observe(MODEL, 1, 1000)  # one very long reply first
    for _ in range(99):
        lengths.observe(MODEL, 1, 100)
        lengths.observe(MODEL, 2, 100)
    assert lengths.factors(MODEL) == {}


def test_a_rambling_provider_is_priced_with_its_factor() -> None:
    # Output dominates a short prompt: the rambler is cheapest per token, dearest per reply.
    rambler = endpoint(1, "rambler", price_input=0.1, output=1.0)
    steady = endpoint(2, "steady", price_input=0.1, output=1.5)
    fast_both = speed({1: 0.5, 2: 0.5})
    request = features(prompt=500, output=400)
    assert ids(plan([rambler, steady], fast_both, request=request))[0] == 1
    learnt = replace(request, output_factors={1: 3.0})
    chosen = plan([rambler, steady], fast_both, request=learnt)
    assert ids(chosen)[0] == 2
    assert chosen.choices[1].expected_cost_usd > chosen.choices[0].expected_cost_usd
