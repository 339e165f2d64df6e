"""Concurrency caps learnt from 429s (O3, issue 10): spill over before the provider
refuses."""

from __future__ import annotations

from routing.core.capacity import ConcurrencyCaps

from .factories import endpoint, features, ids, plan, speed


def test_a_429_sets_the_cap_below_what_was_in_flight():
    caps = ConcurrencyCaps()
    assert caps.cap(7, now=0.0) is None
    assert caps.refused(7, inflight=6, now=0.0) == 6 * 0.9
    assert caps.full_ids({7: 6}, now=1.0) == {7}
    assert caps.full_ids({7: 5}, now=1.0) == frozenset()


def test_successes_let_the_cap_creep_back_up():
    caps = ConcurrencyCaps()
    caps.refused(7, inflight=6, now=0.0)
    for _ in range(13):
        caps.served(7)
    assert caps.full_ids({7: 6}, now=1.0) == frozenset()  # 5.4 + 13 x 0.05 > 6
    caps.served(8)  # no cap there: nothing learnt from a success
    assert caps.cap(8, now=1.0) is None


def test_a_cap_is_at_least_one_call_and_is_forgotten():
    caps = ConcurrencyCaps(forget_after_s=600)
    assert caps.refused(7, inflight=0, now=0.0) == 1.0
    assert caps.full_ids({7: 1}, now=600.0) == {7}
    assert caps.full_ids({7: 1}, now=601.0) == frozenset()
    assert caps.cap(7, now=601.0) is None


def test_a_full_endpoint_spills_over_to_the_next_choice():
    cheap, dear = endpoint(1, "capped", price_input=0.1), endpoint(2, "roomy", price_input=0.2)
    summary = speed({1: 0.5, 2: 0.5})
    assert ids(plan([cheap, dear], summary, request=features()))[0] == 1
    caps = ConcurrencyCaps()
    caps.refused(1, inflight=4, now=0.0)
    full = caps.full_ids({1: 4, 2: 0}, now=1.0)
    route = plan([cheap, dear], summary, request=features(), unusable=full)
    assert ids(route) == [2, 1]  # still a last resort, not gone
