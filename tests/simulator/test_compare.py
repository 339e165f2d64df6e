"""The before/after tables of docs/simulator.md (lab.simulator.compare)."""

from __future__ import annotations

import json

from lab.simulator.compare import main, table

from .helpers import document


def test_table_has_a_row_per_strategy_and_side_with_the_headline_cost(tmp_path, capsys):
    doc = document("outage", ("smart", "cheapest-input"), 400)
    smart = doc["strategies"]["smart"]
    text = table([("before", doc), ("after", doc)])
    assert text.count("| smart (before) |") == 1 and "| cheapest-input (after) |" in text
    headline = smart["cost_usd_per_1k_requests"] + smart["platform_usd_per_1k_requests"]
    assert abs(smart["total_cost_usd_per_1k_requests"] - headline) < 1e-4
    assert f"${smart['total_cost_usd_per_1k_requests']:.3f}" in text
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    assert main([str(path), str(path)]) == 0
    assert "| smart (after) |" in capsys.readouterr().out
