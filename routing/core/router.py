"""The smart router: every rule around the gateway session, written once.

Where to go (``plan``: R2 with the knowledge's reads), the next attempt (R4, counted
per model), whether and where to hedge and what to reserve (R3), and what each event
teaches (``on_*`` return lessons; ``Stores.emit`` learns and shares them). It returns
values and never assigns into the session: the shells (routing/gateway/router.py,
lab/simulator/strategies/smart.py) keep a request's state and feed the session.

``Stores`` is the router's only port: the hedge budget (``hedge_budget_left``,
``reserve``) and the lessons (``emit``). Live: the database's budget snapshot (the shell
makes the atomic reservation as the leg opens), the outbox and the process's
knowledge; simulated: ``InMemoryHedgeBudget`` and a knowledge updated in place.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .budget import SECONDS_PER_DAY, budget_day
from .config import GatewayConfig
from .hedge import (
    NO_HEDGE,
    HedgeDecision,
    expected_ttft_s,
    hedge_partner,
    hedge_policy,
    hedge_value,
    late_after_s,
    late_share,
    ration_share,
)
from .knowledge import RoutingKnowledge
from .lessons import Cut, Failed, HedgeSettled, Lesson, Served, ToolCallChecked
from .options import RoutingOptions
from .plan import plan_route
from .pricing import request_cost
from .retry import classify_failure
from .session import HedgeStart, Step
from .smart import EXPLORATION
from .speed import mostly_cached, speed_bucket
from .timeouts import first_token_timeout_s
from .toolcalls import check_tool_calls
from .types import (
    BUCKET_LOWER_BOUND,
    EndpointInfo,
    ModelInfo,
    RequestFeatures,
    RouteChoice,
    RoutePlan,
    bucket_for,
)


def _choice(plan: RoutePlan, endpoint_id: int | None) -> RouteChoice:
    """The plan's choice for ``endpoint_id`` (None: the plan's first)."""
    if endpoint_id is None:
        return plan.first
    return next(c for c in plan.choices if c.endpoint_id == endpoint_id)


def _known(expected: dict[int, float | None]) -> dict[int, float]:
    return {k: v for k, v in expected.items() if v is not None}


class Stores(Protocol):
    """What the router reads and writes outside itself."""

    def hedge_budget_left(self, day: int) -> float: ...
    def reserve(self, usd: float, day: int) -> bool: ...
    def emit(self, lessons: Sequence[Lesson], now: float) -> None: ...


def failure_kind(kind: str, status: int | None) -> tuple[str, int | None]:
    """The core's failure kinds (``classify_failure``): connect and timeout stay; any
    other failure before the first token (an HTTP error, a reply broken before it
    reached the client: ``protocol``) is an HTTP failure, 502 without a status."""
    if kind in ("connect", "timeout"):
        return kind, None
    return "http", status or 502


def loser_cost(endpoint: EndpointInfo, prompt_tokens: int, cached_tokens: int) -> float:
    """What a cancelled hedge leg costs: its prompt at its input and cache-read prices
    (no output): the reservation and the settlement of the daily hedge budget (R3.4)."""
    return request_cost(endpoint, prompt_tokens, cached_tokens, 0)


def _explores(plan: RoutePlan, config: GatewayConfig) -> bool:
    """The plan's first choice is an exploration send (R2.6) and the issue-43 rules are on."""
    return config.conversation_horizon and plan.choices[0].reason == EXPLORATION


