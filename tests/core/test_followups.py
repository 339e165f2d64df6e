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
