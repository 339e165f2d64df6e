"""OpenRouter's preferred_max_latency / preferred_min_throughput (deprioritise, never
exclude) and the data policy filters (data_collection: "deny", zdr)."""

from dataclasses import replace

import pytest

from routing.core import RoutingError, RoutingOptions, SpeedBook, SpeedSample
from routing.core.preferences import latency_s

from .factories import endpoint, features, ids, plan, reasons

CHEAP = endpoint(1, "cheap", price_input=0.1, output=0.4)  # stalls on 2 calls in 10
STEADY = endpoint(2, "steady", price_input=0.2, output=0.6)
DEAR = endpoint(3, "dear", price_input=0.3, output=0.9)


def book(ttfts: dict[int, list[float]], speeds: dict[int, list[float]] | None = None):
    """A real SpeedBook fed these samples (seconds) in the <8k bucket."""
    speed_book = SpeedBook()
    for endpoint_id, values in ttfts.items():
        for t, ttft in enumerate(values):
            speed_book.record(endpoint_id, "<8k", SpeedSample(float(t), ttft))
    for endpoint_id, values in (speeds or {}).items():
        for tokens_per_s in values:
            speed_book.record_throughput(endpoint_id, tokens_per_s)
    return speed_book.summary()


STALLING = [0.4] * 8 + [6.0, 7.0]  # typical 0.4 s, p90 7 s
STEADY_TTFT = [0.6] * 9 + [0.8]  # typical 0.6 s, p90 0.8 s
SPEED = book({1: STALLING, 2: STEADY_TTFT, 3: [0.5] * 10})


def options(**preferences) -> RoutingOptions:
    return RoutingOptions.from_request(preferences)


def test_without_preferences_the_cheapest_fast_enough_goes_first():
    assert ids(plan([CHEAP, STEADY, DEAR], SPEED)) == [1, 2, 3]


def test_p90_cutoff_moves_a_stalling_endpoint_back_without_excluding_it():
    route = plan([CHEAP, STEADY, DEAR], SPEED, options=options(preferred_max_latency={"p90": 2}))
    assert ids(route) == [2, 3, 1]
    assert reasons(route)[0].startswith("preferred performance: ")
    assert reasons(route)[2].endswith("(misses preferred latency p90)")


def test_a_number_is_a_p50_cutoff():
    slow = book({1: [1.0] * 10, 2: STEADY_TTFT})  # cheap: fast enough, yet 1 s
    assert ids(plan([CHEAP, STEADY], slow, options=options(preferred_max_latency=0.8))) == [2, 1]
    assert ids(plan([CHEAP, STEADY], slow, options=options(preferred_max_latency=2))) == [1, 2]


def test_every_endpoint_missing_keeps_the_plan_order():
    route = plan([CHEAP, STEADY], SPEED, options=options(preferred_max_latency={"p50": 0.1}))
    assert ids(route) == [1, 2]
    assert all("misses preferred latency p50" in reason for reason in reasons(route))


def test_an_endpoint_without_data_is_not_judged():
    measured_slow = book({2: [3.0] * 10})
    route = plan([CHEAP, STEADY], measured_slow, options=options(preferred_max_latency=1))
    assert ids(route)[-1] == 2 and 1 in ids(route)


def test_min_throughput_p50_and_low_quantile():
    speeds = {1: [20.0] * 10, 2: [80.0] * 8 + [5.0, 5.0], 3: [60.0] * 10}
    summary = book({1: [0.5] * 10, 2: [0.5] * 10, 3: [0.5] * 10}, speeds)
    at_p50 = plan([CHEAP, STEADY, DEAR], summary, options=options(preferred_min_throughput=50))
    assert ids(at_p50) == [2, 3, 1]
    at_p90 = options(preferred_min_throughput={"p50": 50, "p90": 50})
    # steady's p50 is 80 tok/s but one call in five crawls at 5: its p90 misses
    assert ids(plan([CHEAP, STEADY, DEAR], summary, options=at_p90)) == [3, 1, 2]


def test_every_cutoff_must_hold():
    both = options(preferred_max_latency={"p50": 1, "p90": 2})
    assert ids(plan([CHEAP, STEADY], SPEED, options=both)) == [2, 1]


def test_the_customers_order_stays_first():
    ordered = replace(options(preferred_max_latency={"p90": 2}), order=("cheap",))
    assert ids(plan([CHEAP, STEADY, DEAR], SPEED, options=ordered))[0] == 1


def test_marked_endpoints_stay_last_resorts():
    preferring = options(preferred_max_latency={"p90": 2})
    route = plan([CHEAP, STEADY, DEAR], SPEED, options=preferring, unusable=frozenset({3}))
    assert ids(route) == [2, 1, 3]


def test_the_p90_of_a_cached_turn_comes_from_the_cached_window():
    speed_book = SpeedBook()
    for t in range(10):
        speed_book.record(1, "<8k", SpeedSample(float(t), 4.0))  # uncached: slow
        speed_book.record(1, "<8k", SpeedSample(float(t), 0.2, cached=True))
    summary = speed_book.summary()
    cached_turn = features(prompt=5_000, cached={1: 5_000})
    preferring = options(preferred_max_latency={"p90": 1})
    route = plan([CHEAP, STEADY], summary, request=cached_turn, options=preferring)
    assert ids(route)[0] == 1
    first = plan([CHEAP, STEADY], summary, options=preferring)
    assert ids(first)[0] == 2  # the same endpoint, uncached: 4 s


def test_latency_percentiles_scale_to_the_requests_estimate():
    class Probe:
        prior, typical, cached_here, endpoint_id = False, 0.8, False, 2

    assert latency_s(Probe(), "p50", SPEED, "<8k") == 0.8
    assert latency_s(Probe(), "p90", SPEED, "<8k") == pytest.approx(0.8 * 0.8 / 0.6)


# --- data policy ---------------------------------------------------------------------
KEEPS = replace(CHEAP, collects_data=True)
PRIVATE = replace(STEADY, collects_data=False)
ZERO = replace(DEAR, collects_data=False, zdr=True)


def test_data_collection_deny_never_plans_an_endpoint_that_keeps_data():
    deny = options(data_collection="deny")
    assert ids(plan([KEEPS, PRIVATE, ZERO], SPEED, options=deny)) == [2, 3]
    # not even as a last resort when the others are marked unusable
    marked = plan([KEEPS, PRIVATE, ZERO], SPEED, options=deny, unusable=frozenset({2, 3}))
    assert 1 not in ids(marked)


def test_zdr_plans_only_zero_retention_endpoints():
    assert ids(plan([KEEPS, PRIVATE, ZERO], SPEED, options=options(zdr=True))) == [3]


def test_no_endpoint_meeting_the_data_policy_is_a_404():
    with pytest.raises(RoutingError) as caught:
        plan([KEEPS, PRIVATE], SPEED, options=options(zdr=True, data_collection="deny"))
    assert (caught.value.status, caught.value.code) == (404, "data_policy")
    assert "zdr: true" in caught.value.message


def test_an_endpoint_of_unknown_policy_counts_as_keeping_data():
    assert endpoint(9).collects_data and not endpoint(9).zdr