class SmartRouter:
    """One per process (live) or strategy run (simulator); see the module doc."""

    def __init__(
        self,
        config: GatewayConfig,
        knowledge: RoutingKnowledge,
        stores: Stores,
        rng: random.Random,
    ) -> None:
        self.config = config
        self.knowledge = knowledge
        self.stores = stores
        self.rng = rng

    # --- where to go -----------------------------------------------------------------
    def features(
        self,
        model: str,
        prompt_tokens: int,
        lookup: list[tuple[Hashable, int]],
        endpoint_ids: Sequence[int] | frozenset[int],
        now: float,
        *,
        stream: bool,
        earlier: int,
        customer: Hashable,
        max_tokens: int | None = None,
        required: frozenset[str] = frozenset(),
    ) -> RequestFeatures:
        """The request as routing sees it (``lookup``: its prefixes to check), from what
        the knowledge knows: where they are cached, the model's output sizes and reply
        lengths, the follow-up turns to expect."""
        knowledge = self.knowledge
        cached = knowledge.cached_tokens(lookup, endpoint_ids, now)  # type: ignore[arg-type]
        bucket = bucket_for(prompt_tokens)
        return RequestFeatures(
            prompt_tokens=prompt_tokens,
            expected_output_tokens=knowledge.outputs.expected(model, bucket, max_tokens),
            cached_tokens=cached,
            required_parameters=required,
            stream=stream,
            expected_followup_turns=knowledge.followup_turns(model, earlier, customer, bucket),
            output_factors=knowledge.output_lengths.factors(model),
        )

    def plan(
        self,
        model: ModelInfo,
        endpoints: Sequence[EndpointInfo],
        features: RequestFeatures,
        options: RoutingOptions,
        now: float,
    ) -> RoutePlan:
        """plan_route with what the knowledge knows now (raises RoutingError)."""
        knowledge, config = self.knowledge, self.config
        return plan_route(
            model,
            endpoints,
            features,
            options,
            knowledge.summary(now),
            self._unusable(endpoints, features, now),
            self.rng,
            exploration_rate=config.exploration_rate,
            tuning=config.tuning,
        )

    def _unusable(
        self, endpoints: Sequence[EndpointInfo], features: RequestFeatures, now: float
    ) -> frozenset[int]:
        """The knowledge's unusable endpoints; for a request with tools also the tool-call
        laggards (O5), except on an exploration draw (their only traffic with tools)."""
        unusable = self.knowledge.unusable(now)
        if not self.config.tool_call_checks or "tools" not in features.required_parameters:
            return unusable
        ids = [e.endpoint_id for e in endpoints]
        laggards = self.knowledge.tool_call_laggards(ids, now)
        if not laggards or self.rng.random() < self.config.exploration_rate:
            return unusable
        return unusable | laggards

    def next_attempt(
        self, plan: RoutePlan, tried: Sequence[int], model_start: int = 0
    ) -> Step | None:
        """R4.1: the plan's next endpoint not yet tried, at most ``max_attempts`` per
        model: the attempts at a ``models`` fallback (``tried[model_start:]``) count
        apart, so a fallback model gets its own attempts."""
        attempts = tried[model_start:] if model_start else tried
        if len(attempts) >= self.config.max_attempts:
            return None
        done = set(attempts)
        for choice in plan.choices:
            if choice.endpoint.endpoint_id not in done:
                return choice.endpoint.endpoint_id, 0.0
        return None

    def timeout_s(self, plan: RoutePlan, endpoint_id: int) -> float | None:
        """The first-token budget of an attempt at ``endpoint_id`` (None: not planned)."""
        for choice in plan.choices:
            if choice.endpoint.endpoint_id == endpoint_id:
                config = self.config
                return first_token_timeout_s(
                    choice,
                    floor_s=config.first_token_floor_s,
                    factor=config.first_token_factor,
                    default_s=config.first_token_timeout_s,
                )
        return None

    # --- hedging (R3) ---------------------------------------------------------------------
    def hedge_decision(
        self,
        plan: RoutePlan,
        stream: bool,
        primary_id: int | None = None,
        features: RequestFeatures | None = None,
    ) -> HedgeDecision:
        """R3.1/R3.2 for a leg at ``primary_id`` (default: the plan's first): a delayed
        hedge starts once its first token is late (``late_after``). An exploration send
        is not hedged (issue 43): a partner that wins the race would cancel it before it
        taught what it went for (its first token, the cache it leaves warm)."""
        config = self.config
        if not stream or not config.hedging or _explores(plan, config):
            return NO_HEDGE
        return hedge_policy(
            plan.bucket,
            True,
            float("inf"),
            0.0,
            delayed_from_tokens=config.hedge_delayed_from_tokens,
            immediate_from_tokens=config.hedge_immediate_from_tokens,
            delay_s=self.late_after(plan, _choice(plan, primary_id), features),
        )

    def late_after(
        self,
        plan: RoutePlan,
        choice: RouteChoice,
        features: RequestFeatures | None = None,
        trigger: str | None = None,
    ) -> float:
        """Seconds after which the first token at ``choice`` is late (``late_after_s``
        with the settings: the floor ``hedge_delay_s``, ``hedge_late_factor``,
        ``hedge_trigger``); the reference is its typical TTFT for this prompt's size
        (``reference_for``)."""
        config = self.config
        return late_after_s(
            choice,
            floor_s=config.hedge_delay_s,
            factor=config.hedge_late_factor,
            trigger=config.hedge_trigger if trigger is None else trigger,
            reference_s=self.reference_for(plan, choice, features),
        )

    def reference_for(
        self, plan: RoutePlan, choice: RouteChoice, features: RequestFeatures | None
    ) -> float | None:
        """What ``choice`` normally takes for this request: its window's typical TTFT
        at this prompt's size (``SpeedSummary.typical_at``: the window's size line), in
        the cache state the prompt is expected to have there; None: ``choice``'s own
        figure (``hedge.reference_ttft_s``)."""
        if features is None or choice.typical_ttft_s is None:
            return None
        prompt, endpoint_id = features.prompt_tokens, choice.endpoint_id
        warm = mostly_cached(features.cached_tokens.get(endpoint_id, 0), prompt)
        key = speed_bucket(plan.bucket, warm)
        return self.knowledge.last_summary().typical_at(endpoint_id, key, prompt)

    def start_hedge(
        self,
        plan: RoutePlan,
        features: RequestFeatures,
        primary_id: int,
        tried: Sequence[int],
        now_unix: float,
        model_start: int = 0,
        now: float | None = None,
    ) -> HedgeStart | None:
        """The partner most likely to beat a stalled primary (``hedge_partner`` by
        expected TTFT) if the attempts allow one more, the budget left covers either leg
        losing (the dearer prompt is reserved) and, when the day's spend runs ahead of
        its pace, the hedge is among the most valuable (``worth_hedging``). ``now``: the
        knowledge's clock (default ``now_unix``)."""
        config = self.config
        if len(tried) - model_start >= config.max_attempts or not config.hedging:
            return None
        windows = self._windows(plan, features, now_unix if now is None else now)
        primary = _choice(plan, primary_id)
        expected = {
            c.endpoint_id: expected_ttft_s(windows.get(c.endpoint_id, ()), c.typical_ttft_s)
            for c in plan.choices
        }
        slack = config.hedge_partner_slack
        partner = hedge_partner(plan, primary, _known(expected) if slack else None, tried, slack)
        if partner is None:
            return None
        prompt, cached = features.prompt_tokens, features.cached_tokens
        reserve = max(
            loser_cost(primary.endpoint, prompt, cached.get(primary_id, 0)),
            loser_cost(partner.endpoint, prompt, cached.get(partner.endpoint_id, 0)),
        )
        day = budget_day(now_unix)
        left = self.stores.hedge_budget_left(day)
        worth = self.worth_hedging(plan, features, primary, windows, reserve, left)
        if reserve > left or not worth:
            return None
        if not self.stores.reserve(reserve, day):
            return None
        return HedgeStart(partner.endpoint_id, reserve, day)

    def worth_hedging(
        self,
        plan: RoutePlan,
        features: RequestFeatures,
        primary: RouteChoice,
        windows: Mapping[int, tuple[float, ...]],
        reserve_usd: float,
        left_usd: float,
    ) -> bool:
        """R3.4 rationed: while the paced budget keeps pace every hedge goes; when the
        day's spend runs ahead (``ration_share`` < 1), only hedges whose value (the
        chance that the primary is stalled x its slow tail, per USD reserved) is among
        the best recent ones: a stall most likely and most costly. A delayed hedge's
        primary is late already (chance 1); an immediate one's (R3.2) is its endpoint's
        share of late first tokens."""
        config = self.config
        burst_usd = config.hedge_budget_usd_per_day * min(
            1.0, config.hedge_budget_burst_s / SECONDS_PER_DAY
        )
        samples = windows.get(primary.endpoint_id, ())
        late_s = self.late_after(plan, primary, features)
        stall_cost_s = max(late_s, (samples[int(0.9 * len(samples))] if samples else 0.0))
        immediate = BUCKET_LOWER_BOUND[plan.bucket] >= config.hedge_immediate_from_tokens
        # a delayed hedge's primary is late already; an immediate one's stalls this often
        likelihood = late_share(samples, late_s) if immediate else 1.0
        value = hedge_value(likelihood, stall_cost_s, reserve_usd)
        return self.knowledge.hedge_values.admits(value, ration_share(left_usd, burst_usd))

    def _windows(
        self, plan: RoutePlan, features: RequestFeatures, now: float
    ) -> dict[int, tuple[float, ...]]:
        """Each planned endpoint's TTFT samples (ascending) in this request's window:
        its bucket, cached or uncached as this prompt is expected to be there."""
        summary = self.knowledge.last_summary()
        prompt, cached = features.prompt_tokens, features.cached_tokens
        windows = {}
        for choice in plan.choices:
            endpoint_id = choice.endpoint_id
            warm = mostly_cached(cached.get(endpoint_id, 0), prompt)
            key = (endpoint_id, speed_bucket(plan.bucket, warm))
            windows[endpoint_id] = summary.samples_by_key.get(key, ())
        return windows

    def primary_stalled(
        self,
        plan: RoutePlan,
        primary_id: int,
        ttft_s: float | None,
        features: RequestFeatures | None = None,
    ) -> bool:
        """Whether a hedged call's primary was in fact stalled: it did not win
        (``ttft_s`` None: the hedge leg won) or its first token came later than the late
        rule's reference (``late_after`` with the late trigger, whichever trigger is
        set: with the flat one a hedge of a normal slow prefill is seen as such)."""
        if ttft_s is None:
            return True
        return ttft_s > self.late_after(plan, _choice(plan, primary_id), features, "late")

    def on_cancel(self, endpoint: EndpointInfo, features: RequestFeatures) -> float:
        """A hedge leg lost the race: what it cost (its prompt)."""
        cached = features.cached_tokens.get(endpoint.endpoint_id, 0)
        return loser_cost(endpoint, features.prompt_tokens, cached)

    def end_hedge(self, start: HedgeStart, losers_usd: float, now: float) -> list[Lesson]:
        """The race is over: the reservation settles at the losers' cost (never above)."""
        lessons: list[Lesson] = [
            HedgeSettled(start.reserve_usd, min(losers_usd, start.reserve_usd), start.day)
        ]
        self.stores.emit(lessons, now)
        return lessons

    # --- what a call teaches -------------------------------------------------------------
    def on_failure(
        self,
        endpoint_id: int,
        kind: str,
        status: int | None,
        peers: tuple[int, ...],
        now: float,
        retry_after_s: float | None = None,
    ) -> tuple[list[Lesson], bool]:
        """A failed attempt: its lesson, and whether another endpoint may be tried (a
        failure of the request itself stops the retries). ``retry_after_s``: the
        refusal's Retry-After (``providers.refusals``), if the upstream sent one."""
        kind, core_status = failure_kind(kind, status)
        verdict = classify_failure(core_status, kind)
        inflight = self.knowledge.inflight[endpoint_id]
        failed = Failed(
            endpoint_id, kind, status, verdict.mark_unusable, inflight, peers, retry_after_s
        )
        lessons: list[Lesson] = [failed]
        self.stores.emit(lessons, now)
        return lessons, verdict.retry

    def on_cut(self, endpoint_id: int, peers: tuple[int, ...], now: float) -> list[Lesson]:
        """The provider cut the stream after its first token: a failure, no sample."""
        lessons: list[Lesson] = [Cut(endpoint_id, peers)]
        self.stores.emit(lessons, now)
        return lessons

    def on_tool_calls(
        self, endpoint_id: int, tools: object, calls: Sequence[object], now: float
    ) -> list[Lesson]:
        """A served call that carried tools returned ``calls`` (assembled): checked
        against the request's ``tools`` (O5, ``core.toolcalls``)."""
        if not calls or not self.config.tool_call_checks:
            return []
        lessons: list[Lesson] = [ToolCallChecked(endpoint_id, check_tool_calls(tools, calls))]
        self.stores.emit(lessons, now)
        return lessons

    def on_success(self, call: ServedCall, now: float) -> list[Lesson]:
        """A served call ended whole (see ``served_lesson``)."""
        lessons: list[Lesson] = [served_lesson(call)]
        self.stores.emit(lessons, now)
        return lessons


