"""``oracle``: a bound, not a router. It knows each request's realised outcome at every
endpoint before choosing (the same draws the engine will use) and sends the request to
the cheapest endpoint that would have met the fast-enough rule *for that request*:
realised TTFT within 2x of the fastest realised one, or under 1 s (R2.4 applied to
outcomes instead of statistics), among those that would serve it whole (no error, no
mid-stream cut). It needs no retry unless every endpoint would fail
now; then it tries them cheapest first. No hedging, no probes. Customer options
(order/only/sort) are obeyed as the core plans them.

The rule it optimises is reported for every strategy as ``fast_enough_share``: no
strategy can serve more requests fast enough.
"""

from __future__ import annotations

from routing.core import RequestFeatures
from routing.core.types import RoutePlan

from ..market import OK
from ..runs import Run
from .base import Step, Strategy, core_plan, first_of, plan_from_order, with_sort

FAST_RATIO = 2.0
FAST_UNDER_S = 1.0


class Oracle(Strategy):
    name = "oracle"
    sees_the_future = True

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        features = RequestFeatures(request.prompt_tokens, request.output_tokens)
        options = with_sort(request.options, "price")
        plan = core_plan(self, run, features, options)  # the core's filters and prices
        customer = request.options is not None and request.options.is_customer_choice
        run.plan = plan if customer else self._reorder(run, plan, now)
        return first_of(self, run)

    def _reorder(self, run: Run, plan: RoutePlan, now: float) -> RoutePlan:
        request = run.request
        market = self.sim.market
        realised = []
        for choice in plan.choices:
            endpoint_id = choice.endpoint.endpoint_id
            kind, _, delay, cached = market.outcome(request, endpoint_id, now)
            output = market.output_tokens(endpoint_id, request)
            cost = market.cost(endpoint_id, request, cached, output)
            # A stream the provider would cut part-way (``cut_rate``) is a failure too.
            cut = market.cut_after(request, endpoint_id)
            served_whole = kind == OK and (cut is None or cut >= output)
            realised.append((endpoint_id, served_whole, delay, cost))
        good = [r for r in realised if r[1]]
        order: list[int] = []
        if good:
            fastest = min(r[2] for r in good)
            fast = [r for r in good if r[2] <= FAST_RATIO * fastest or r[2] < FAST_UNDER_S]
            order = [r[0] for r in sorted(fast, key=lambda r: (r[3], r[0]))]
            order += [r[0] for r in sorted(good, key=lambda r: (r[2], r[0])) if r[0] not in order]
        order += [r[0] for r in sorted(realised, key=lambda r: (r[3], r[0])) if r[0] not in order]
        return plan_from_order(run, order, plan)
