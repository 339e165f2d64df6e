"""The live gateway's ``Router`` for the gateway session: the plan decides where to go
(R4 retries over the plan, R3 hedge partner), and every event teaches the process's
routing memory at once, shared with the other processes through the outbox.

What a call teaches (the simulator's smart strategy learns the same):
- a failure that marks (R2.7, ``classify_failure``) counts in the endpoint's recent
  error rate (``memory.health``) and makes it unusable when ``Reliability`` says so (a
  run of failures, low volume, or a rate far above its peers'); a stream the provider cut
  after its first token counts the same way (``on_cut``);
- a served call that ended whole gives a TTFT sample (R2.1) of the serving attempt, its
  throughput, ends the endpoint's streak of refusals, remembers the prompt's prefixes at
  that endpoint (R2.3) and calibrates the token estimates. A stream cut by its provider
  teaches no speed (its TTFT said nothing of a call that failed);
- a hedge loser costs its prompt at its prices, charged to the daily hedge budget;
- with ``ROUTING_CONCURRENCY_CAPS``, a 429 teaches the endpoint a concurrency cap (0.9 x
  this process's calls still in flight there, ``core.capacity``); while the calls in
  flight reach it, plans put the endpoint last (spill-over before the provider refuses).
"""

from __future__ import annotations

import time
from decimal import Decimal

from django.conf import settings

from billing.pricing import call_cost
from common.lean_sql import new_row

from .. import budget
from ..catalog import EndpointRoute
from ..core.hedge import NO_HEDGE, HedgeDecision, hedge_partner, hedge_policy
from ..core.retry import RetryPolicy, classify_failure
from ..core.router import failure_kind
from ..core.session import GatewaySession, Leg, Step
from ..core.speed import mostly_cached
from ..core.types import RouteChoice, bucket_for
from ..memory import memory
from ..models import SpeedSample
from ..outbox import MarkLesson, mark_writer, prefix_writer, sample_writer
from .accept import Accepted, replan


