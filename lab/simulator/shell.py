"""The simulator's shell around the gateway session (routing/core/session.py).

The session decides a request's attempts, retries and hedge races exactly as it does
for the live gateway (whose shell is routing/gateway/call.py); the strategy is its
router. This shell turns the session's actions into events on the virtual clock:

- ``OpenLeg``: the market draws the leg's outcome at once (from then on the leg counts
  in flight); at start + delay it produces its first token (``session.first_token``)
  or fails (``session.failed``);
- ``StartTimer``: a heap event calling ``session.timer``;
- ``CancelLeg``: a hedge leg that lost the race leaves the flight; the provider bills
  its prompt (hedge spend, platform cost);
- ``Serve``: the serving provider caches the prompt and bills the call; the stream
  ends after its output time (``session.ended``), or earlier when the provider cuts it
  (endpoint ``cut_rate``: ``session.ended(complete=False)``, retried when nothing
  reached the client yet, i.e. a reply assembled whole);
- ``Done``: the request's metrics record (``GiveUp`` needs nothing: nobody to answer).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count
from typing import Any

from routing.core import RoutingError
from routing.core.session import Action, CancelLeg, Done, OpenLeg, Serve, StartTimer

from .market import OK, Market
from .metrics import Metrics, hedge_split, is_long_stream
from .runs import Leg, Run
from .scenario import Scenario
from .strategies.base import Strategy
from .traffic import SimRequest, Traffic


class Shell:
    """The virtual clock's event heap and the session's actions on it (the engine
    extends it and sets the attributes declared here)."""

    scenario: Scenario
    traffic: Traffic
    seed: int
    market: Market
    strategy: Strategy
    metrics: Metrics

    def __init__(self) -> None:
        self.now = 0.0
        self.heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = count()
        self.reference = True  # compute each request's best realised TTFT

    def at(self, t: float, action: Callable[[Any], None], arg: Any) -> None:
        heapq.heappush(self.heap, (t, next(self._seq), action, arg))

    # --- arrival -------------------------------------------------------------------------
    def arrive(self, request: SimRequest) -> None:
        run = Run(request, self.strategy)
        now = self.now
        if self.reference:
            run.best_ttft = self._best_realised(request, now)
        try:
            actions = run.start(now)
        except RoutingError:  # the strategy found no endpoint at all: refused at once
            self.metrics.record(run, now, True)
            return
        self.apply(run, actions)

    def _best_realised(self, request: SimRequest, now: float) -> float | None:
        market = self.market
        best = None
        for state in market.by_model[request.model]:
            kind, _, delay, _ = market.outcome(request, state.endpoint_id, now)
            if kind == OK and (best is None or delay < best):
                best = delay
        return best

    # --- actions -------------------------------------------------------------------------
    def apply(self, run: Run, actions: list[Action]) -> None:
        for action in actions:
            match action:
                case OpenLeg(leg):
                    self._open(run, leg)
                case StartTimer(name, at, endpoint_id):
                    self.at(at, self._timer, (run, name, endpoint_id))
                case CancelLeg(leg):
                    market = self.market
                    market.inflight[leg.endpoint_id] -= 1
                    cost = market.cost(leg.endpoint_id, run.request, leg.cached, 0)
                    self.metrics.hedge_spend += cost
                    if is_long_stream(run.request):
                        self.metrics.long_stream_hedge_spend += cost
                    self._hedge_split(run, cost)
                case Serve(leg):
                    self._serve(run, leg)
                case Done(outcome):
                    self.metrics.record(run, self.now, outcome != "success")

    def _open(self, run: Run, leg: Leg) -> None:
        now, market = self.now, self.market
        leg.data = market.outcome(run.request, leg.endpoint_id, now, leg.nth)
        market.inflight[leg.endpoint_id] += 1
        if leg.data[0] == OK:
            market.accepted(leg.endpoint_id, run.request.prompt_tokens, now)
        if leg.hedge_leg:
            self.metrics.hedge_legs += 1
            self._hedge_split(run, None)
        self.at(now + leg.delay, self._resolve, (run, leg))

    def _hedge_split(self, run: Run, spend_usd: float | None) -> None:
        """A hedge leg opened (``spend_usd`` None) or a lost leg's cost, by whether the
        market drew a stall for the request's primary leg."""
        primary = run.primary
        if primary is None:
            return
        stalled = self.market.stalled(run.request, primary.endpoint_id, primary.nth)
        hedge_split(self.metrics, run.request.bucket_index, stalled, spend_usd)

    def _serve(self, run: Run, leg: Leg) -> None:
        now, market, request = self.now, self.market, run.request
        market.write_cache(leg.endpoint_id, request, now)
        output = market.output_tokens(leg.endpoint_id, request)
        run.output_tokens = output
        cut = market.cut_after(request, leg.endpoint_id, leg.nth)
        if cut is not None and cut < output:
            # the provider bills what it sent; a stream the customer saw is theirs (R6.1),
            # a reply being assembled whole is retried and its cost is platform spend
            cost = market.cost(leg.endpoint_id, request, leg.cached, cut)
            end = now + market.stream_s(leg.endpoint_id, cut)
            self.at(end, self._cut, (run, leg, cost))
            return
        run.cost = market.cost(leg.endpoint_id, request, leg.cached, output)
        end = now + market.stream_s(leg.endpoint_id, output)
        self.at(end, self._end, (run, leg))

    # --- events ------------------------------------------------------------------------
    def _resolve(self, arg: tuple[Run, Leg]) -> None:
        """The leg's drawn outcome is due: its first token, or its failure."""
        run, leg = arg
        if leg.cancelled:
            return
        kind, status, _, _ = leg.data
        if kind == OK:
            self.apply(run, run.first_token(leg.no, self.now))
            return
        self.market.inflight[leg.endpoint_id] -= 1
        if status == 429:
            run.hit429 = True
        self.apply(run, run.failed(leg.no, kind, status, self.now))

    def _timer(self, arg: tuple[Run, str, int | None]) -> None:
        run, name, endpoint_id = arg
        self.apply(run, run.timer(name, self.now, endpoint_id))

    def _cut(self, arg: tuple[Run, Leg, float]) -> None:
        """The provider cut the serving stream (``cut_rate``): a streamed reply ends
        incomplete (``session.ended(complete=False)``: the strategy's ``on_cut``); an
        assembled one is a failed attempt and the next one follows."""
        run, leg, cost = arg
        self.market.inflight[leg.endpoint_id] -= 1
        self.metrics.cut_streams += 1
        stream = run.request.stream
        if stream:
            run.cost = cost
        else:
            self.metrics.cut_spend += cost
        self.apply(run, run.ended(leg.no, self.now, complete=False, retry=not stream))

    def _end(self, arg: tuple[Run, Leg]) -> None:
        run, leg = arg
        self.market.inflight[leg.endpoint_id] -= 1
        self.apply(run, run.ended(leg.no, self.now, complete=True))
