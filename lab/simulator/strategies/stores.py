"""The simulated ``Stores`` of the core router and the glue from a simulated request to
the core's knowledge: the gateway's knowledge is ``routing.core.RoutingKnowledge``
(updated in place, on the virtual clock), its hedge budget an ``InMemoryHedgeBudget``.

``LearnsFromCalls`` gives a strategy the gateway's learning (what the core's router
teaches from each call and probe) and its probe sizes (``core.probe.probe_sizes``).
"""

from __future__ import annotations

from collections.abc import Sequence

from routing.core import InMemoryHedgeBudget, RequestFeatures
from routing.core.config import GatewayConfig
from routing.core.knowledge import RoutingKnowledge
from routing.core.lessons import HedgeSettled, Lesson, Probed
from routing.core.router import ServedCall, SmartRouter

from ..market import Market
from ..runs import Leg, Run


def earlier_turns(request) -> int:
    """Turns of the request's conversation before it (``SimRequest.earlier_turns``)."""
    return request.earlier_turns()


class SimStores:
    """The hedge budget in memory, the lessons learnt in place at once."""

    def __init__(self, knowledge: RoutingKnowledge, budget: InMemoryHedgeBudget | None) -> None:
        self.knowledge = knowledge
        self.budget = budget

    def hedge_budget_left(self, day: int) -> float:
        return self.budget.remaining() if self.budget is not None else 0.0

    def reserve(self, usd: float, day: int) -> bool:
        return self.budget is not None and self.budget.try_reserve(usd)

    def emit(self, lessons: Sequence[Lesson], now: float) -> None:
        knowledge = self.knowledge
        for lesson in lessons:
            if type(lesson) is HedgeSettled and self.budget is not None:
                self.budget.settle(lesson.reserved, lesson.spent, lesson.day)
            else:
                knowledge.learn(lesson, now)


def sim_router(
    config: GatewayConfig, market: Market, rng, budget: InMemoryHedgeBudget | None = None
) -> SmartRouter:
    """A core router over a fresh knowledge of this market (our calls in flight are the
    market's count of this strategy's calls)."""
    knowledge = RoutingKnowledge(config, market.inflight)
    return SmartRouter(config, knowledge, SimStores(knowledge, budget), rng)


class LearnsFromCalls:
    """Strategy hooks that feed the core router's knowledge (the host class sets
    ``self.router``, ``self.models`` and ``self.sim``)."""

    router: SmartRouter
    models: list
    sim: object

    def features_for(self, run: Run, now: float) -> RequestFeatures:
        request = run.request
        market: Market = self.sim.market  # type: ignore[attr-defined]
        return self.router.features(
            self.models[request.model].slug,
            request.prompt_tokens,
            request.lookup_prefixes(),
            market.ids_by_model[request.model],
            now,
            stream=request.stream,
            earlier=earlier_turns(request),
            customer=request.class_index,
        )

    def _peers(self, endpoint_id: int) -> tuple[int, ...]:
        market: Market = self.sim.market  # type: ignore[attr-defined]
        return market.ids_by_model[market.endpoints[endpoint_id].model]

    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        self.router.on_failure(
            leg.endpoint_id, leg.kind, leg.status, self._peers(leg.endpoint_id), now
        )

    def on_cut(self, run: Run, leg: Leg, now: float) -> None:
        self.router.on_cut(leg.endpoint_id, self._peers(leg.endpoint_id), now)

    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        self.router.on_success(served_call(self, run, leg, now), now)

    def probe_typical(self, endpoint_id: int, bucket: str, now: float) -> float | None:
        return self.router.knowledge.summary(now).typical(endpoint_id, bucket)

    def probe_sizes(self, endpoint_id: int, sizes: list[int], now: float) -> list[int]:
        market: Market = self.sim.market  # type: ignore[attr-defined]
        model = market.endpoints[endpoint_id].model
        infos = market.infos[model]
        info = next(e for e in infos if e.endpoint_id == endpoint_id)
        return self.router.knowledge.probe_sizes(info, self.models[model], infos, sizes, now)

    def on_probe(self, probe: Probed, now: float) -> None:
        self.router.stores.emit((probe,), now)


def served_call(strategy: LearnsFromCalls, run: Run, leg: Leg, now: float) -> ServedCall:
    """What the gateway saw of a served simulated call (its usage is exact)."""
    request = run.request
    market: Market = strategy.sim.market  # type: ignore[attr-defined]
    endpoint_id = leg.endpoint_id
    prompt = request.prompt_tokens
    return ServedCall(
        endpoint_id=endpoint_id,
        model=strategy.models[request.model].slug,
        bucket=request.bucket,
        ttft_s=leg.delay,
        streaming_s=now - leg.start - leg.delay,
        raw_prompt_tokens=prompt,
        prompt_estimate=prompt,
        prompt=prompt,
        cached=leg.cached,
        completion=market.output_tokens(endpoint_id, request),
        estimated=False,
        max_tokens=None,
        prefixes=tuple(h for h, _ in request.remembered_prefixes()),
        cache_ttl_s=market.endpoints[endpoint_id].catalog_cache_ttl_s,
    )
