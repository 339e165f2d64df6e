"""Many independent simulations (scenario x seed) in a process pool (``--pareto``, ``--r8``).

Each job is one ``simulate()`` call, so its document depends only on its own (scenario,
strategies, seed, requests): the pool changes the wall time, never the numbers, and the
documents come back in the jobs' order whatever order the workers finish in. Progress
(one line per finished job, with its wall time) goes to ``err``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TextIO

from .run import simulate
from .scenario import Scenario

Document = dict[str, Any]


@dataclass(frozen=True)
class Job:
    """One simulation: every strategy of ``strategies`` on one scenario and one seed."""

    scenario: Scenario
    seed: int
    requests: int | None
    strategies: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.scenario.name} seed {self.seed}"


def run_job(job: Job) -> tuple[Document, float]:
    """(the ``simulate()`` document, wall seconds it took). A pool worker's entry point."""
    started = time.perf_counter()
    document, _ = simulate(job.scenario, list(job.strategies), seed=job.seed, requests=job.requests)
    return document, time.perf_counter() - started


def run_jobs(jobs: Sequence[Job], workers: int, err: TextIO | None = None) -> list[Document]:
    """The documents of ``jobs``, in the jobs' order; ``workers`` > 1 runs them in a
    process pool of that many processes, 1 runs them here one after the other."""
    results: list[Document | None] = [None] * len(jobs)
    started = time.perf_counter()

    def report(index: int, done: int, wall_s: float) -> None:
        if err is not None:
            err.write(f"[{done}/{len(jobs)}] {jobs[index].label}: {wall_s:.1f} s wall\n")
            err.flush()

    if workers <= 1 or len(jobs) <= 1:
        for index, job in enumerate(jobs):
            results[index], wall_s = run_job(job)
            report(index, index + 1, wall_s)
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            futures = {pool.submit(run_job, job): index for index, job in enumerate(jobs)}
            for done, future in enumerate(as_completed(futures), start=1):
                index = futures[future]
                results[index], wall_s = future.result()
                report(index, done, wall_s)
    if err is not None:
        err.write(f"{len(jobs)} runs, {workers} jobs: {time.perf_counter() - started:.1f} s wall\n")
    return [document for document in results if document is not None]
