"""bench_memory's report: the samples, their differences, and the growth per minute
after the first minute (lab/benchmark/memory.py)."""

from __future__ import annotations

from lab.benchmark.memory import Sample, render


def test_the_report_gives_the_growth_after_the_first_minute() -> None:
    samples = [
        Sample(0, 100.0),
        Sample(30, 140.0),
        Sample(60, 150.0),
        Sample(120, 153.0),
        Sample(180, 156.0),
    ]
    text = render(
        {
            "samples": samples,
            "requests_per_s": 500.0,
            "completed": 90_000,
            "errors": {},
            "cpu_ms_per_request": 1.25,
        }
    )
    lines = text.splitlines()
    assert lines[2].split() == ["30", "140.0", "+40.0"]
    # 150 -> 156 MB over the two minutes after the first: +3 a minute (the first minute's
    # +50, the caches filling, is left out)
    assert "growth after the first minute: +3.0 MB a minute (150.0 -> 156.0 MB)" in text
    assert "90000 requests, 500 a second, CPU 1.25 ms a request, errors none" in text


def test_a_run_of_under_a_minute_reports_no_growth_rate() -> None:
    samples = [Sample(0, 100.0), Sample(15, 110.0)]
    text = render(
        {
            "samples": samples,
            "requests_per_s": None,
            "completed": 0,
            "errors": {"refused": 3},
            "cpu_ms_per_request": None,
        }
    )
    assert "growth after" not in text
    assert "0 requests, 0 a second, CPU n/a, errors {'refused': 3}" in text
