"""The live gateway's ``Router`` for the gateway session: the core's ``SmartRouter``
(routing/core/router.py, the same rules the simulator routes with) driven for one
request, and its ``Stores``:

- ``hedge_budget_left``: the process's snapshot of the database's budget;
  ``reserve``: True, since the shell makes the atomic reservation as the hedge leg opens
  (``call.py``: ``hedge_budget_reserve``, refused legs never start);
- ``emit``: the lessons are learnt by the process's knowledge at once
  (``memory.knowledge.learn``), shared with the other processes through the outbox
  (speed samples, marks, prompt prefixes), and a hedge race's settlement is kept for the
  shell to write once the call is over (``settlements``: the losers' billed cost).

What is left here is live I/O: the attempt record's usage, the billing-exact cost of a
hedge loser (Decimal), the outbox rows and a ``models`` fallback's re-plan.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from decimal import Decimal

from billing.pricing import call_cost
from common.lean_sql import new_row

from ..catalog import EndpointRoute
from ..core.hedge import HedgeDecision
from ..core.knowledge import RoutingKnowledge
from ..core.lessons import HedgeSettled, Lesson, Served
from ..core.router import ServedCall, SmartRouter
from ..core.session import GatewaySession, HedgeStart, Leg, Step
from ..core.types import RouteChoice
from ..memory import memory
from ..models import SpeedSample
from ..outbox import OUTBOX, Outbox, shared_mark
from .accept import Accepted, replan
from .relay import tool_calls_of

_rng = random.Random()
# A hedge leg's attempt reason starts with the race's verdict on its primary.
HEDGE_STALLED = "hedge: primary stalled"
HEDGE_NOT_STALLED = "hedge: primary not stalled"
REASON_MAX = 128  # billing.models.Attempt.reason


class LiveStores:
    """The core router's ``Stores`` for one live request (see the module doc)."""

    def __init__(self, knowledge: RoutingKnowledge, outbox: Outbox = OUTBOX) -> None:
        self.knowledge = knowledge
        self.outbox = outbox
        self.settlements: list[tuple[Decimal, Decimal]] = []  # (reserved, spent) to settle

    def hedge_budget_left(self, day: int) -> float:
        return memory.hedge_budget_left(day)

    def reserve(self, usd: float, day: int) -> bool:
        return True  # the shell reserves atomically in the database as the leg opens

    def emit(self, lessons: Sequence[Lesson], now: float) -> None:
        knowledge, outbox = self.knowledge, self.outbox
        for lesson in lessons:
            if type(lesson) is HedgeSettled:
                spent = Decimal(str(lesson.spent))  # never above the reservation
                self.settlements.append((Decimal(str(lesson.reserved)), spent))
                continue
            for mark in knowledge.learn(lesson, now):
                outbox.marks.put(shared_mark(mark, now, knowledge.config.unusable_window_s))
            if type(lesson) is Served:
                share_served(lesson, now, outbox)


