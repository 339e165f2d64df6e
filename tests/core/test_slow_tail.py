"""The slow tail in R2.4 (issue 10: the >128k p90 regression): a provider that stalls on
13% of calls has a fine median (R2.2 ignores the stalls by design) and a bad p90.
``SmartTuning.tail_weight`` adds the p90 to what "fast enough" compares."""

from __future__ import annotations

from dataclasses import replace

from routing.core import SmartTuning, SpeedBook, SpeedSample, SpeedSummary
from routing.core.speed import slow_tail

from .factories import endpoint, features, ids, plan, speed

STALLER = endpoint(1, "staller", price_input=0.09)
STEADY = endpoint(2, "steady", price_input=0.2)
SLOW = endpoint(3, "slow", price_input=0.05)
LONG = features(prompt=150_000)
BUCKET = ">128k"
TAIL_ON = SmartTuning(tail_weight=1.0)


def with_tails(summary: SpeedSummary, tails: dict[int, float]) -> SpeedSummary:
    return replace(summary, tail_by_key={(eid, BUCKET): t for eid, t in tails.items()})


def test_slow_tail_is_the_p90_above_the_typical_value():
    # 87 calls of 3 s and 13 stalls of 13 s: the median is 3 s, the p90 a stall
    ttfts = [3.0] * 87 + [13.0] * 13
    assert slow_tail(ttfts) == 10.0
    assert slow_tail([3.0] * 100) == 0.0
    assert slow_tail([3.0, 30.0]) == 0.0  # too few samples to speak of a tail


def test_the_speed_book_and_summarise_carry_the_tail():
    book = SpeedBook()
    for i, ttft in enumerate([3.0] * 17 + [13.0] * 3):
        book.record(1, BUCKET, SpeedSample(float(i), ttft))
    assert book.summary().tail(1, BUCKET) == 10.0
    assert book.summary().tail(2, BUCKET) == 0.0


def test_off_by_default_the_staller_is_cheapest_fast_enough():
    summary = with_tails(speed({1: 3.3, 2: 2.8}, bucket=BUCKET), {1: 7.0, 2: 0.7})
    assert ids(plan([STALLER, STEADY], summary, request=LONG))[0] == 1


def test_with_the_tail_the_staller_is_not_fast_enough():
    summary = with_tails(speed({1: 3.3, 2: 2.8}, bucket=BUCKET), {1: 7.0, 2: 0.7})
    route = plan([STALLER, STEADY], summary, request=LONG, tuning=TAIL_ON)
    assert ids(route)[0] == 2
    assert not next(c for c in route.choices if c.endpoint_id == 1).fast_enough


def test_the_fastest_endpoints_tail_never_lets_a_slow_one_in():
    # steady's own tail (5 s) would put the band at 2 x 7.8 s; slow (9 s median, no
    # tail) stays too slow: the tail can only exclude
    summary = with_tails(speed({2: 2.8, 3: 9.0}, bucket=BUCKET), {2: 5.0})
    route = plan([STEADY, SLOW], summary, request=LONG, tuning=TAIL_ON)
    assert ids(route)[0] == 2
    assert not next(c for c in route.choices if c.endpoint_id == 3).fast_enough
