"""Exploration revisits stale speed data, not only thin data (issue 10, weakness 4)."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core import SpeedBook, SpeedSample, SpeedSummary, summarise
from routing.core.smart import EXPLORATION

from .factories import endpoint, ids, plan, reasons

CHEAP = endpoint(1, "cheap", price_input=0.1)
OTHER = endpoint(2, "other", price_input=0.2)
SHORT = "<8k"


def test_a_window_without_a_recent_sample_is_stale():
    book = SpeedBook(stale_after_s=600.0)
    book.record(1, SHORT, SpeedSample(0.0, 2.0))
    book.record(2, SHORT, SpeedSample(500.0, 1.0))
    assert book.summary(now=650.0).stale_keys == frozenset({(1, SHORT)})
    assert book.summary(now=1_200.0).stale_keys == frozenset({(1, SHORT), (2, SHORT)})
    book.record(1, SHORT, SpeedSample(1_201.0, 0.5))  # explored: fresh again at once
    assert (1, SHORT) not in book.summary().stale_keys


def test_a_sample_after_a_long_silence_restarts_the_window():
    book = SpeedBook(stale_after_s=600.0)
    for t in range(20):
        book.record(2, SHORT, SpeedSample(float(t), 2.0))  # it was slow, hours ago
    book.record(2, SHORT, SpeedSample(5_000.0, 0.4))  # it got faster
    summary = book.summary(now=5_000.0)
    assert summary.count(2, SHORT) == 1 and summary.typical(2, SHORT) == 0.4


def test_without_a_stale_age_nothing_is_stale_or_restarted():
    book = SpeedBook()
    book.record(1, SHORT, SpeedSample(0.0, 2.0))
    book.record(1, SHORT, SpeedSample(10_000.0, 1.0))
    summary = book.summary(now=20_000.0)
    assert summary.stale_keys == frozenset() and summary.count(1, SHORT) == 2


def test_summarise_marks_old_keys_stale():
    samples = {(1, SHORT): [SpeedSample(0.0, 1.0)], (2, SHORT): [SpeedSample(900.0, 1.0)]}
    summary = summarise(samples, now=1_000.0, stale_after_s=600.0)
    assert summary.stale_keys == frozenset({(1, SHORT)})
    assert summary.newest(2, SHORT) == 900.0


def _summary(stale: frozenset, cheap_s: float = 0.5, other_s: float = 3.0) -> SpeedSummary:
    keys = [(1, SHORT), (2, SHORT)]
    typical = {(1, SHORT): cheap_s, (2, SHORT): other_s}
    return SpeedSummary(typical, dict.fromkeys(keys, 20), {}, {}, stale)


def test_a_stale_cheaper_endpoint_gets_its_share_of_exploration():
    rng = random.Random(3)
    # the cheap one is too slow (3 s vs 0.5 s): traffic goes to the dearer one, and the
    # cheap one's stale data is revisited, in case it got fast enough to take it
    summary = _summary(frozenset({(1, SHORT)}), cheap_s=3.0, other_s=0.5)
    firsts = Counter(
        reasons(plan([CHEAP, OTHER], summary, rng=rng, exploration_rate=0.05))[0]
        for _ in range(2_000)
    )
    assert 50 <= firsts[EXPLORATION] <= 150  # ~5%


def test_a_stale_dearer_endpoint_is_not_explored():
    """Getting faster would not bring it traffic (R2.5 picks the cheaper fast one): its
    exploration would only cost the customer (probes by need stop probing it)."""
    rng = random.Random(3)
    summary = _summary(frozenset({(2, SHORT)}))
    for _ in range(1_000):
        assert ids(plan([CHEAP, OTHER], summary, rng=rng, exploration_rate=0.05))[0] == 1


def test_a_thin_dearer_endpoint_is_still_explored():
    rng = random.Random(3)
    summary = SpeedSummary({(1, SHORT): 0.5, (2, SHORT): 3.0}, {(1, SHORT): 20, (2, SHORT): 1})
    firsts = Counter(
        reasons(plan([CHEAP, OTHER], summary, rng=rng, exploration_rate=0.05))[0]
        for _ in range(2_000)
    )
    assert 50 <= firsts[EXPLORATION] <= 150  # R2.6: too little data


def test_fresh_data_is_not_explored():
    rng = random.Random(3)
    for _ in range(300):
        route = plan([CHEAP, OTHER], _summary(frozenset()), rng=rng, exploration_rate=0.05)
        assert ids(route)[0] == 1


@settings(database=None, max_examples=100)
@given(times=st.lists(st.floats(0, 10_000), min_size=1, max_size=30), now=st.floats(0, 20_000))
def test_stale_keys_are_exactly_the_windows_with_an_old_newest_sample(times, now):
    book = SpeedBook(stale_after_s=600.0)
    for t in sorted(times):
        book.record(1, SHORT, SpeedSample(t, 1.0))
    stale = (1, SHORT) in book.summary(now=now).stale_keys
    assert stale == (now - max(times) > 600.0)
