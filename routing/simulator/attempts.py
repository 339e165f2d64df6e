"""A request's life on the virtual clock: attempts, retries and hedge races.

Mirrors routing/proxy/race.py: attempts follow the strategy (for plan-based ones the
plan, never one endpoint twice, at most max_attempts); in the first round a long
stream may get a second leg (at once, or after the hedge delay if the first leg has
neither answered nor failed by then). The first leg to produce a first token wins and
streams; the others are cancelled at that instant (the provider bills their prompt:
hedge spend, platform cost). A failed leg ends the race only when no other leg is
alive; then the next round starts at once (or after the strategy's back-off).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count
from typing import Any

from routing.core import RoutingError

from .market import Market
from .metrics import Metrics
from .runs import Leg, Run
from .strategies.base import Strategy
from .traffic import SimRequest


class Flow:
    """Event scheduling plus the attempt/race/retry logic (the engine extends it)."""

    market: Market
    strategy: Strategy
    metrics: Metrics

    def __init__(self) -> None:
        self.now = 0.0
        self.heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = count()
        self.reference = True  # compute each request's best realised TTFT
        self.finished = 0

    def at(self, t: float, action: Callable[[Any], None], arg: Any) -> None:
        heapq.heappush(self.heap, (t, next(self._seq), action, arg))

    # --- arrival -------------------------------------------------------------------------
    def arrive(self, request: SimRequest) -> None:
        run = Run(request)
        now = self.now
        if self.reference:
            run.best_ttft = self._best_realised(request, now)
        try:
            step = self.strategy.first(run, now)
        except RoutingError:
            step = None
        if step is None:
            self.finish(run, failed=True)
            return
        endpoint_id, delay = step
        run.first_endpoint = endpoint_id
        if delay > 0:
            self.at(now + delay, self._start_first, run)
        else:
            self._start_first(run)

    def _best_realised(self, request: SimRequest, now: float) -> float | None:
        market = self.market
        best = None
        for state in market.by_model[request.model]:
            kind, _, delay, _ = market.outcome(request, state.endpoint_id, now)
            if kind == "ok" and (best is None or delay < best):
                best = delay
        return best

    def _start_first(self, run: Run) -> None:
        now = self.now
        run.primary = self.start_leg(run, run.first_endpoint, hedge_leg=False)
        decision = self.strategy.hedge_decision(run, now)
        if decision.mode == "immediate":
            self._try_hedge(run)
        elif decision.mode == "delayed":
            self.at(now + decision.delay_s, self._hedge_timer, run)

    # --- legs ----------------------------------------------------------------------------
    def start_leg(self, run: Run, endpoint_id: int, hedge_leg: bool) -> Leg:
        now = self.now
        nth = run.tries_at(endpoint_id)
        outcome = self.market.outcome(run.request, endpoint_id, now, nth)
        leg = Leg(run, endpoint_id, now, outcome, nth, hedge_leg)
        run.tried.append(endpoint_id)
        run.active.append(leg)
        self.market.inflight[endpoint_id] += 1
        self.at(now + leg.delay, self._first_token if leg.kind == "ok" else self._failed, leg)
        return leg

    def _hedge_timer(self, run: Run) -> None:
        primary = run.primary
        if run.winner is None and not run.done and primary in run.active:
            self._try_hedge(run)

    def _try_hedge(self, run: Run) -> None:
        endpoint_id = self.strategy.start_hedge(run, self.now)
        if endpoint_id is not None:
            run.hedged = True
            self.metrics.hedge_legs += 1
            self.start_leg(run, endpoint_id, hedge_leg=True)

    def _first_token(self, leg: Leg) -> None:
        if leg.cancelled:
            return
        run, now, market = leg.run, self.now, self.market
        run.winner = leg
        run.ttft_at = now
        run.active.remove(leg)
        market.write_cache(leg.endpoint_id, run.request, now)
        for loser in run.active:  # hedge race lost: cancel, the provider bills the prompt
            loser.cancelled = True
            market.inflight[loser.endpoint_id] -= 1
            self.metrics.hedge_spend += market.cost(loser.endpoint_id, run.request, loser.cached, 0)
            self.strategy.on_cancel(run, loser)
        run.active = []
        if run.hedge_reserved is not None:
            self.strategy.end_hedge(run, now)
            run.hedge_reserved = None
        self.strategy.on_first_token(run, leg, now)
        request = run.request
        run.cost = market.cost(leg.endpoint_id, request, leg.cached, request.output_tokens)
        self.at(now + market.stream_s(leg.endpoint_id, request.output_tokens), self._end, leg)

    def _failed(self, leg: Leg) -> None:
        if leg.cancelled:
            return
        run, now = leg.run, self.now
        self.market.inflight[leg.endpoint_id] -= 1
        run.active.remove(leg)
        run.lost_s += now - leg.start
        run.failures += 1
        if leg.status == 429:
            run.hit429 = True
        self.strategy.on_failure(run, leg, now)
        if run.active:
            return  # the other leg of the race is still alive
        if run.hedge_reserved is not None:
            self.strategy.end_hedge(run, now)
            run.hedge_reserved = None
        run.first_round = False
        step = self.strategy.next_attempt(run, now)
        if step is None:
            self.finish(run, failed=True)
            return
        endpoint_id, delay = step
        if delay > 0:
            self.at(now + delay, self._retry, (run, endpoint_id))
        else:
            self.start_leg(run, endpoint_id, hedge_leg=False)

    def _retry(self, arg: tuple[Run, int]) -> None:
        run, endpoint_id = arg
        self.start_leg(run, endpoint_id, hedge_leg=False)

    def _end(self, leg: Leg) -> None:
        run, now = leg.run, self.now
        self.market.inflight[leg.endpoint_id] -= 1
        self.strategy.on_success(run, leg, now)
        self.finish(run, failed=False)

    def finish(self, run: Run, failed: bool) -> None:
        run.done = True
        self.metrics.record(run, self.now, failed)
        self.finished += 1
