"""``openrouter``: our reading of OpenRouter's "Routing Cost" router (product.md O1-O7,
seeds/openrouter-new-router.zh.txt). Per endpoint it learns, by EWMA over its own
traffic: TTFT and end-to-end throughput (one figure per endpoint, not per prompt
size), the real cache-hit share of served prompts, the error and 429 rates and the
wait for a 429. For a request with P prompt tokens and O expected output tokens
(OutputEstimator, by bucket):

  price    = (P x ((1 - hit) x input + hit x cache_read) + O x output) / 1M      (O1)
  one try  = price + rate x (TTFT + O / e2e_throughput)                           (O2)
             + 429_rate x rate x (429 wait + 2 s penalty)                         (O3)
  cost     = one try x (1 + 8 x error_rate)                                       (O4)

``rate`` (USD per second, per model) = the model's average served cost / average
served duration ("what its providers usually charge and their speed"). Traffic is
shared (O6): weight 1 / (1 + (x / 0.10)^4) with x = cost / best - 1, so endpoints
within ~10% of the best share it and it falls off fast beyond; 2% of traffic is a
floor trickle over all endpoints; an endpoint whose error rate is far above its peers'
gets only the trickle; after k consecutive failures an endpoint backs off for
min(5 s x 2^(k-1), 300 s); a 429 with n calls in flight learns a cap of 0.9 x n
(>= 2) that grows by 0.05 per success, and traffic over the cap spills over. New
endpoints start from the model's typical numbers (O8). A conversation stays on the
endpoint that served its last turn for 10 minutes when it sells cache reads below its
input price (O7). Retries: the next endpoints by routing cost (R4 RetryPolicy). O5
(tool-call quality) is not simulated.
"""

from __future__ import annotations

from routing.core import OutputEstimator, RequestFeatures, RoutingError
from routing.core.filters import filter_endpoints
from routing.core.types import RouteChoice, RoutePlan

from ..runs import Leg, Run
from .base import SimContext, Step, Strategy, core_plan, first_of, with_sort

ALPHA = 0.05
EDGE = 0.10
FLOOR_SHARE = 0.02
ERROR_WEIGHT = 8.0
PENALTY_429_S = 2.0
BACKOFF_S, BACKOFF_MAX_S = 5.0, 300.0
CAP_SHRINK, CAP_GROWTH, CAP_MIN = 0.9, 0.05, 2.0
STICKY_S = 600.0
REASON = "routing cost"


class Stats:
    __slots__ = ("backoff_until", "cap", "err", "fails", "hit", "r429", "tps", "ttft", "wait429")

    def __init__(self) -> None:
        self.ttft: float | None = None
        self.tps: float | None = None
        self.hit: float | None = None
        self.err = self.r429 = 0.0
        self.wait429 = 0.5
        self.fails = 0
        self.backoff_until = 0.0
        self.cap = float("inf")


def _ewma(old: float | None, value: float) -> float:
    return value if old is None else old + ALPHA * (value - old)


