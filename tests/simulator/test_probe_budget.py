"""The daily probe budget (issue 10, probe economy) on the simulator: probes stop for the
rest of the UTC day once spent, start again the next day, and the report shows it."""

from __future__ import annotations

import dataclasses

from lab.simulator import load_scenario, simulate
from lab.simulator.cli import run, with_gateway
from lab.simulator.report import format_report

REQUESTS = 4000  # about 45 simulated minutes of deepseek-v4.1-flash


def _smart(budget: float, start_offset_s: float = 0.0) -> dict:
    scenario = with_gateway(
        load_scenario("deepseek-v4.1-flash"),
        # every probe of every cycle (no probes by volume), so that $0.3 a day runs out
        [f"probe_budget_usd_per_day={budget}", "probe_spend_share=0"],
    )
    scenario = dataclasses.replace(scenario, start_epoch=scenario.start_epoch + start_offset_s)
    document, _ = simulate(scenario, ["smart"], seed=1, requests=REQUESTS)
    return document["strategies"]["smart"]


def test_probes_stop_when_the_days_budget_is_spent():
    free, capped = _smart(0), _smart(0.3)
    assert free["probes_over_budget"] == 0 and free["probe_budget_usd_per_day"] == 0
    assert capped["probes_over_budget"] > 0
    assert all(usd <= 0.3 for usd in capped["probe_spend_by_day"].values())
    assert capped["probe_spend_usd"] < free["probe_spend_usd"]
    assert capped["probes"] < free["probes"]


def test_the_budget_starts_again_on_the_next_utc_day():
    # starting 23:40 UTC: the first day's $0.3 is spent before midnight, then probes resume
    capped = _smart(0.3, start_offset_s=23 * 3600 + 40 * 60)
    days = capped["probe_spend_by_day"]
    assert len(days) == 2
    assert all(0 < usd <= 0.3 for usd in days.values())


def test_the_report_shows_the_probe_budget():
    text = format_report(
        {
            "scenario": "x",
            "seed": 1,
            "requests": 1,
            "simulated_minutes": 1,
            "strategies": {"smart": _smart(0.3)},
        }
    )
    line = next(row for row in text.splitlines() if row.startswith("probe spend: most"))
    assert "/ $0.300" in line and "not sent" in line


def test_gateway_overrides_are_checked():
    import pytest

    from lab.simulator.scenario import ScenarioError

    with pytest.raises(ScenarioError):
        run({"scenario": "outage", "gateway": ["no_such_setting=1"], "no_progress": True})
    with pytest.raises(ScenarioError):
        run({"scenario": "outage", "gateway": ["tail_weight=one"], "no_progress": True})
