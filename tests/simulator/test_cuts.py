"""Mid-stream cuts in the scenario format (endpoint ``cut_rate``): a provider that cuts
most of its streams after the first token is demoted by smart (``on_cut`` counts in its
error rate), while cheapest-effective, which learns nothing, keeps sending it traffic."""

from __future__ import annotations

import json
from pathlib import Path

from lab.simulator import load_scenario, simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "lab" / "simulator" / "scenarios"


def test_a_provider_cutting_streams_is_demoted(tmp_path):
    data = json.loads((SCENARIOS / "deepseek-v4.1-flash.json").read_text())
    data["name"] = "cuts"
    for spec in data["models"][0]["endpoints"]:
        if spec["provider"] == "novacloud":  # cheapest for short prompts: most traffic
            spec["cut_rate"] = 0.6
    path = tmp_path / "cuts.json"
    path.write_text(json.dumps(data))
    document, _ = simulate(
        load_scenario(str(path)), ["smart", "cheapest-effective"], seed=1, requests=3000
    )
    smart, naive = document["strategies"]["smart"], document["strategies"]["cheapest-effective"]
    assert naive["cut_streams"] > 100  # its cut calls count as failed, not served
    assert smart["cut_streams"] < 0.2 * naive["cut_streams"]
    assert smart["provider_share"].get("novacloud", 0) < 0.05
    assert smart["failed_share"] < 0.2 * naive["failed_share"]


def test_without_cut_rate_nothing_is_cut():
    document, _ = simulate(load_scenario("outage"), ["smart"], seed=1, requests=1500)
    assert document["strategies"]["smart"]["cut_streams"] == 0


def test_a_tokens_per_minute_limit_refuses_with_429s(tmp_path):
    """Endpoint ``tokens_per_minute``: over the limit of prompt tokens accepted from us
    in the last minute, the provider answers 429; the requests are retried elsewhere."""
    # The first calibration, where steadyai takes most long prompts from the start (with
    # 10x cached reads swiftinfer takes most of them in the first 3,000 requests).
    data = json.loads((SCENARIOS / "deepseek-v4.1-flash-slow-cache.json").read_text())
    data["name"] = "tpm"
    for spec in data["models"][0]["endpoints"]:
        if spec["provider"] == "steadyai":  # most long prompts go there
            spec["tokens_per_minute"] = 1_000_000
    path = tmp_path / "tpm.json"
    path.write_text(json.dumps(data))
    limited = simulate(load_scenario(str(path)), ["smart"], seed=1, requests=3000)[0]
    free = simulate(
        load_scenario("deepseek-v4.1-flash-slow-cache"), ["smart"], seed=1, requests=3000
    )[0]
    limited, free = limited["strategies"]["smart"], free["strategies"]["smart"]
    assert free["share_with_429"] == 0 and limited["share_with_429"] > 0.005
    assert limited["failed_share"] == 0  # retried elsewhere (R4.1)
    assert limited["provider_share"]["steadyai"] < free["provider_share"]["steadyai"]


def test_bundled_stream_cuts_smart_leaves_the_cutter_and_comes_back():
    """The bundled ``stream-cuts`` scenario: novacloud (most short prompts) cuts 60% of
    its streams from minute 20 to 50. Smart moves off it within minutes (its cut rate
    counts as an error rate) and back once it streams whole again (the decayed rate and
    exploration); cheapest-effective, which learns nothing, keeps feeding it."""
    scenario = load_scenario("stream-cuts")

    def window(from_minute: float, to_minute: float | None) -> dict:
        document, _ = simulate(
            scenario,
            ["smart", "cheapest-effective"],
            seed=1,
            # ~88 simulated minutes: 30 after the cuts end. With 6,000 (~66 minutes) the
            # "after" window was 11 minutes, and since issue 43's hedge trigger smart's
            # return to novacloud came a few minutes later (0.16 of 55-66 min, 0.41 of 55-88)
            requests=8000,
            from_minute=from_minute,
            to_minute=to_minute,
        )
        return document["strategies"]

    before, during, after = window(0, 20), window(25, 50), window(55, None)
    assert before["smart"]["provider_share"]["novacloud"] > 0.3
    assert during["smart"]["provider_share"].get("novacloud", 0) < 0.05
    assert during["smart"]["cut_streams"] < 0.2 * during["cheapest-effective"]["cut_streams"]
    assert after["smart"]["provider_share"]["novacloud"] > 0.2


def test_the_oracle_avoids_streams_a_provider_would_cut():
    """The oracle knows each request's realised outcome, cuts included: it serves the
    ``stream-cuts`` market without a cut stream (a bound on failures too)."""
    document, _ = simulate(load_scenario("stream-cuts"), ["oracle"], seed=1, requests=4000)
    oracle = document["strategies"]["oracle"]
    assert oracle["cut_streams"] == 0 and oracle["failed_share"] == 0
    assert oracle["provider_share"]["novacloud"] > 0.1  # it still uses novacloud's whole ones
