from statistics import median

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core import SpeedBook, SpeedSample, SpeedWindow, summarise, typical_ttft
from routing.core.speed import weighted_median

GOOD_11 = [1.00, 1.02, 1.05, 1.08, 1.10, 1.12, 1.15, 1.18, 1.20, 1.25, 1.30]


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([], None),
        ([2.0], 2.0),
        ([3.0, 1.0], 2.0),
        ([1.0, 9.0, 2.0], 2.0),
        # < 10 samples: plain median, even with slow outliers (4 of 9 at 30 s).
        ([1.0, 1.1, 1.2, 1.3, 1.4, 30, 30, 30, 30], 1.4),
        # 10 samples: the 4 outliers (> 3 x 1.45) weigh 0.25 -> weighted median 1.3.
        ([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 30, 30, 30, 30], 1.3),
        # 12 samples, 4 outliers: plain median 1.55, weighted 1.4.
        ([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 30, 30, 30, 30], 1.4),
        # 12 samples without outliers: the plain median.
        ([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1], 1.55),
    ],
)
def test_typical_ttft_table(samples, expected):
    result = typical_ttft(samples)
    assert result == (None if expected is None else pytest.approx(expected))


def test_one_bad_call_among_twelve_barely_moves_the_typical_value():
    typical_good = typical_ttft(GOOD_11)
    typical_with_bad = typical_ttft([*GOOD_11, 60.0])
    assert typical_with_bad == pytest.approx(median(GOOD_11))
    assert abs(typical_with_bad - typical_good) < 0.05


def test_a_provider_that_really_became_slow_is_slow():
    slow_now = [1.0] * 4 + [12.0] * 8
    assert typical_ttft(slow_now) == pytest.approx(12.0)


@settings(database=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=60))
def test_typical_is_within_the_samples_and_never_above_the_plain_median(samples):
    typical = typical_ttft(samples)
    assert min(samples) <= typical <= max(samples)
    assert typical <= median(samples) + 1e-9


@settings(database=None)
@given(st.lists(st.floats(1.0, 2.9), min_size=10, max_size=60))
def test_without_outliers_typical_is_the_plain_median(samples):
    assert typical_ttft(samples) == pytest.approx(median(samples))


@settings(database=None)
@given(st.lists(st.floats(0.0, 1e3), min_size=1, max_size=40))
def test_weighted_median_with_equal_weights_is_the_median(values):
    ordered = sorted(values)
    assert weighted_median(ordered, [1.0] * len(ordered)) == pytest.approx(median(ordered))


def test_window_keeps_only_the_latest_samples():
    window = SpeedWindow(max_samples=50)
    for index in range(60):
        window.add(SpeedSample(t=float(index), ttft_s=float(index)))
    assert len(window) == 50
    assert window.samples()[0].t == 10.0
    assert window.typical_ttft() == pytest.approx(median(range(10, 60)))


def test_window_drops_samples_older_than_max_age():
    window = SpeedWindow(max_samples=50, max_age_s=100.0)
    window.add(SpeedSample(0.0, 30.0))
    window.add(SpeedSample(50.0, 2.0))
    window.add(SpeedSample(120.0, 1.0), now=120.0)
    assert [sample.t for sample in window.samples()] == [50.0, 120.0]
    assert window.typical_ttft(now=151.0) == 1.0


def test_summarise_counts_and_typicals_per_endpoint_and_bucket():
    summary = summarise(
        {
            (1, "<8k"): [0.5, 0.7, 0.6],
            (1, ">128k"): [SpeedSample(0.0, 30.0), SpeedSample(90.0, 4.0)],
            (2, "<8k"): [],
        },
        {1: 55.0},
        now=100.0,
        max_age_s=60.0,
    )
    assert summary.typical(1, "<8k") == pytest.approx(0.6)
    assert summary.count(1, "<8k") == 3
    assert summary.typical(1, ">128k") == 4.0  # the 30 s sample is too old
    assert summary.count(1, ">128k") == 1
    assert summary.typical(2, "<8k") is None
    assert summary.count(2, "<8k") == 0
    assert summary.throughput(1) == 55.0
    assert summary.throughput(2) is None


def test_speed_book_recomputes_only_what_changed_and_expires():
    book = SpeedBook(window_size=50, max_age_s=300.0)
    for t in range(5):
        book.record(1, "32k-128k", SpeedSample(float(t), 15.0))
    book.record_throughput(1, 40.0)
    first = book.summary(now=10.0)
    assert first.typical(1, "32k-128k") == 15.0
    assert first.throughput(1) == 40.0
    assert book.summary(now=10.0) is first  # nothing changed: same summary object
    book.record(1, "32k-128k", SpeedSample(250.0, 2.0))
    assert book.summary(now=250.0).typical(1, "32k-128k") == 15.0
    expired = book.summary(now=305.0)  # the five 15 s samples are now > 300 s old
    assert expired.typical(1, "32k-128k") == 2.0
    assert expired.count(1, "32k-128k") == 1
