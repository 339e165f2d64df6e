"""The discrete-event loop: arrivals (in order, from the shared traffic), the gateway
sessions' attempt and hedge events (shell.py; a heapq on (time, sequence)), timed market
events and probes, all on one virtual clock; nothing sleeps.

Probes (R5) run for the strategies that use them (see probes.py).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

from routing.core.hedge import NO_HEDGE, HedgeDecision

from .market import Market
from .metrics import Metrics
from .probes import Prober
from .scenario import Scenario
from .shell import Shell
from .strategies import make_strategy
from .strategies.base import SimContext
from .traffic import Traffic

Progress = Callable[[int, int], None]


def _no_hedge(run: object, now: float) -> HedgeDecision:
    """``gateway.hedging: false``: the session never races a second leg."""
    return NO_HEDGE


class Engine(Shell):
    """One strategy over one traffic; ``run()`` returns its Metrics."""

    def __init__(
        self,
        scenario: Scenario,
        traffic: Traffic,
        strategy: str,
        seed: int,
        *,
        progress: Progress | None = None,
        reference: bool = True,
    ) -> None:
        super().__init__()
        self.scenario = scenario
        self.traffic = traffic
        self.seed = seed
        self.progress = progress
        self.reference = reference
        self.market = Market(scenario, seed)
        start = scenario.start_epoch
        self.sim = SimContext(
            scenario, self.market, seed, lambda: self.now, lambda: start + self.now
        )
        self.strategy = make_strategy(strategy, self.sim)
        provider_of = {s.endpoint_id: s.provider for s in self.market.endpoints[1:]}
        self.metrics = Metrics({0: "-", **provider_of}, clock=lambda: self.now)
        if not scenario.gateway.get("hedging", True):  # gateway.hedging false: no hedge
            self.strategy.hedge_decision = _no_hedge  # type: ignore[method-assign]
        self.prober = Prober(self)
        self.wall_s = 0.0

    def run(self) -> Metrics:
        started = time.perf_counter()
        requests = self.traffic.requests
        end = self.traffic.duration_s
        for number, event in enumerate(self.scenario.events):
            if event.at_s <= end:
                self.at(event.at_s, self._event, (number, event, True))
            if event.until_s is not None and event.until_s <= end:
                self.at(event.until_s, self._event, (number, event, False))
        self.prober.start()
        heap, pop, arrive = self.heap, heapq.heappop, self.arrive
        total, index, report_every = len(requests), 0, max(1, len(requests) // 100)
        while index < total or heap:
            if heap and (index >= total or heap[0][0] <= requests[index].t):
                t, _, action, arg = pop(heap)
                self.now = t
                action(arg)
            else:
                request = requests[index]
                index += 1
                self.now = request.t
                arrive(request)
                if self.progress is not None and index % report_every == 0:
                    self.progress(index, total)
        if self.progress is not None:
            self.progress(total, total)
        self.wall_s = time.perf_counter() - started
        return self.metrics

    def _event(self, arg: tuple) -> None:
        number, event, starting = arg
        self.market.apply_event(number, event, starting)
