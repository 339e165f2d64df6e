"""Same seed -> identical output; different seeds differ; the CLI and entry points."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.simulator.cli import main, run
from lab.simulator.scenario import shipped_names
from lab.simulator.strategies import STRATEGIES

ROOT = Path(__file__).resolve().parents[2]


def _json(seed: int, requests: int = 1200) -> str:
    return run(
        {
            "scenario": "deepseek-v4.1-flash",
            "seed": seed,
            "requests": requests,
            "json": True,
            "no_progress": True,
        }
    )


def test_same_seed_gives_identical_json() -> None:
    first, second = _json(7), _json(7)
    assert first == second
    document = json.loads(first)
    assert set(document["strategies"]) == set(STRATEGIES)
    assert document["requests"] == 1200


def test_different_seeds_differ() -> None:
    one, two = json.loads(_json(1)), json.loads(_json(2))
    assert one["strategies"]["smart"] != two["strategies"]["smart"]
    assert one["simulated_minutes"] != two["simulated_minutes"]


def test_table_lists_every_metric_and_strategy(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "--scenario",
            "outage",
            "--strategy",
            "smart",
            "--strategy",
            "cheapest-input",
            "--requests",
            "300",
            "--seed",
            "3",
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    for needle in (
        "TTFT p50",
        "TTFT >128k",
        "whole request p95",
        "cost / 1k requests",
        "cost / 1M tokens",
        "streams >32k: cost / 1k",
        "needed a retry",
        "met a 429",
        "hedged",
        "hedge spend",
        "lost on failed tries",
        "provider share",
        "smart",
        "cheapest-input",
    ):
        assert needle in out


def test_unknown_strategy_and_scenario_are_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scenario", "outage", "--strategy", "nope", "--no-progress"]) == 2
    assert main(["--scenario", "no-such-scenario", "--no-progress"]) == 2
    assert "simulate:" in capsys.readouterr().err


def test_list_names_scenarios_and_strategies() -> None:
    text = run({"list": True})
    for name in [*shipped_names(), *STRATEGIES]:
        assert name in text


def test_module_entry_point_runs_without_django() -> None:
    code = (
        "import sys, runpy; sys.argv = ['x', '--list']; "
        "runpy.run_module('lab.simulator', run_name='__main__')"
    )
    probe = "import lab.simulator, sys; print('django' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
    listed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert listed.returncode == 0 and "deepseek-v4.1-flash" in listed.stdout


def test_management_command_is_a_thin_wrapper() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "simulate",
            "--scenario",
            "outage",
            "--strategy",
            "smart",
            "--requests",
            "200",
            "--json",
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["strategies"]["smart"]["requests"] == 200
