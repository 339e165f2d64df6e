"""Command line: ``python -m lab.simulator`` and ``python manage.py simulate``.

    simulate --scenario FILE|NAME [--strategy NAME ...] --seed N [--requests N]
             [--gateway KEY=VALUE ...] [--from-minute M] [--to-minute M]
             [--json] [--timeline] [--no-progress] [--list]

Without --strategy every strategy runs. The table (or with --json one JSON object) goes
to stdout; progress and wall-clock speed go to stderr, so the same seed gives the same
stdout byte for byte.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .progress import ProgressLine
from .report import format_report
from .run import simulate
from .scenario import Scenario, ScenarioError, load_scenario, shipped_names
from .strategies import STRATEGIES


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
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
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
    opts = vars(options) if isinstance(options, argparse.Namespace) else dict(options)
    err = err or sys.stderr
    if opts.get("list"):
        return f"scenarios: {', '.join(shipped_names())}\nstrategies: {', '.join(STRATEGIES)}\n"
    if not opts.get("scenario"):
        raise ScenarioError("--scenario is required (see --list)")
    names = opts.get("strategies") or list(STRATEGIES)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise ScenarioError(
            f"unknown strategy {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}"
        )
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
        sys.stdout.write(run(args))
    except (ScenarioError, ValueError) as exc:
        sys.stderr.write(f"simulate: {exc}\n")
        return 2
    return 0
