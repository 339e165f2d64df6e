""" "Fast enough" is judged against the fastest measured endpoint, marked ones included
(issue 10, weakness 3)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core.smart import FASTEST_USABLE

from .factories import endpoint, features, ids, plan, reasons, speed

SLOW_CHEAP = endpoint(1, "slowcheap", price_input=0.1)
MIDDLE = endpoint(2, "middle", price_input=0.2)
FAST = endpoint(3, "fast", price_input=0.3)
LONG = features(prompt=100_000)
BUCKET = "32k-128k"


def test_an_outage_of_the_fastest_does_not_make_a_slow_one_fast_enough():
    summary = speed({1: 15.0, 2: 6.0, 3: 2.0}, bucket=BUCKET)
    route = plan([SLOW_CHEAP, MIDDLE, FAST], summary, request=LONG, unusable=frozenset({3}))
    # among the usable ones only, middle (6 s) would be the fastest and so "fast
    # enough"; against the marked one (2 s) neither is: the fastest usable goes first.
    assert ids(route) == [2, 1, 3]
    assert reasons(route)[0] == FASTEST_USABLE
    assert not route.first.fast_enough


def test_when_the_fastest_is_back_it_is_chosen_again():
    summary = speed({1: 15.0, 2: 6.0, 3: 2.0}, bucket=BUCKET)
    route = plan([SLOW_CHEAP, MIDDLE, FAST], summary, request=LONG)
    assert ids(route)[0] == 3 and route.first.fast_enough


def test_a_usable_endpoint_within_2x_of_a_marked_fastest_is_still_fast_enough():
    summary = speed({1: 15.0, 2: 3.5, 3: 2.0}, bucket=BUCKET)
    route = plan([SLOW_CHEAP, MIDDLE, FAST], summary, request=LONG, unusable=frozenset({3}))
    assert ids(route)[0] == 2 and route.first.fast_enough


@settings(database=None, max_examples=300)
@given(
    ttfts=st.lists(st.floats(0.2, 60.0), min_size=2, max_size=6),
    marked=st.sets(st.integers(1, 6), max_size=3),
)
def test_marking_an_endpoint_never_makes_another_one_fast_enough(ttfts, marked):
    endpoints = [endpoint(i + 1, price_input=0.1 * (i + 1)) for i in range(len(ttfts))]
    summary = speed({i + 1: t for i, t in enumerate(ttfts)}, bucket=BUCKET)
    before = plan(endpoints, summary, request=LONG)
    after = plan(endpoints, summary, request=LONG, unusable=frozenset(marked))
    fast_before = {c.endpoint_id for c in before.choices if c.fast_enough}
    fast_after = {c.endpoint_id for c in after.choices if c.fast_enough}
    assert fast_after <= fast_before
