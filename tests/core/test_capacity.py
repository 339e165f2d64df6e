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


def test_the_cap_rises_again_as_the_429s_stop():
    caps = ConcurrencyCaps()  # one more call every 15 s without a 429
    caps.refused(7, inflight=20, now=0.0)
    assert caps.full_ids({7: 18}, now=0.0) == {7}  # 18: full
    assert caps.full_ids({7: 18}, now=1.0) == frozenset()  # 18.07: room for the 19th
    assert caps.full_ids({7: 19}, now=10.0) == {7}  # 18.67
    assert caps.full_ids({7: 19}, now=20.0) == frozenset()  # 19.33: room for one more
    assert caps.cap(7, now=30.0) == 20.0
    caps.refused(7, inflight=20, now=30.0)  # the next 429 sets it again
    assert caps.cap(7, now=30.0) == 18.0
    assert caps.cap(8, now=1.0) is None  # no 429 there: no cap


def test_a_retry_after_holds_the_endpoint_full_without_a_mark():
    caps = ConcurrencyCaps()
    caps.refused(7, inflight=10, now=0.0, retry_after_s=5.0)
    assert caps.full_ids({7: 0}, now=4.9) == {7}  # nothing in flight, still held
    assert caps.full_ids({7: 0}, now=5.0) == frozenset()
    caps.refused(7, inflight=10, now=10.0, retry_after_s=3_600.0)
    assert caps.full_ids({7: 0}, now=69.9) == {7}  # at most a minute
    assert caps.full_ids({7: 0}, now=70.0) == frozenset()


def test_a_cap_is_at_least_one_call_and_is_forgotten():
    caps = ConcurrencyCaps(forget_after_s=600)
    assert caps.refused(7, inflight=0, now=0.0) == 1.0
    assert caps.full_ids({7: 1}, now=0.0) == {7}
    assert caps.cap(7, now=600.0) == 41.0  # risen by one call every 15 s
    assert caps.full_ids({7: 50}, now=601.0) == frozenset()
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
