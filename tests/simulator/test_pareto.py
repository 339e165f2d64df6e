"""The Pareto check (``simulate --pareto``, issue 43) and R8's figures (``simulate --r8``):
the dominance rule on constructed figures, and small runs through the command line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.simulator import cli, load_scenario
from lab.simulator.batch import Job, run_jobs
from lab.simulator.metrics import _long_stream_platform
from lab.simulator.pareto import (
    Figures,
    check_document,
    judge,
    no_slower,
    pareto_strategies,
)
from lab.simulator.r8 import met, r8_figures

ROOT = Path(__file__).resolve().parents[2]
BUCKETS = ("<8k", "8k-32k", "32k-128k", ">128k")


def figures(cost: float, *p90: float | None) -> Figures:
    return Figures(cost, dict(zip(BUCKETS, p90, strict=True)))


SMART = figures(1.00, 1.0, 2.0, 3.0, 4.0)


def test_cheaper_and_no_slower_everywhere_dominates() -> None:
    verdict = judge("x", figures(0.98, 1.0, 2.0, 2.9, 4.0), SMART)
    assert verdict.cheaper and verdict.dominates
    assert verdict.cost_ratio == pytest.approx(0.98)
    assert verdict.slower_buckets == []


def test_one_percent_cheaper_is_not_more_than_one_percent() -> None:
    assert not judge("x", figures(0.99, 0.5, 0.5, 0.5, 0.5), SMART).dominates
    assert judge("x", figures(0.9899, 0.5, 0.5, 0.5, 0.5), SMART).dominates


def test_slower_in_a_single_bucket_does_not_dominate() -> None:
    verdict = judge("x", figures(0.5, 1.0, 2.0, 3.0, 4.01), SMART)
    assert verdict.cheaper and not verdict.dominates
    assert verdict.slower_buckets == [">128k"]


def test_dearer_and_faster_does_not_dominate() -> None:
    verdict = judge("x", figures(1.5, 0.1, 0.1, 0.1, 0.1), SMART)
    assert not verdict.cheaper and not verdict.dominates


def test_empty_buckets() -> None:
    assert no_slower(None, None) is None  # nobody served it: not compared
    assert no_slower(None, 3.0) is False  # only smart served it
    assert no_slower(3.0, None) is True  # only the other served it
    smart = figures(1.0, 1.0, 2.0, 3.0, None)
    verdict = judge("x", figures(0.5, 1.0, 2.0, 3.0, None), smart)
    assert verdict.dominates and set(verdict.no_slower) == {"<8k", "8k-32k", "32k-128k"}
    assert not judge("x", figures(0.5, 1.0, 2.0, None, 4.0), SMART).dominates


def _summary(total: float, p90: float, p50: float = 1.0) -> dict[str, Any]:
    bucket = {"p50": p50, "p90": p90}
    return {
        "total_cost_usd_per_1k_requests": total,
        "failed_share": 0.0,
        "ttft_s_by_bucket": dict.fromkeys(BUCKETS, bucket),
        "long_streams": {
            "cost_usd_per_1k": total,
            "platform_share_of_cost": 0.05,
            "ttft_s": {"p90": p90},
        },
    }


def test_check_document_leaves_out_strategies_that_see_the_future() -> None:
    document = {
        "scenario": "s",
        "seed": 2,
        "requests": 10,
        "strategies": {
            "smart": _summary(1.0, 2.0),
            "oracle": _summary(0.5, 1.0),  # dominates, but sees the future
            "openrouter": _summary(0.8, 2.0),  # dominates
            "fastest": _summary(0.8, 2.1),
        },
    }
    check = check_document(document)
    assert [v.strategy for v in check.verdicts] == ["openrouter", "fastest"]
    assert check.dominated_by == ["openrouter"]
    assert pareto_strategies()[0] == "smart" and "oracle" not in pareto_strategies()


def test_r8_figures_and_targets() -> None:
    smart, before = _summary(1.0, 3.0, p50=1.0), _summary(2.6, 30.0, p50=12.0)
    document = {"scenario": "s", "seed": 1, "requests": 10}
    document["strategies"] = {"smart": smart, "cheapest-input": before}
    figures = r8_figures(document)
    assert figures.p50_over_128k_lower == pytest.approx(12.0)
    assert figures.long_stream_cheaper == pytest.approx(2.6)
    assert all(met(figures).values())
    smart["long_streams"]["platform_share_of_cost"] = 0.11
    smart["ttft_s_by_bucket"] = {**smart["ttft_s_by_bucket"], "32k-128k": {"p50": 3.0}}
    assert met(r8_figures(document)) == {
        "TTFT p50 32k-128k, x lower": False,
        "TTFT p50 >128k, x lower": True,
        "long streams, x cheaper": True,
        "platform / customer, long streams": False,
        "long-stream TTFT p90": True,
    }


def test_long_streams_platform_spend_takes_their_part_of_long_probes() -> None:
    # rows: (bucket, stream, prompt tokens, output, failed, ttft, whole, cost, ...)
    rows = [(2, True, 40_000, 1, False, 1, 1, 3.0), (2, False, 40_000, 1, False, 1, 1, 1.0)]
    rows += [(0, True, 1_000, 1, False, 1, 1, 9.0)]
    platform = {"long_stream_hedge_spend": 0.5, "long_probe_spend": 2.0}
    assert _long_stream_platform(rows, 3.0, platform) == pytest.approx((0.5, 2.0 * 3 / 4))


def test_the_pool_changes_nothing_but_the_wall_time() -> None:
    jobs = [Job(load_scenario("outage"), seed, 300, ("smart", "openrouter")) for seed in (1, 2)]
    err = io.StringIO()
    assert run_jobs(jobs, 2, err) == run_jobs(jobs, 1)
    assert "[2/2]" in err.getvalue()


def test_r8_through_the_cli() -> None:
    options = {"r8": True, "seed": 1, "requests": 400, "jobs": 1, "json": True}
    text, status = cli.run_with_status(options, io.StringIO())
    (run,) = json.loads(text)["r8"]
    assert run["scenario"] == "deepseek-v4.1-flash" and run["requests"] == 400
    assert status == 0  # a report without --strict
    _, strict_status = cli.run_with_status({**options, "strict": True}, io.StringIO())
    assert strict_status == (0 if json.loads(text)["all_met"] else 1)


def test_pareto_end_to_end_through_the_management_command() -> None:
    command = [sys.executable, "manage.py", "simulate", "--pareto", "--scenario", "outage"]
    command += ["--seed", "1", "--requests", "300", "--jobs", "1", "--json", "--strict"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    document = json.loads(result.stdout)
    (run,) = document["runs"]
    assert (run["scenario"], run["seed"], run["requests"]) == ("outage", 1, 300)
    assert set(run["strategies"]) == set(pareto_strategies()) - {"smart"}
    assert result.returncode == (1 if document["smart_dominated"] else 0), result.stderr
    assert "1 runs, 1 jobs" in result.stderr  # progress on stderr, not stdout
    text = subprocess.run(
        [sys.executable, "-m", "lab.simulator", *command[3:-2]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert text.returncode == 0
    assert "outage  seed 1  requests 300" in text.stdout
    assert "smart dominated in" in text.stdout