class LiveRouter:
    """One request's router: the session's ``Router`` over the core's (module doc)."""

    def __init__(self, accepted: Accepted) -> None:
        self.accepted = accepted
        knowledge = memory.current()
        self.stores = LiveStores(knowledge)
        self.core = SmartRouter(knowledge.config, knowledge, self.stores, _rng)
        self.hedge_cost_usd = Decimal(0)  # the hedge losers' billed cost (the row's)
        self.race: HedgeStart | None = None
        self.stopped = False  # a failure another endpoint cannot fix
        self.model_start = 0  # session.tried index where the current model's attempts start

    # --- where to go -----------------------------------------------------------------------
    def _next(self, session: GatewaySession) -> Step | None:
        if self.stopped:
            return None
        return self.core.next_attempt(self.accepted.plan, session.tried, self.model_start)

    def first(self, session: GatewaySession, now: float) -> Step | None:
        return self._next(session)

    def next_attempt(self, session: GatewaySession, now: float) -> Step | None:
        return self._next(session)

    def next_model(self, session: GatewaySession, now: float) -> Accepted | None:
        """Every endpoint of the model failed before the first token: the request on its
        next ``models`` fallback (re-planned from the snapshot), with its own attempts."""
        if self.stopped:
            return None
        accepted = replan(self.accepted)
        if accepted is None:
            return None
        self.accepted = accepted
        session.plan = accepted.plan
        self.model_start = len(session.tried)
        return accepted

    def choice(self, endpoint_id: int) -> RouteChoice:
        return next(c for c in self.accepted.plan.choices if c.endpoint_id == endpoint_id)

    def route(self, endpoint_id: int) -> EndpointRoute:
        return self.accepted.model.by_id[endpoint_id]

    def timeout_s(self, endpoint_id: int) -> float | None:
        """The first-token budget of an attempt (``SmartRouter.timeout_s``)."""
        return self.core.timeout_s(self.accepted.plan, endpoint_id)

    # --- hedging (R3) ----------------------------------------------------------------------
    def hedge_decision(self, session: GatewaySession, now: float) -> HedgeDecision:
        primary = None if session.primary is None else session.primary.endpoint_id
        accepted = self.accepted
        return self.core.hedge_decision(
            accepted.plan, accepted.chat.stream, primary, accepted.features
        )

    def start_hedge(self, session: GatewaySession, now: float) -> HedgeStart | None:
        if session.primary is None:
            return None
        accepted = self.accepted
        primary = session.primary.endpoint_id
        plan, features, tried = accepted.plan, accepted.features, session.tried
        now_unix = time.time()
        self.race = self.core.start_hedge(
            plan, features, primary, tried, now_unix, self.model_start
        )
        return self.race

    def end_hedge(self, session: GatewaySession, now: float) -> None:
        race, self.race = self.race, None
        if race is not None:
            self.core.end_hedge(race, session.hedge_cost, time.time())
            self.judge_primary(session)

    def judge_primary(self, session: GatewaySession) -> None:
        """A race was won: whether the primary was in fact stalled (the hedge leg won,
        or the primary's first token came later than its late reference,
        ``SmartRouter.primary_stalled``), written on the hedge leg's attempt record."""
        primary, winner = session.primary, session.winner
        if primary is None or winner is None:
            return
        ttft_ms = primary.data.record.ttft_ms if winner is primary else None
        ttft_s = None if ttft_ms is None else ttft_ms / 1000
        plan, features = self.accepted.plan, self.accepted.features
        stalled = self.core.primary_stalled(plan, primary.endpoint_id, ttft_s, features)
        verdict = HEDGE_STALLED if stalled else HEDGE_NOT_STALLED
        for leg in session.legs:
            if leg.hedge_leg and leg.data is not None:
                record = leg.data.record
                record.reason = f"{verdict}; {record.reason}"[:REASON_MAX]

    def loser_cost(self, endpoint_id: int) -> Decimal:
        """What a cancelled leg is billed: the prompt it was sent, at its input/cache prices."""
        accepted = self.accepted
        return call_cost(
            prices=self.route(endpoint_id).prices,
            prompt_tokens=accepted.prompt_tokens_estimate,
            cached_tokens=accepted.cached_tokens.get(endpoint_id, 0),
            completion_tokens=0,
        )

    def on_cancel(self, session: GatewaySession, leg: Leg) -> float:
        self.hedge_cost_usd += self.loser_cost(leg.endpoint_id)
        return self.core.on_cancel(self.route(leg.endpoint_id).info, self.accepted.features)

    # --- what it teaches -------------------------------------------------------------------
    def on_first_token(self, session: GatewaySession, leg: Leg, now: float) -> None:
        return None

    def on_failure(self, session: GatewaySession, leg: Leg, now: float) -> None:
        if leg.kind == "request":  # not sent: the gateway cannot encode it for this upstream
            return  # the request's error (another protocol may take it): nothing to learn
        peers = tuple(self.accepted.model.by_id)
        record = getattr(leg.data, "record", None)
        retry_after_s = getattr(record, "retry_after_s", None)
        _, retry = self.core.on_failure(
            leg.endpoint_id, leg.kind, leg.status, peers, time.time(), retry_after_s
        )
        if not retry:
            self.stopped = True

    def on_cut(self, session: GatewaySession, leg: Leg, now: float) -> None:
        """The provider cut the stream after its first token: a failure, no sample."""
        self.core.on_cut(leg.endpoint_id, tuple(self.accepted.model.by_id), time.time())

    def on_success(self, session: GatewaySession, leg: Leg, now: float) -> None:
        """``leg.data`` is the shell's attempt record (ttft_ms, duration_ms, usage)."""
        unix = time.time()
        self.core.on_success(served_call(self.accepted, leg), unix)
        calls = tool_calls_of(leg.data.rewriter)  # [] unless the request had tools (O5)
        if calls:
            self.core.on_tool_calls(leg.endpoint_id, self.accepted.chat.body["tools"], calls, unix)


def served_call(accepted: Accepted, leg: Leg) -> ServedCall:
    """What the gateway saw of a served call: the attempt's usage (reported, else
    estimated) and timings; the prompt's first and last prefixes are remembered."""
    attempt = leg.data
    prompt, cached, completion, estimated = attempt.usage_numbers(accepted)
    ttft_ms = attempt.ttft_ms
    hashes = accepted.prefix_hashes
    prefixes = ()
    if hashes:
        first, last = hashes[0][0], hashes[-1][0]
        prefixes = (first,) if first == last else (first, last)
    return ServedCall(
        endpoint_id=leg.endpoint_id,
        model=accepted.model.info.slug,
        bucket=accepted.plan.bucket,
        ttft_s=None if ttft_ms is None else ttft_ms / 1000,
        streaming_s=0.0 if ttft_ms is None else ((attempt.duration_ms or 0) - ttft_ms) / 1000,
        raw_prompt_tokens=accepted.raw_prompt_tokens,
        prompt_estimate=accepted.prompt_tokens_estimate,
        prompt=prompt,
        cached=cached,
        completion=completion,
        estimated=estimated,
        max_tokens=accepted.chat.max_tokens,
        prefixes=prefixes,
        cache_ttl_s=accepted.model.by_id[leg.endpoint_id].cache_ttl_s,
    )


def share_served(lesson: Served, now: float, outbox: Outbox = OUTBOX) -> None:
    """A served call's speed sample (for the other processes' speed summaries) and the
    prefixes it cached, through the outbox."""
    if lesson.ttft_s is not None:
        # A plain row, not a model instance: built on the event loop for every call.
        sample = new_row(
            SpeedSample,
            endpoint_id=lesson.endpoint_id,
            bucket=lesson.sample_bucket,
            ttft_ms=round(lesson.ttft_s * 1000),
            prompt_tokens=lesson.prompt_tokens,
            output_tokens_per_s=lesson.tps,
            cached=lesson.cached,
        )
        outbox.samples.put(sample)
    if lesson.prefixes:
        expires_at = now + lesson.cache_ttl_s
        for prefix_hash in lesson.prefixes:
            outbox.prefixes.put((prefix_hash, lesson.endpoint_id, expires_at))