class LiveRouter:
    """One request's router (see the module doc)."""

    def __init__(self, accepted: Accepted) -> None:
        self.accepted = accepted
        self.policy = RetryPolicy(max_attempts=settings.UBERLLM["MAX_ATTEMPTS"])
        self.hedge_cost_usd = Decimal(0)
        self.settlements: list[tuple[Decimal, Decimal]] = []  # (reserved, spent) to settle
        self.stopped = False  # a failure another endpoint cannot fix
        self.model_start = 0  # session.tried index where the current model's attempts start

    # --- where to go ---------------------------------------------------------------------
    def _next(self, session: GatewaySession) -> Step | None:
        if self.stopped:
            return None
        tried = session.tried[self.model_start :]
        choice = self.policy.next_choice(self.accepted.plan, tried)
        return None if choice is None else (choice.endpoint.endpoint_id, 0.0)

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

    def first(self, session: GatewaySession, now: float) -> Step | None:
        return self._next(session)

    def next_attempt(self, session: GatewaySession, now: float) -> Step | None:
        return self._next(session)

    def hedge_decision(self, session: GatewaySession, now: float) -> HedgeDecision:
        conf = settings.UBERLLM
        if conf["HEDGE_DAILY_BUDGET_USD"] <= 0:
            return NO_HEDGE
        return hedge_policy(
            self.accepted.plan.bucket, self.accepted.chat.stream, float("inf"), 0.0,
            delayed_from_tokens=conf["HEDGE_DELAYED_FROM_TOKENS"],
            immediate_from_tokens=conf["HEDGE_IMMEDIATE_FROM_TOKENS"],
            delay_s=conf["HEDGE_DELAY_S"],
        )  # fmt: skip

    def choice(self, endpoint_id: int) -> RouteChoice:
        return next(c for c in self.accepted.plan.choices if c.endpoint_id == endpoint_id)

    def route(self, endpoint_id: int) -> EndpointRoute:
        return self.accepted.model.by_id[endpoint_id]

    def loser_cost(self, endpoint_id: int) -> Decimal:
        """What a cancelled leg costs: the prompt it was sent, at its input/cache prices."""
        accepted = self.accepted
        return call_cost(
            prices=self.route(endpoint_id).prices,
            prompt_tokens=accepted.prompt_tokens_estimate,
            cached_tokens=accepted.cached_tokens.get(endpoint_id, 0), completion_tokens=0,
        )  # fmt: skip

    def start_hedge(self, session: GatewaySession, now: float) -> int | None:
        """The partner if the budget left (snapshot) covers either leg losing; the shell
        makes the atomic reservation before the leg opens."""
        attempts = len(session.tried) - self.model_start
        if attempts >= self.policy.max_attempts or session.primary is None:
            return None
        partner = hedge_partner(self.accepted.plan, self.choice(session.primary.endpoint_id))
        if partner is None or partner.endpoint_id in session.tried:
            return None
        reserve = max(self.loser_cost(session.primary.endpoint_id),
                      self.loser_cost(partner.endpoint_id))  # fmt: skip
        if float(reserve) > memory.hedge_budget_left(budget.utc_today()):
            return None
        session.hedge_reserved = float(reserve)
        return partner.endpoint_id

    def end_hedge(self, session: GatewaySession, now: float) -> None:
        reserved = Decimal(str(session.hedge_reserved))
        self.settlements.append((reserved, min(self.hedge_cost_usd, reserved)))

    # --- what it teaches -----------------------------------------------------------------
    def on_cancel(self, session: GatewaySession, leg: Leg) -> None:
        cost = self.loser_cost(leg.endpoint_id)
        self.hedge_cost_usd += cost
        session.hedge_cost += float(cost)

    def on_first_token(self, session: GatewaySession, leg: Leg, now: float) -> None:
        return None

    def on_failure(self, session: GatewaySession, leg: Leg, now: float) -> None:
        if leg.kind == "request":  # not sent: the gateway cannot encode it for this upstream
            return  # the request's error (another protocol may take it): nothing to learn
        kind, status = failure_kind(leg.kind, leg.status)
        if status == 429 and settings.UBERLLM.get("ROUTING_CONCURRENCY_CAPS"):
            # O3: the provider refused one more than the calls still in flight there
            memory.caps.refused(leg.endpoint_id, memory.inflight[leg.endpoint_id], time.time())
        verdict = classify_failure(status, kind)
        if verdict.mark_unusable:
            self._count_failure(leg.endpoint_id)
        if not verdict.retry:
            self.stopped = True

    def on_cut(self, session: GatewaySession, leg: Leg, now: float) -> None:
        """The provider cut the stream after its first token: a failure (its TTFT is no
        healthy sample, and none is recorded). To be called by the session when a served
        leg ends incomplete."""
        self._count_failure(leg.endpoint_id)

    def _count_failure(self, endpoint_id: int) -> None:
        now = time.time()
        if memory.health.failed(endpoint_id, now, self.accepted.model.by_id):
            until, strikes = memory.mark(endpoint_id, now)
            keep = until - now + settings.UBERLLM["UNUSABLE_WINDOW_S"]
            mark_writer.put(MarkLesson(endpoint_id, until, strikes, keep))

    def on_success(self, session: GatewaySession, leg: Leg, now: float) -> None:
        """``leg.data`` is the shell's attempt record (ttft_ms, duration_ms, usage)."""
        attempt, accepted = leg.data, self.accepted
        slug = accepted.model.info.slug
        prompt, cached, completion, estimated = attempt.usage_numbers(accepted)
        memory.health.served(leg.endpoint_id, time.time())
        memory.caps.served(leg.endpoint_id)
        if memory.served(leg.endpoint_id):
            mark_writer.put(MarkLesson(leg.endpoint_id, 0.0, 0, 1.0))
        if attempt.ttft_ms is not None:
            streaming_s = ((attempt.duration_ms or 0) - attempt.ttft_ms) / 1000
            tps = completion / streaming_s if completion > 1 and streaming_s > 0 else None
            bucket = bucket_for(prompt or accepted.prompt_tokens_estimate)
            # A plain row, not a model instance: built on the event loop for every call.
            sample = new_row(
                SpeedSample, endpoint_id=leg.endpoint_id, bucket=bucket,
                ttft_ms=attempt.ttft_ms, prompt_tokens=prompt, output_tokens_per_s=tps,
                cached=mostly_cached(cached, prompt or accepted.prompt_tokens_estimate),
            )  # fmt: skip
            sample_writer.put(sample)
        if not estimated:
            memory.tokens.observe(slug, accepted.raw_prompt_tokens, prompt)
            cap = accepted.chat.max_tokens
            if cap is None or completion < cap:  # a reply cut at max_tokens says nothing
                memory.output_lengths.observe(slug, leg.endpoint_id, completion)
            memory.outputs.observe(slug, accepted.plan.bucket, completion)
        self._remember_prefixes(leg.endpoint_id)

    def _remember_prefixes(self, endpoint_id: int) -> None:
        hashes = self.accepted.prefix_hashes
        if not hashes:
            return
        expires_at = time.time() + self.route(endpoint_id).cache_ttl_s
        for prefix_hash in {hashes[0][0], hashes[-1][0]}:
            memory.remember_prefix(prefix_hash, endpoint_id, expires_at)
            prefix_writer.put((prefix_hash, endpoint_id, expires_at))
