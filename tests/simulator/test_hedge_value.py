"""Hedge value (issue 43): the late trigger spends the hedge budget where a stall is.
The bundled ``stalls`` market (every provider stalls 10% of first tokens for 3-10 s;
long uncached prompts take 1-4 s normally): with the seed's flat 1 s trigger most of the
32k-128k hedge spend goes to primaries that were not stalled; with the late trigger
(2x the primary's typical TTFT at the prompt's size) little does."""

from __future__ import annotations

from lab.simulator import load_scenario, simulate
from lab.simulator.cli import with_gateway


def _smart(*gateway: str) -> dict:
    scenario = with_gateway(load_scenario("stalls"), list(gateway))
    document, _ = simulate(scenario, ["smart"], seed=1, requests=4000)
    return document["strategies"]["smart"]


def test_late_trigger_hedges_stalls_not_normal_prefills():
    late, flat = _smart(), _smart('hedge_trigger="flat"')
    assert late["hedges"]["spend_32k_128k_not_stalled_share"] < 0.4
    assert flat["hedges"]["spend_32k_128k_not_stalled_share"] > 0.6
    legs = late["hedges"]["legs_primary_stalled"] + late["hedges"]["legs_primary_not_stalled"]
    assert legs > 0
    # the live rule (hedge leg won, or the primary's first token later than its late
    # reference) calls most hedged calls of the late trigger stalled
    judged = late["hedges"]["judged_stalled_live_rule"]
    assert judged > late["hedges"]["judged_not_stalled_live_rule"]


def test_no_stalls_no_stalled_legs():
    document, _ = simulate(load_scenario("stalls-none"), ["smart"], seed=1, requests=2000)
    hedges = document["strategies"]["smart"]["hedges"]
    assert hedges["legs_primary_stalled"] == 0
    assert hedges["spend_usd_primary_stalled"] == 0
