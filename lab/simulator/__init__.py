"""Market simulator for routing quality: a discrete-event simulation on a virtual clock
of models sold by several providers, driving the same routing core (routing.core) as
the live gateway and comparing it with baseline strategies. No Django here: the
management command ``simulate`` is a thin wrapper around ``cli``. See docs/simulator.md.
"""

from .run import run_strategy, simulate
from .scenario import Scenario, ScenarioError, load_scenario, parse_scenario

__all__ = [
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "run_strategy",
    "simulate",
]
