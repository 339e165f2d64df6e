import pytest

from routing.core import UnusableMarks
from routing.core.marks import unusable_window

from .factories import endpoint, ids, plan, speed


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_marked_endpoint_is_unusable_for_the_window_then_usable():
    clock = FakeClock(1_000.0)
    marks = UnusableMarks(clock, first_window_s=900.0)
    marks.mark(7)
    clock.now = 1_899.0
    assert not marks.is_usable(7)
    assert marks.unusable_ids() == frozenset({7})
    assert marks.usable_ids([5, 7]) == frozenset({5})
    clock.now = 1_900.0
    assert marks.is_usable(7)
    assert marks.unusable_ids() == frozenset()


def test_explicit_now_and_window():
    marks = UnusableMarks()
    assert marks.mark(1, now=10.0, window_s=60.0) == 70.0
    assert not marks.is_usable(1, now=69.9)
    assert marks.is_usable(1, now=70.0)


def test_a_new_mark_never_shortens_an_existing_one():
    marks = UnusableMarks()
    marks.mark(1, now=0.0, window_s=900.0)
    marks.mark(1, now=10.0, window_s=60.0)
    assert not marks.is_usable(1, now=500.0)


def test_clear_forgets_a_mark():
    marks = UnusableMarks()
    marks.mark(1, now=0.0)
    marks.clear(1)
    assert marks.is_usable(1, now=1.0)


def test_without_clock_or_now_it_refuses():
    with pytest.raises(ValueError, match="clock"):
        UnusableMarks().is_usable(1)


def test_unusable_endpoint_is_skipped_and_comes_back_after_fifteen_minutes():
    clock = FakeClock(0.0)
    marks = UnusableMarks(clock, first_window_s=900.0)
    cheap_fast = endpoint(1, price_input=0.1)
    other = endpoint(2, price_input=0.2)
    speeds = speed({1: 1.0, 2: 1.2})
    assert ids(plan([cheap_fast, other], speeds, unusable=marks.unusable_ids())) == [1, 2]

    marks.mark(1)  # it refused a call
    clock.now = 600.0
    during = plan([cheap_fast, other], speeds, unusable=marks.unusable_ids())
    assert ids(during) == [2, 1]
    assert during.choices[1].reason.startswith("last resort")
    assert not during.choices[1].fast_enough

    clock.now = 900.0
    assert ids(plan([cheap_fast, other], speeds, unusable=marks.unusable_ids())) == [1, 2]


def test_window_doubles_with_consecutive_refusals_up_to_fifteen_minutes():
    assert [unusable_window(n, 30.0, 900.0) for n in (1, 2, 3, 4, 5, 6, 9)] == [
        30.0,
        60.0,
        120.0,
        240.0,
        480.0,
        900.0,
        900.0,
    ]
    clock = FakeClock(0.0)
    marks = UnusableMarks(clock)
    assert marks.mark(3) == 30.0
    clock.now = 30.0
    assert marks.is_usable(3)
    assert marks.mark(3) == 90.0  # refused again: 60 s this time


def test_a_served_call_ends_the_streak():
    marks = UnusableMarks(first_window_s=30.0)
    marks.mark(3, now=0.0)
    marks.mark(3, now=40.0)
    marks.record_success(3)
    assert marks.mark(3, now=200.0) == 230.0


def test_a_refusal_streak_of_any_length_keeps_the_longest_window():
    """Round 13: ``first * 2 ** (strikes - 1)`` overflowed a float after 1,025 refusals in
    a row (a single-provider model through a long outage at volume), and every failure
    after that raised OverflowError in the call."""
    assert unusable_window(1_025, 30.0, 900.0) == 900.0
    assert unusable_window(10**6, 30.0, 900.0) == 900.0
    marks = UnusableMarks(first_window_s=30.0)
    for _ in range(1_100):
        until = marks.mark(3, now=0.0)
    assert until == 900.0


def test_after_a_mark_traffic_returns_gradually():
    from routing.core.marks import RAMP_S, ramp_limit

    marks = UnusableMarks(first_window_s=30.0)
    marks.mark(5, now=0.0)
    assert marks.returning(now=10.0) == {}  # still marked: no ramp yet
    assert 5 not in marks.unusable_ids(now=30.0)
    assert marks.returning(now=30.0) == {5: 1.0}  # one call in flight first
    assert marks.returning(now=36.0) == {5: 4.0}  # then doubling
    assert marks.returning(now=30.0 + RAMP_S) == {}  # its whole share again
    assert ramp_limit(-1.0) == float("inf")
    marks.mark(5, now=70.0)  # marked again: no ramp until it ends
    assert marks.returning(now=71.0) == {}
