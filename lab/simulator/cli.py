"""Command line: ``python -m lab.simulator`` and ``python manage.py simulate``.

    simulate --scenario FILE|NAME [--strategy NAME ...] --seed N [--requests N]
             [--gateway KEY=VALUE ...] [--from-minute M] [--to-minute M]
             [--json] [--timeline] [--no-progress] [--list]
    simulate --pareto [--scenario S] [--seed N] [--requests N] [--jobs N] [--strict] [--json]
    simulate --r8 [--seed N] [--requests N] [--jobs N] [--strict] [--json]

Without --strategy every strategy runs. The table (or with --json one JSON object) goes
to stdout; progress and wall-clock speed go to stderr, so the same seed gives the same
stdout byte for byte. --pareto checks over every shipped scenario and seeds 1-3 that no
strategy without foresight dominates smart (pareto.py); --r8 prints R8's figures on the
calibrated market, seeds 1-3 (r8.py). Both are reports: exit status 0, or with --strict 1
when smart is dominated / an R8 target is missed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from . import r8
from .batch import Job, run_jobs
from .pareto import check_document, pareto_strategies
from .pareto_report import format_pareto, pareto_json
from .progress import ProgressLine
from .report import format_report
from .run import simulate
from .scenario import Scenario, ScenarioError, load_scenario, shipped_names
from .strategies import STRATEGIES

PARETO_SEEDS = (1, 2, 3)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's options (shared with the Django management command)."""
    parser.add_argument("--scenario", help="scenario JSON file, or a shipped scenario name")
    parser.add_argument(
        "--strategy",
        action="append",
        dest="strategies",
        metavar="NAME",
        help=f"repeatable; one of: {', '.join(STRATEGIES)} (default: all)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="random seed (default 1; --pareto/--r8: 1, 2, 3)"
    )
    parser.add_argument(
        "--requests", type=int, default=None, help="number of requests (default: the scenario's)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="with --json: first-choice shares per 5 minutes and bucket",
    )
    parser.add_argument(
        "--gateway",
        action="append",
        dest="gateway",
        metavar="KEY=VALUE",
        help="override a gateway setting of the scenario (repeatable), e.g. tail_weight=1",
    )
    parser.add_argument(
        "--from-minute",
        type=float,
        default=None,
        help="count only requests arriving from this simulated minute (the run is whole)",
    )
    parser.add_argument(
        "--to-minute",
        type=float,
        default=None,
        help="count only requests arriving before this simulated minute",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    parser.add_argument("--list", action="store_true", help="list scenarios and strategies")
    parser.add_argument(
        "--pareto",
        action="store_true",
        help="is smart dominated by a strategy without foresight? (every shipped scenario, "
        "seeds 1-3; narrow with --scenario, --seed, --strategy)",
    )
    parser.add_argument(
        "--r8",
        action="store_true",
        help=f"R8's figures: smart vs cheapest-input on {r8.R8_SCENARIO}, seeds 1-3",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="--pareto/--r8: simulations in parallel (default 2)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="--pareto/--r8: exit 1 when smart is dominated / an R8 target is missed",
    )


def with_gateway(scenario: Scenario, pairs: Sequence[str]) -> Scenario:
    """The scenario with gateway settings overridden by ``KEY=VALUE`` (a JSON value)."""
    if not pairs:
        return scenario
    gateway = dict(scenario.gateway)
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or key not in gateway:
            raise ScenarioError(
                f"--gateway {pair!r}: expected KEY=VALUE with KEY one of "
                f"{', '.join(sorted(gateway))}"
            )
        try:
            gateway[key] = json.loads(raw)
        except json.JSONDecodeError:
            raise ScenarioError(f"--gateway {pair!r}: the value is not JSON") from None
    return dataclasses.replace(scenario, gateway=gateway)


def run(options: argparse.Namespace | dict[str, Any], err: TextIO | None = None) -> str:
    """Run the simulation described by parsed ``options``; returns what to print."""
    return run_with_status(options, err)[0]


def run_with_status(
    options: argparse.Namespace | dict[str, Any], err: TextIO | None = None
) -> tuple[str, int]:
    """(what to print, exit status): 1 only with --strict when smart is dominated
    (--pareto) or an R8 target is missed (--r8)."""
    opts = vars(options) if isinstance(options, argparse.Namespace) else dict(options)
    err = err or sys.stderr
    if opts.get("list"):
        listing = f"scenarios: {', '.join(shipped_names())}\nstrategies: {', '.join(STRATEGIES)}\n"
        return listing, 0
    if opts.get("pareto") and opts.get("r8"):
        raise ScenarioError("--pareto and --r8 are two reports: ask for one at a time")
    if opts.get("pareto"):
        return run_pareto(opts, err)
    if opts.get("r8"):
        return run_r8(opts, err)
    return run_one(opts, err), 0


def _strategy_names(opts: dict[str, Any], default: Sequence[str]) -> list[str]:
    names = opts.get("strategies") or list(default)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ScenarioError(
            f"unknown strategy {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}"
        )
    return names


def _batch_jobs(
    opts: dict[str, Any], scenarios: Sequence[str], strategies: Sequence[str]
) -> list[Job]:
    """One job per (scenario, seed): --seed narrows the seeds to one, else 1-3."""
    if opts.get("timeline") or opts.get("from_minute") is not None or opts.get("to_minute"):
        raise ScenarioError("--pareto/--r8 judge whole runs: no --timeline or minute window")
    seeds = [int(opts["seed"])] if opts.get("seed") is not None else list(PARETO_SEEDS)
    loaded = [with_gateway(load_scenario(s), opts.get("gateway") or []) for s in scenarios]
    return [
        Job(scenario, seed, opts.get("requests"), tuple(strategies))
        for scenario in loaded
        for seed in seeds
    ]


def _workers(opts: dict[str, Any]) -> int:
    jobs = opts.get("jobs")
    if jobs is not None and int(jobs) < 1:
        raise ScenarioError("--jobs must be at least 1")
    return 2 if jobs is None else int(jobs)


def _progress(opts: dict[str, Any], err: TextIO) -> TextIO | None:
    """Where a batch reports each finished run (nowhere with --no-progress)."""
    return None if opts.get("no_progress") else err


def run_pareto(opts: dict[str, Any], err: TextIO) -> tuple[str, int]:
    """``--pareto``: every shipped scenario (or --scenario) x seeds 1-3 (or --seed)."""
    names = _strategy_names(opts, pareto_strategies())
    if "smart" not in names:
        names = ["smart", *names]
    scenarios = [opts["scenario"]] if opts.get("scenario") else shipped_names()
    documents = run_jobs(_batch_jobs(opts, scenarios, names), _workers(opts), _progress(opts, err))
    checks = [check_document(document) for document in documents]
    dominated = any(check.dominated_by for check in checks)
    status = 1 if dominated and opts.get("strict") else 0
    if opts.get("json"):
        return json.dumps(pareto_json(checks), sort_keys=True) + "\n", status
    return format_pareto(checks), status


def run_r8(opts: dict[str, Any], err: TextIO) -> tuple[str, int]:
    """``--r8``: smart vs cheapest-input on the calibrated market (or --scenario)."""
    scenario = opts.get("scenario") or r8.R8_SCENARIO
    jobs = _batch_jobs(opts, [scenario], r8.R8_STRATEGIES)
    documents = run_jobs(jobs, _workers(opts), _progress(opts, err))
    runs = [r8.r8_figures(document) for document in documents]
    missed = not all(all(r8.met(figures).values()) for figures in runs)
    status = 1 if missed and opts.get("strict") else 0
    if opts.get("json"):
        return json.dumps(r8.r8_json(runs), sort_keys=True) + "\n", status
    return r8.format_r8(runs), status


def run_one(opts: dict[str, Any], err: TextIO) -> str:
    """One scenario and one seed, every strategy asked (the default command)."""
    if not opts.get("scenario"):
        raise ScenarioError("--scenario is required (see --list)")
    names = _strategy_names(opts, STRATEGIES)
    scenario = with_gateway(load_scenario(opts["scenario"]), opts.get("gateway") or [])
    progress = None if opts.get("no_progress") else ProgressLine(err)
    document, speeds = simulate(
        scenario,
        names,
        seed=int(opts.get("seed") or 1),
        requests=opts.get("requests"),
        progress=progress,
        timeline=bool(opts.get("timeline")),
        from_minute=opts.get("from_minute"),
        to_minute=opts.get("to_minute"),
    )
    for name, (wall_s, per_s) in speeds.items():
        err.write(f"{name}: {wall_s:.2f} s wall, {per_s:,.0f} simulated requests/s\n")
    if opts.get("json"):
        return json.dumps(document, sort_keys=True) + "\n"
    return format_report(document)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="simulate", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        text, status = run_with_status(args)
    except (ScenarioError, ValueError) as exc:
        sys.stderr.write(f"simulate: {exc}\n")
        return 2
    sys.stdout.write(text)
    return status
