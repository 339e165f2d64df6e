"""``smart``: UberLLM's own routing, driven through the same core calls and the same
gateway session as the live gateway (routing/gateway/accept.py, router.py, probes.py):

- plan_route() with the learned SpeedSummary, unusable marks, remembered prefixes
  (cache-aware prices, R2.3) and exploration (R2.6); customer options as given;
- RetryPolicy over the plan (R4), marks after refused calls (R2.7);
- hedging of long streams in the first round (R3): hedge_policy(), hedge_partner(), a
  reservation of the dearer leg's prompt cost in InMemoryHedgeBudget on the virtual UTC
  day, settled with the loser's cost (never above the reservation, as live);
- probes every probe_period_s (R5), fed to the same statistics by the engine.
"""

from __future__ import annotations

from routing.core import (
    HedgeDecision,
    InMemoryHedgeBudget,
    RoutingOptions,
    SmartTuning,
    budget_day,
    first_token_timeout_s,
    hedge_partner,
    hedge_policy,
    request_cost,
)
from routing.core.hedge import NO_HEDGE
from routing.core.types import RouteChoice, RoutePlan

from ..runs import Leg, Run
from .base import SimContext, Step, Strategy, core_plan, first_of
from .knowledge import Knowledge, LearnsFromCalls

DEFAULT_OPTIONS = RoutingOptions()


class Smart(LearnsFromCalls, Strategy):
    name = "smart"
    uses_probes = True

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        self.knowledge = Knowledge(self.gateway, sim.market)
        self.rng = sim.rng(self.name)
        self.daily_usd = float(self.gateway["hedge_budget_usd_per_day"])
        self.budget = InMemoryHedgeBudget(
            self.daily_usd, sim.epoch, burst_s=float(self.gateway["hedge_budget_burst_s"])
        )
        self.exploration_rate = float(self.gateway["exploration_rate"])
        self.tuning = SmartTuning(
            tail_weight=float(self.gateway["tail_weight"]),
            fast_enough_ratio=float(self.gateway["fast_enough_ratio"]),
            fast_enough_under_s=float(self.gateway["fast_enough_under_s"]),
            fast_enough_under_s_long=_optional_float(self.gateway["fast_enough_under_s_long"]),
        )
        self.flat_timeout_s = float(self.gateway["first_token_timeout_s"])
        self.plans: dict[int, RoutePlan] = {}  # request index -> its plan (for timeouts)
        sim.market.timeout_for = self.timeout_for

    def first(self, run: Run, now: float) -> Step | None:
        knowledge = self.knowledge
        model = self.models[run.request.model]
        features = knowledge.features(run, model.slug, now)
        run.scratch = features
        run.plan = core_plan(
            self,
            run,
            features,
            run.request.options or DEFAULT_OPTIONS,
            knowledge.summary(now),
            knowledge.unusable(now),
            self.rng,
            self.exploration_rate,
            self.tuning,
        )
        self.plans[run.request.index] = run.plan
        return first_of(self, run)

    def timeout_for(self, request, endpoint_id: int) -> float | None:
        """The first-token budget of an attempt (routing.core.first_token_timeout_s): a
        hanging provider costs seconds, not the flat timeout."""
        plan = self.plans.get(getattr(request, "index", -1))
        if plan is None:
            return None
        choice = next((c for c in plan.choices if c.endpoint_id == endpoint_id), None)
        if choice is None:
            return None
        gateway = self.gateway
        return first_token_timeout_s(
            choice,
            floor_s=float(gateway["first_token_floor_s"]),
            factor=float(gateway["first_token_factor"]),
            default_s=self.flat_timeout_s,
        )

    # --- hedging (R3), as routing/gateway/router.py ---------------------------------
    def hedge_decision(self, run: Run, now: float) -> HedgeDecision:
        if not run.request.stream or run.plan is None:
            return NO_HEDGE
        gateway = self.gateway
        return hedge_policy(
            run.plan.bucket,
            True,
            float("inf"),
            0.0,
            delayed_from_tokens=gateway["hedge_delayed_from_tokens"],
            immediate_from_tokens=gateway["hedge_immediate_from_tokens"],
            delay_s=gateway["hedge_delay_s"],
        )

    def _choice(self, run: Run, endpoint_id: int) -> RouteChoice:
        return next(c for c in run.plan.choices if c.endpoint.endpoint_id == endpoint_id)

    def loser_cost(self, run: Run, endpoint_id: int) -> float:
        """What the gateway expects a cancelled leg to cost: the prompt, no output."""
        choice = self._choice(run, endpoint_id)
        cached = run.scratch.cached_tokens.get(endpoint_id, 0)
        return request_cost(choice.endpoint, run.request.prompt_tokens, cached, 0)

    def start_hedge(self, run: Run, now: float) -> int | None:
        if len(run.tried) >= self.policy.max_attempts or self.daily_usd <= 0:
            return None
        primary = self._choice(run, run.primary.endpoint_id)
        partner = hedge_partner(run.plan, primary)
        if partner is None or partner.endpoint.endpoint_id in run.tried:
            return None
        partner_id = partner.endpoint.endpoint_id
        reserve = max(
            self.loser_cost(run, primary.endpoint.endpoint_id), self.loser_cost(run, partner_id)
        )
        if not self.budget.try_reserve(reserve):
            return None
        run.hedge_reserved = reserve
        run.hedge_day = budget_day(self.sim.epoch())
        return partner_id

    def end_hedge(self, run: Run, now: float) -> None:
        """Settle the reservation with the losers' cost (0 when no leg won)."""
        reserved = run.hedge_reserved
        if reserved is None:
            return
        self.budget.settle(reserved, min(run.hedge_cost, reserved), run.hedge_day)

    def on_cancel(self, run: Run, leg: Leg) -> None:
        run.hedge_cost += self.loser_cost(run, leg.endpoint_id)

    # --- learning ------------------------------------------------------------------------
    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        super().on_success(run, leg, now)
        self.plans.pop(run.request.index, None)

    def extra_summary(self) -> dict:
        spent = self.budget.spent_by_day
        return {
            "hedge_budget_usd_per_day": self.daily_usd,
            "hedge_budget_spent_by_day": {str(day): round(spent[day], 6) for day in sorted(spent)},
        }


def _optional_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
