"""Expected follow-up turns learnt from the conversations seen (issue 10)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core.followups import FollowupEstimator


def test_without_observations_the_configured_minimum():
    assert FollowupEstimator(minimum=2.0).expected("m") == 2.0


def test_short_conversations_never_go_below_the_minimum():
    estimator = FollowupEstimator(minimum=2.0)
    for _ in range(500):
        estimator.observe("m", 1)
    assert estimator.expected("m") == 2.0


def test_the_estimate_is_the_mean_number_of_turns_still_to_come():
    rng = random.Random(1)
    estimator, remaining = FollowupEstimator(minimum=0.0, weight=0.001), []
    for _ in range(3_000):  # conversations of 6..25 turns, every turn seen in order
        turns = rng.randint(6, 25)
        for index in range(turns):
            estimator.observe("m", index)
            remaining.append(turns - 1 - index)
    truth = sum(remaining) / len(remaining)
    assert estimator.expected("m") == pytest.approx(truth, rel=0.15)


@settings(database=None)
@given(st.lists(st.integers(0, 200), max_size=100), st.floats(0.0, 5.0))
def test_never_below_the_minimum_nor_above_the_largest_index(indexes, minimum):
    estimator = FollowupEstimator(minimum=minimum)
    for index in indexes:
        estimator.observe("m", index)
    assert minimum <= estimator.expected("m") <= max([minimum, *indexes])


def _starts(estimator: FollowupEstimator, key, conversations: int, singles: int) -> None:
    for _ in range(conversations):  # a first turn, then its second (later turns ignored)
        for turn in (0, 1, 2):
            estimator.observe_start(key, turn)
    for _ in range(singles):
        estimator.observe_start(key, 0)


def test_a_first_turn_is_priced_with_its_customers_share_of_continued_first_turns():
    estimator = FollowupEstimator(minimum=2.0)
    agent, batch, mixed = ("m", 1, "32k-128k"), ("m", 2, "32k-128k"), ("m", 3, "32k-128k")
    _starts(estimator, agent, conversations=40, singles=0)
    _starts(estimator, batch, conversations=0, singles=40)
    for _ in range(20):  # interleaved: the counts decay alike
        _starts(estimator, mixed, conversations=1, singles=1)
    assert estimator.continued_share(agent) == pytest.approx(1.0)
    assert estimator.continued_share(batch) == 0.0
    assert estimator.continued_share(mixed) == pytest.approx(0.5, abs=0.05)
    assert estimator.expected_first("m", agent) == pytest.approx(estimator.expected("m"))
    assert estimator.expected_first("m", batch) == 0.0
    assert estimator.continued_share(("m", 1, "<8k")) == 0.0  # another size: no data


def test_the_share_follows_a_customer_that_changes():
    estimator, key = FollowupEstimator(), ("m", 1, "<8k")
    _starts(estimator, key, conversations=300, singles=0)
    _starts(estimator, key, conversations=0, singles=300)
    assert estimator.continued_share(key) < 0.1


def test_the_oldest_keys_go_when_the_bound_is_reached():
    estimator = FollowupEstimator(max_starts=3)
    for customer in range(5):
        _starts(estimator, ("m", customer, "<8k"), conversations=2, singles=0)
    kept = [c for c in range(5) if estimator.continued_share(("m", c, "<8k"))]
    assert kept == [2, 3, 4]
