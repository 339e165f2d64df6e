"""What a routing strategy is to the simulator, and the helpers the plan-based ones share.

A strategy is the ``Router`` of the gateway session (routing/core/session.py), as
routing/gateway/router.py is for the live gateway: the session owns attempts, retries
and hedge races, the engine owns time; ``run`` is the session (runs.Run). A strategy
only decides: ``first(run, now)`` and ``next_attempt(run, now)`` return
``(endpoint_id, delay_s)`` or None (no endpoint left: the request fails), and the
optional hedge hooks say whether and where to race a second leg. The ``on_*`` hooks
tell it what happened, on the virtual clock, so it can learn. A strategy never sees a
realised outcome before the engine resolves it (except the oracle, which is a bound,
not a router).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from routing.core import (
    DEFAULT_TUNING,
    HedgeDecision,
    RetryPolicy,
    RoutingOptions,
    SmartTuning,
    SpeedSummary,
    plan_route,
)
from routing.core.hedge import NO_HEDGE
from routing.core.lessons import Probed
from routing.core.session import HedgeStart, Step
from routing.core.types import EndpointInfo, ModelInfo, RequestFeatures, RoutePlan

from ..market import Market
from ..runs import Leg, Run
from ..scenario import Scenario

EMPTY_SUMMARY = SpeedSummary()


@dataclass(slots=True)
class SimContext:
    """What every strategy may use: the scenario, the market's catalog view (prices,
    endpoints; not the hidden behaviour), the seed and the virtual clocks."""

    scenario: Scenario
    market: Market
    seed: int
    now: Callable[[], float]  # simulated seconds since the start
    epoch: Callable[[], float]  # the same instant as Unix time (for UTC days)

    @property
    def gateway(self) -> dict[str, Any]:
        return dict(self.scenario.gateway)

    def rng(self, name: str) -> random.Random:
        return random.Random(f"{self.seed}:strategy:{name}")

    def model_info(self, model: int) -> ModelInfo:
        spec = self.scenario.models[model]
        return ModelInfo(
            spec.slug, spec.list_price_input, spec.list_price_output, spec.list_price_cache_read
        )

    def endpoints(self, model: int) -> tuple[EndpointInfo, ...]:
        return self.market.infos[model]


class Strategy:
    """Base strategy: no hedging, no probes, learns nothing."""

    name = "base"
    uses_probes = False
    sees_the_future = False  # a bound (``oracle``), not a router: out of the Pareto check

    def __init__(self, sim: SimContext) -> None:
        self.sim = sim
        self.gateway = sim.gateway
        self.policy = RetryPolicy(max_attempts=int(self.gateway["max_attempts"]))
        self.models = [sim.model_info(m.index) for m in sim.scenario.models]

    def first(self, run: Run, now: float) -> Step | None:
        raise NotImplementedError

    def next_attempt(self, run: Run, now: float) -> Step | None:
        """Default (R4.1): the next plan entry not yet tried, at most max_attempts."""
        choice = self.policy.next_choice(run.plan, run.tried) if run.plan else None
        return None if choice is None else (choice.endpoint.endpoint_id, 0.0)

    def hedge_decision(self, run: Run, now: float) -> HedgeDecision:
        return NO_HEDGE

    def start_hedge(self, run: Run, now: float) -> HedgeStart | None:
        return None

    def end_hedge(self, run: Run, now: float) -> None:
        return None

    def on_cancel(self, run: Run, leg: Leg) -> float:
        """A hedge leg lost the race and was cancelled before its first token: its cost."""
        return 0.0

    def on_first_token(self, run: Run, leg: Leg, now: float) -> None:
        return None

    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        return None

    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        return None

    def on_cut(self, run: Run, leg: Leg, now: float) -> None:
        """The serving leg's stream was cut by its provider after the first token."""
        return None

    def probe_sizes(self, endpoint_id: int, sizes: list[int], now: float) -> list[int]:
        """The probe sizes to send this endpoint this cycle (default: all of them)."""
        return sizes

    def probe_typical(self, endpoint_id: int, bucket: str, now: float) -> float | None:
        """The typical TTFT a probe is compared with (None: no confirmation rule)."""
        return None

    def on_probe(self, probe: Probed, now: float) -> None:
        """A probe ended (R5): its answers (None: it failed) and whether they confirmed a
        shift (``restart``)."""
        return None

    def extra_summary(self) -> dict[str, Any]:
        """Strategy-specific figures for the report (e.g. hedge budget by day)."""
        return {}


def with_sort(options: RoutingOptions | None, sort: str) -> RoutingOptions:
    """The customer's own choice if they made one (R2.10), else ``sort`` with their
    max_price (R6.3 applies to every strategy)."""
    if options is not None and options.is_customer_choice:
        return options
    return replace(options, sort=sort) if options is not None else RoutingOptions(sort=sort)


def core_plan(
    strategy: Strategy,
    run: Run,
    features: RequestFeatures,
    options: RoutingOptions,
    speed: SpeedSummary = EMPTY_SUMMARY,
    unusable: frozenset[int] = frozenset(),
    rng: random.Random | None = None,
    exploration_rate: float = 0.0,
    tuning: SmartTuning = DEFAULT_TUNING,
) -> RoutePlan:
    """plan_route() for this run's model with the current catalog (raises RoutingError)."""
    model = run.request.model
    return plan_route(
        strategy.models[model],
        strategy.sim.endpoints(model),
        features,
        options,
        speed,
        unusable,
        rng or _NO_RNG,
        exploration_rate=exploration_rate,
        tuning=tuning,
    )


_NO_RNG = random.Random(0)  # plan_route draws only when exploring (rate > 0)


def first_of(strategy: Strategy, run: Run) -> Step | None:
    choice = strategy.policy.next_choice(run.plan, run.tried) if run.plan else None
    return None if choice is None else (choice.endpoint.endpoint_id, 0.0)


def plan_from_order(run: Run, order: list[int], bucket_plan: RoutePlan) -> RoutePlan:
    """A RoutePlan with ``bucket_plan``'s choices re-ordered as ``order`` (endpoint ids)."""
    by_id = {choice.endpoint.endpoint_id: choice for choice in bucket_plan.choices}
    choices = tuple(by_id[eid] for eid in order if eid in by_id)
    return RoutePlan(choices, bucket_plan.bucket, bucket_plan.strategy)
