"""The gateway's resident memory over a sustained unpaced load (``manage.py bench_memory``).

A gateway (uvicorn, the production settings, the benchmark's emulator upstream) serves
``concurrency`` clients back to back for ``duration`` seconds; its RSS (all its
processes) is read every ``every`` seconds while they run. What grows here and stays is
memory a long-lived worker keeps: docs/benchmarks.md, round 15.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .procs import cpu_seconds, rss_bytes, tree_pids
from .run import UBERLLM, UNPACED, Bench, Options

MB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    at_s: float  # seconds since the load started
    rss_mb: float  # the gateway's resident memory, all its processes


def measure(
    base_dir: Path,
    duration: float,
    every: float,
    concurrency: int,
    workers: int,
    database_url: str | None,
    log: Callable[[str], None],
) -> dict:
    """Samples of the gateway's RSS under load, and the load's own figures."""
    options = Options(
        duration=duration,
        warmup=1.0,
        concurrency=[concurrency],
        modes=[UNPACED],
        workers=workers,
        idle_s=0,
        database_url=database_url,
        log=log,
    )
    bench = Bench(options, base_dir)
    try:
        bench.start()
        bench.set_mode(UNPACED)
        pids = tree_pids(bench.procs[UBERLLM].pid)
        outcome: dict = {}
        load = threading.Thread(target=lambda: outcome.update(bench.cell(UBERLLM, concurrency)))
        cpu_before, started = cpu_seconds(pids), time.monotonic()
        samples = [Sample(0.0, rss_bytes(pids) / MB)]
        load.start()
        while load.is_alive():
            load.join(every)
            if load.is_alive():
                samples.append(Sample(time.monotonic() - started, rss_bytes(pids) / MB))
        cpu = cpu_seconds(pids) - cpu_before
    finally:
        bench.stop()
    completed = outcome.get("completed", 0)
    return {
        "samples": samples,
        "requests_per_s": outcome.get("rps"),
        "completed": completed,
        "errors": outcome.get("errors", {}),
        "cpu_ms_per_request": 1000 * cpu / completed if completed else None,
    }


def render(result: dict) -> str:
    samples: list[Sample] = result["samples"]
    lines = ["  at s   RSS MB   +MB since the previous"]
    previous = None
    for sample in samples:
        delta = "" if previous is None else f"{sample.rss_mb - previous:+8.1f}"
        lines.append(f"{sample.at_s:6.0f} {sample.rss_mb:8.1f} {delta}")
        previous = sample.rss_mb
    after_first_minute = [s for s in samples if s.at_s >= 60]
    if len(after_first_minute) >= 2:
        first, last = after_first_minute[0], after_first_minute[-1]
        minutes = (last.at_s - first.at_s) / 60
        per_minute = (last.rss_mb - first.rss_mb) / minutes
        lines.append(
            f"growth after the first minute: {per_minute:+.1f} MB a minute "
            f"({first.rss_mb:.1f} -> {last.rss_mb:.1f} MB)"
        )
    cpu = result["cpu_ms_per_request"]
    lines.append(
        f"{result['completed']} requests, {result['requests_per_s'] or 0:.0f} a second, "
        f"CPU {'n/a' if cpu is None else f'{cpu:.2f} ms a request'}, "
        f"errors {result['errors'] or 'none'}"
    )
    return "\n".join(lines) + "\n"
