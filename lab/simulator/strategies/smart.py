"""``smart``: UberLLM's own routing: the core's ``SmartRouter`` (routing/core/router.py),
the same object the live gateway routes with, driven by the gateway session on the
virtual clock. This module only feeds it the simulated request and keeps the
request's route state on the run (``run.plan``, ``run.scratch``: its features and the
hedge race it reserved for); the budget is an ``InMemoryHedgeBudget`` on the virtual
UTC day and the knowledge is updated in place (``stores.SimStores``). Probes every
``probe_period_s`` (R5) are fed to the same knowledge by the engine.
"""

from __future__ import annotations

from routing.core import HedgeDecision, InMemoryHedgeBudget, RoutingOptions
from routing.core.config import GatewayConfig
from routing.core.hedge import NO_HEDGE
from routing.core.router import HedgeStart
from routing.core.types import RouteChoice

from ..runs import Leg, Run
from .base import SimContext, Step, Strategy
from .stores import LearnsFromCalls, sim_router

DEFAULT_OPTIONS = RoutingOptions()


class Smart(LearnsFromCalls, Strategy):
    name = "smart"
    uses_probes = True

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        config = GatewayConfig.from_scenario(self.gateway)
        self.budget = InMemoryHedgeBudget(
            config.hedge_budget_usd_per_day, sim.epoch, burst_s=config.hedge_budget_burst_s
        )
        self.router = sim_router(config, sim.market, sim.rng(self.name), self.budget)
        self.races: dict[int, HedgeStart] = {}  # request index -> its hedge reservation
        self.plans: dict[int, Run] = {}  # request index -> its run (for timeouts)
        sim.market.timeout_for = self.timeout_for

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        run.scratch = self.features_for(run, now)
        run.plan = self.router.plan(
            self.models[request.model],
            self.sim.endpoints(request.model),
            run.scratch,
            request.options or DEFAULT_OPTIONS,
            now,
        )
        self.plans[request.index] = run
        return self.router.next_attempt(run.plan, run.tried)

    def next_attempt(self, run: Run, now: float) -> Step | None:
        return self.router.next_attempt(run.plan, run.tried) if run.plan else None

    def timeout_for(self, request, endpoint_id: int) -> float | None:
        """The first-token budget of an attempt (``SmartRouter.timeout_s``)."""
        run = self.plans.get(getattr(request, "index", -1))
        return None if run is None else self.router.timeout_s(run.plan, endpoint_id)

    # --- hedging (R3): the router decides, the run keeps the race --------------------------
    def hedge_decision(self, run: Run, now: float) -> HedgeDecision:
        if run.plan is None:
            return NO_HEDGE
        primary = None if run.primary is None else run.primary.endpoint_id
        return self.router.hedge_decision(run.plan, run.request.stream, primary, run.scratch)

    def start_hedge(self, run: Run, now: float) -> HedgeStart | None:
        primary = run.primary.endpoint_id
        start = self.router.start_hedge(
            run.plan, run.scratch, primary, run.tried, self.sim.epoch(), now=now
        )
        if start is not None:
            self.races[run.request.index] = start
        return start

    def end_hedge(self, run: Run, now: float) -> None:
        start = self.races.pop(run.request.index, None)
        if start is None:
            return
        self.router.end_hedge(start, run.hedge_cost, now)
        primary, winner = run.primary, run.winner
        if primary is not None and winner is not None:
            ttft = primary.delay if winner is primary else None
            run.primary_stalled = self.router.primary_stalled(
                run.plan, primary.endpoint_id, ttft, run.scratch
            )

    def on_cancel(self, run: Run, leg: Leg) -> float:
        return self.router.on_cancel(self._choice(run, leg.endpoint_id).endpoint, run.scratch)

    def _choice(self, run: Run, endpoint_id: int) -> RouteChoice:
        return next(c for c in run.plan.choices if c.endpoint.endpoint_id == endpoint_id)

    # --- learning ------------------------------------------------------------------------
    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        super().on_success(run, leg, now)
        self.plans.pop(run.request.index, None)

    def extra_summary(self) -> dict:
        spent = self.budget.spent_by_day
        return {
            "hedge_budget_usd_per_day": self.budget.daily_usd,
            "hedge_budget_spent_by_day": {str(day): round(spent[day], 6) for day in sorted(spent)},
        }