class OpenRouterLike(Strategy):
    name = "openrouter"

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        self.rng = sim.rng(self.name)
        self.stats = {s.endpoint_id: Stats() for s in sim.market.endpoints[1:]}
        self.outputs = OutputEstimator()
        self.served_cost = [None for _ in self.models]
        self.served_s = [None for _ in self.models]
        self.pins: dict[int, tuple[int, float]] = {}

    def _typical(self, model: int, field: str, default: float) -> float:
        values = [
            getattr(self.stats[s.endpoint_id], field) for s in self.sim.market.by_model[model]
        ]
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else default

    def _routing_costs(self, run: Run, allowed: list, output: int) -> dict[int, float]:
        model = run.request.model
        cost, seconds = self.served_cost[model], self.served_s[model]
        rate = cost / seconds if cost and seconds else 0.0
        ttft0 = self._typical(model, "ttft", 1.0)
        tps0 = self._typical(model, "tps", 50.0)
        hit0 = self._typical(model, "hit", 0.0)
        prompt = run.request.prompt_tokens
        costs = {}
        for info in allowed:
            st = self.stats[info.endpoint_id]
            hit = hit0 if st.hit is None else st.hit
            price = (
                prompt * ((1 - hit) * info.price_input + hit * info.price_cache_read)
                + output * info.price_output
            ) / 1e6
            wait = (st.ttft or ttft0) + output / (st.tps or tps0)
            one_try = price + rate * wait + st.r429 * rate * (st.wait429 + PENALTY_429_S)
            costs[info.endpoint_id] = one_try * (1 + ERROR_WEIGHT * st.err)
        return costs

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        model = self.models[request.model]
        output = self.outputs.expected(model.slug, request.bucket, None)
        features = RequestFeatures(request.prompt_tokens, output, stream=request.stream)
        if request.options is not None and request.options.is_customer_choice:
            run.plan = core_plan(self, run, features, request.options)
            return first_of(self, run)
        endpoints = self.sim.endpoints(request.model)
        allowed = filter_endpoints(model, endpoints, features, with_sort(request.options, "price"))
        costs = self._routing_costs(run, allowed, output)
        order = sorted(costs, key=lambda eid: (costs[eid], eid))
        first = self._pinned(run, now, costs) or self._sample(order, costs, now)
        order.remove(first)
        by_id = {info.endpoint_id: info for info in allowed}
        run.plan = RoutePlan(
            tuple(RouteChoice(by_id[e], REASON, costs[e], None) for e in [first, *order]),
            request.bucket,
            "smart",
        )
        return first, 0.0

    def _available(self, endpoint_id: int, now: float) -> bool:
        st = self.stats[endpoint_id]
        return self.sim.market.inflight[endpoint_id] < st.cap and st.backoff_until <= now

    def _pinned(self, run: Run, now: float, costs: dict[int, float]) -> int | None:
        pin = self.pins.get(run.request.cache_key)
        if pin is None or now - pin[1] > STICKY_S or pin[0] not in costs:
            return None
        state = self.sim.market.endpoints[pin[0]]
        if state.price_cache_read >= state.price_input or not self._available(pin[0], now):
            return None
        return pin[0]

    def _sample(self, order: list[int], costs: dict[int, float], now: float) -> int:
        if not order:
            raise RoutingError(404, "no_endpoint", "no endpoint fits")
        open_ = [e for e in order if self.sim.market.inflight[e] < self.stats[e].cap] or order
        healthy = [e for e in open_ if self.stats[e].backoff_until <= now] or open_
        errors = sorted(self.stats[e].err for e in healthy)
        far_worse = max(3 * errors[len(errors) // 2], errors[len(errors) // 2] + 0.1)
        best = min(costs[e] for e in healthy)
        weights = {}
        for e in healthy:
            x = costs[e] / best - 1 if best > 0 else 0.0
            weights[e] = 0.0 if self.stats[e].err > far_worse else 1 / (1 + (x / EDGE) ** 4)
        total = sum(weights.values()) or 1.0
        u = self.rng.random()
        for e in open_:
            u -= (1 - FLOOR_SHARE) * weights.get(e, 0.0) / total + FLOOR_SHARE / len(open_)
            if u < 0:
                return e
        return healthy[0]

    # --- learning ------------------------------------------------------------------------
    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        st = self.stats[leg.endpoint_id]
        is429 = leg.status == 429
        st.r429 = _ewma(st.r429, 1.0 if is429 else 0.0)
        st.err = _ewma(st.err, 0.0 if is429 else 1.0)
        if is429:
            st.wait429 = _ewma(st.wait429, leg.delay)
            inflight = self.sim.market.inflight[leg.endpoint_id] + 1
            if inflight >= CAP_MIN:
                st.cap = max(CAP_MIN, CAP_SHRINK * inflight)
        st.fails += 1
        # (capped doublings: 2 ** n overflows a float past ~1,000 failures in a row)
        st.backoff_until = now + min(BACKOFF_S * 2 ** min(st.fails - 1, 64), BACKOFF_MAX_S)

    def on_first_token(self, run: Run, leg: Leg, now: float) -> None:
        st = self.stats[leg.endpoint_id]
        st.r429 = _ewma(st.r429, 0.0)
        st.err = _ewma(st.err, 0.0)
        st.ttft = _ewma(st.ttft, leg.delay)
        st.fails = 0
        if st.cap != float("inf"):
            st.cap += CAP_GROWTH

    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        request = run.request
        st = self.stats[leg.endpoint_id]
        seconds = max(now - leg.start, 1e-3)
        st.tps = _ewma(st.tps, request.output_tokens / seconds)
        st.hit = _ewma(st.hit, leg.cached / request.prompt_tokens)
        model = request.model
        self.served_cost[model] = _ewma(self.served_cost[model], run.cost)
        self.served_s[model] = _ewma(self.served_s[model], now - request.t)
        self.outputs.observe(self.models[model].slug, request.bucket, request.output_tokens)
        if request.cache_key >= 0:
            self.pins[request.cache_key] = (leg.endpoint_id, now)