@dataclass(frozen=True, slots=True)
class ServedCall:
    """What the shell saw of a served call. ``prompt``/``cached``/``completion``: the
    usage (reported, or estimated: ``estimated``); ``prompt_estimate``: the planned
    prompt tokens; ``streaming_s``: from the first token to the last."""

    endpoint_id: int
    model: str
    bucket: str
    ttft_s: float | None
    streaming_s: float
    raw_prompt_tokens: int
    prompt_estimate: int
    prompt: int
    cached: int
    completion: int
    estimated: bool
    max_tokens: int | None
    prefixes: tuple[Hashable, ...]
    cache_ttl_s: float


def served_lesson(call: ServedCall) -> Served:
    """What a served call teaches: a TTFT sample in its cached or uncached window, its
    throughput, the reply's length (unless cut at max_tokens), the token calibration
    (with reported usage), and where its prefixes are now cached."""
    prompt = call.prompt or call.prompt_estimate
    completion, streaming_s = call.completion, call.streaming_s
    tps = completion / streaming_s if completion > 1 and streaming_s > 0 else None
    cap = call.max_tokens
    return Served(
        endpoint_id=call.endpoint_id,
        model=call.model,
        bucket=call.bucket,
        sample_bucket=bucket_for(prompt),
        ttft_s=call.ttft_s,
        cached=mostly_cached(call.cached, prompt),
        tps=tps,
        raw_prompt_tokens=call.raw_prompt_tokens,
        prompt_tokens=call.prompt,
        completion_tokens=completion,
        estimated=call.estimated,
        complete=cap is None or completion < cap,
        prefixes=call.prefixes,
        cache_ttl_s=call.cache_ttl_s,
    )
