"""Simple baselines, all through plan_route() so filters (context, max_price, customer
options) and prices are the core's:

- ``cheapest-input``: the seed's "before": every request to the lowest plain input
  price (plan_route sort=price with no cache reads and no output counted), failures
  to the next cheapest; no statistics, no marks, no hedging.
- ``cheapest-effective``: cheapest for this request's token mix incl. cache reads
  (sort=price with the remembered prefixes and expected output), no speed awareness.
- ``fastest``: lowest typical TTFT in the bucket (sort=latency) from the same
  statistics as smart (SpeedBook fed by its calls and by probes), unusable marks, and
  5% exploration of endpoints with too little data, price ignored; no hedging.
"""

from __future__ import annotations

from routing.core import RequestFeatures
from routing.core.config import GatewayConfig
from routing.core.types import RoutePlan

from ..runs import Leg, Run
from .base import SimContext, Step, Strategy, core_plan, first_of, with_sort
from .stores import LearnsFromCalls, sim_router


class CheapestInput(Strategy):
    name = "cheapest-input"

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        features = RequestFeatures(request.prompt_tokens, 0, stream=request.stream)
        run.plan = core_plan(self, run, features, with_sort(request.options, "price"))
        return first_of(self, run)


class CheapestEffective(LearnsFromCalls, Strategy):
    name = "cheapest-effective"

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        self.router = sim_router(GatewayConfig.from_scenario(self.gateway), sim.market, None)

    def first(self, run: Run, now: float) -> Step | None:
        features = self.features_for(run, now)
        run.plan = core_plan(self, run, features, with_sort(run.request.options, "price"))
        return first_of(self, run)

    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        return None  # learns prices and prefixes only

    def on_cut(self, run: Run, leg: Leg, now: float) -> None:
        return None


class Fastest(LearnsFromCalls, Strategy):
    name = "fastest"
    uses_probes = True

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        config = GatewayConfig.from_scenario(self.gateway)
        self.router = sim_router(config, sim.market, None)
        self.rng = sim.rng(self.name)
        self.exploration_rate = config.exploration_rate

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        knowledge = self.router.knowledge
        features = self.features_for(run, now)
        options = with_sort(request.options, "latency")
        plan = core_plan(
            self, run, features, options, knowledge.summary(now), knowledge.unusable(now)
        )
        run.plan = self._explore(plan) if not options.order else plan
        return first_of(self, run)

    def _explore(self, plan: RoutePlan) -> RoutePlan:
        """R2.6 for a latency sort: sometimes try an endpoint without data first."""
        pool = [
            c
            for c in plan.choices[1:]
            if c.typical_ttft_s is None and not c.reason.startswith("last resort")
        ]
        if not pool or self.rng.random() >= self.exploration_rate:
            return plan
        explored = pool[self.rng.randrange(len(pool))]
        rest = tuple(c for c in plan.choices if c is not explored)
        return RoutePlan((explored, *rest), plan.bucket, plan.strategy)
