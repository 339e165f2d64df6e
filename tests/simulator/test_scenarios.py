"""Every strategy on every shipped scenario, and what each scenario is there to show."""

from __future__ import annotations

import pytest

from lab.simulator.scenario import shipped_names
from lab.simulator.strategies import STRATEGIES

from .helpers import document, summary

ALL = tuple(STRATEGIES)


@pytest.mark.parametrize("scenario", shipped_names())
def test_every_strategy_runs_on_every_scenario(scenario: str) -> None:
    results = document(scenario, ALL, 600)["strategies"]
    assert set(results) == set(ALL)
    for name, result in results.items():
        assert result["requests"] == 600, name
        assert result["failed_share"] < 0.05, name
        assert result["ttft_s"]["n"] > 0 and result["ttft_s"]["p50"] > 0, name
        assert abs(sum(result["provider_share"].values()) - 1) < 1e-3, name


R8_REQUESTS = 20_000


def _r8(strategy: str) -> dict:
    return document("deepseek-v4.1-flash", ("smart", "cheapest-input", "oracle"), R8_REQUESTS)[
        "strategies"
    ][strategy]


def test_smart_beats_cheapest_input_like_r8() -> None:
    """R8: TTFT 32k-128k 18 s -> 3.3 s, >128k 40 s -> 3.4 s, slowest 10% of long streams
    57 s -> 8.7 s, 1,000 long streams $2.49 -> $1.04: the same direction, similar size."""
    smart, before = _r8("smart"), _r8("cheapest-input")
    by_bucket, before_bucket = smart["ttft_s_by_bucket"], before["ttft_s_by_bucket"]
    assert by_bucket["32k-128k"]["mean"] < 0.3 * before_bucket["32k-128k"]["mean"]
    assert by_bucket[">128k"]["mean"] < 0.2 * before_bucket[">128k"]["mean"]
    long, long_before = smart["long_streams"], before["long_streams"]
    assert long["ttft_s"]["p90"] < 0.35 * long_before["ttft_s"]["p90"]
    assert long["cost_usd_per_1k"] < 0.65 * long_before["cost_usd_per_1k"]
    assert 12 < before_bucket["32k-128k"]["mean"] < 25  # the seed's "before" sizes
    assert 30 < before_bucket[">128k"]["mean"] < 50


def test_oracle_is_never_worse_on_what_it_optimises() -> None:
    for scenario, requests in (("deepseek-v4.1-flash", R8_REQUESTS), ("market-20", 2000)):
        results = document(scenario, ("smart", "cheapest-input", "oracle"), requests)["strategies"]
        oracle = results["oracle"]["fast_enough_share"]
        assert oracle >= 0.97
        assert oracle >= results["smart"]["fast_enough_share"]
        assert oracle >= results["cheapest-input"]["fast_enough_share"]


def _first_choice(timeline: list[dict], bucket: str, start: float, end: float) -> dict:
    counts: dict[str, float] = {}
    total = 0
    for window in timeline:
        if window["bucket"] == bucket and start <= window["from_min"] < end:
            total += window["requests"]
            for provider, share in window["first_choice_share"].items():
                counts[provider] = counts.get(provider, 0) + share * window["requests"]
    return {provider: count / total for provider, count in counts.items()}


def test_slowdown_at_one_size_moves_long_prompts_within_one_probe_cycle() -> None:
    timeline = summary("slowdown-one-size", "smart", 10_000)["timeline"]
    # steadyai prefills 5x slower above 128k from minute 60; probes run every 5 minutes
    assert _first_choice(timeline, ">128k", 30, 60).get("steadyai", 0) > 0.7
    assert _first_choice(timeline, ">128k", 65, 90).get("steadyai", 0) < 0.1
    assert _first_choice(timeline, "8k-32k", 30, 60).get("steadyai", 0) > 0.8
    assert _first_choice(timeline, "8k-32k", 65, 90).get("steadyai", 0) > 0.8


@pytest.mark.parametrize("strategy", ["smart", "cheapest-input", "openrouter", "oracle"])
def test_outage_fails_no_request_while_others_are_up(strategy: str) -> None:
    result = summary("outage", strategy, 12_000)  # covers the three outages (to minute 111)
    assert result["failed_share"] == 0


def test_outage_is_felt_and_smart_marks_the_provider() -> None:
    runs = [summary("outage", "smart", 12_000, seed) for seed in (1, 2, 3, 4)]
    smart = runs[0]
    assert 0 < smart["retry_share"] < 0.01  # the first refusals, then marks (R2.7)
    # issue 10: 6.2 ms (1.2 ms without the per-attempt first-token budget): legs that hang
    # past max(20 s, 4x typical) now end as failed attempts, their time counted as lost,
    # while the other leg of their race serves; TTFTs are identical with and without it
    # issue 10 round 3 (paced hedge budget, probes by need): 17.9 ms. Fewer races in the
    # outage window (the budget is paced over the day), so a leg that hangs is more
    # often alone and retried after its first-token budget: a real regression for the
    # customers of this run, documented in docs/simulator.md "Platform spend"
    # round 10: a mean over seeds 1-4, since a handful of 20 s hangs make one seed's
    # figure (seeds 1-4: 9.4 / 17.9 / 2.7 / 29.5 ms before round 10's exploration of thin
    # cached windows, 36.1 / 11.2 / 6.1 / 9.7 after: means 14.9 and 15.8)
    lost = [run["lost_ms_per_request"] for run in runs]
    assert sum(lost) / len(lost) < 25
