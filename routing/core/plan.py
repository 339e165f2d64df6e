"""plan_route(): every endpoint that may serve a request, in the order to try them.

Pipeline: hard filters (filters.py) -> price and speed per candidate -> ranking by
smart routing (smart.py) or by the customer's choice (customer.py) -> endpoints
marked unusable (R2.7) appended as a last resort -> allow_fallbacks restriction.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence, Set
from statistics import median

from .candidate import DEFAULT_TUNING, Candidate, Ranked, SmartTuning, cost_key
from .customer import rank_customer, restrict_to_listed
from .filters import filter_endpoints, matches_any
from .horizon import keep_warm_home, model_cache_speedup, own_cached_estimate
from .options import RoutingOptions
from .preferences import prefer_performance
from .pricing import list_price_cost, request_cost
from .smart import mark_fast_enough, rank_smart, with_exploration
from .speed import SpeedSummary, mostly_cached, speed_bucket
from .types import (
    BUCKETS,
    Bucket,
    EndpointInfo,
    ModelInfo,
    RequestFeatures,
    RouteChoice,
    RoutePlan,
    RoutingError,
    bucket_for,
)

LAST_RESORT = "last resort: marked unusable"
SMALLER_BUCKET_FACTOR = 2.0  # a cached turn one bucket up: at most twice as long


def _costs(endpoints: Sequence[EndpointInfo], features: RequestFeatures) -> dict[int, float]:
    cached, factors = features.cached_tokens, features.output_factors
    prompt, output = features.prompt_tokens, features.expected_output_tokens
    return {
        e.endpoint_id: request_cost(
            e,
            prompt,
            cached.get(e.endpoint_id, 0),
            round(output * factors[e.endpoint_id]) if e.endpoint_id in factors else output,
        )
        for e in endpoints
    }


def _ranking_costs(
    endpoints: Sequence[EndpointInfo], features: RequestFeatures, costs: dict[int, float]
) -> dict[int, float]:
    """What choosing each endpoint costs the customer: this request, plus (in a
    conversation) the expected follow-up turns, whose prompt will be a cache read at the
    endpoint chosen now. Without this, a reseller whose cache reads are just under the
    others' input price keeps a conversation for ever (docs/simulator.md, finding 1)."""
    followups = features.expected_followup_turns
    if not followups:
        return costs
    prompt = features.prompt_tokens
    return {
        e.endpoint_id: costs[e.endpoint_id] + followups * request_cost(e, prompt, prompt, 0)
        for e in endpoints
    }


def usual_price(costs: dict[int, float]) -> float:
    """R2.9 the model's usual price for this request: the median of this request's cost
    at every endpoint of the model (before any filter)."""
    return median(costs.values())


def dear_price_limit(
    model: ModelInfo,
    features: RequestFeatures,
    cached_tokens: int,
    tuning: SmartTuning = DEFAULT_TUNING,
) -> float:
    """R2.9 the most an above-usual endpoint may cost to be picked for speed: this
    request, with the same cached tokens as at that endpoint, at the model's list prices
    x (1 - dear_min_discount), i.e. at least 50% below list by default."""
    list_cost = list_price_cost(
        model, features.prompt_tokens, cached_tokens, features.expected_output_tokens
    )
    return (1.0 - tuning.dear_min_discount) * list_cost


def expected_ttft(
    speed: SpeedSummary,
    endpoint_id: int,
    bucket: str,
    cached: bool,
    min_samples: int,
    cache_ratio: float | None = None,
) -> float | None:
    """The typical TTFT this request should see at the endpoint: the cached window when
    most of its prompt is a cache read there and that window has ``min_samples``; else
    (cached) twice the cached typical one bucket down when that is lower than the
    uncached one; else the uncached one (an upper bound: a cache read never prefills
    slower) as soon as it has a sample (times ``cache_ratio`` when given: the model's
    cached/uncached speed, ``model_cache_ratio``), else a thin cached window; None
    without any."""
    ratio = None if cache_ratio is None else (lambda: cache_ratio)
    return _estimate(speed, endpoint_id, bucket, cached, min_samples, ratio)[0]


def _estimate(
    speed: SpeedSummary,
    endpoint_id: int,
    bucket: str,
    cached: bool,
    min_samples: int,
    cache_ratio: Callable[[], float | None] | None = None,
    derive_cached: Callable[[int], float | None] | None = None,
) -> tuple[float | None, tuple[int, str] | None, int]:
    """expected_ttft(), the key of the window it came from and that window's samples.

    A cached estimate without enough cached samples of its own, nor one bucket down, is
    not the uncached value itself (an endpoint that has not served cached turns yet is
    not judged as if cache reads were no faster there): with ``derive_cached`` (issue 43,
    ``horizon.own_cached_estimate``) it is derived from the endpoint's own uncached
    speed; with ``cache_ratio`` (it returns ``model_cache_ratio``; called only when
    needed) it is the uncached typical value times the model's other endpoints'
    cached/uncached ratio."""
    counts, typicals = speed.count_by_key, speed.typical_by_key
    plain = (endpoint_id, bucket)
    if cached:
        key = (endpoint_id, speed_bucket(bucket, True))
        count = counts.get(key, 0)
        if count >= min_samples or (count and not counts.get(plain, 0)):
            return typicals[key], key, count
        smaller = _smaller_cached(speed, endpoint_id, bucket, min_samples)
        if smaller is not None and (
            not counts.get(plain, 0) or smaller < typicals[plain]
        ):  # few agent turns reach >128k: twice the cached typical one bucket down
            return smaller, key, count
        if derive_cached is not None and counts.get(plain, 0):
            derived = derive_cached(endpoint_id)
            if derived is not None:
                return derived, key, count
        ratio = cache_ratio() if cache_ratio is not None and counts.get(plain, 0) else None
        if ratio is not None:
            return typicals[plain] * ratio, key, count
    count = counts.get(plain, 0)
    return (typicals[plain], plain, count) if count else (None, None, 0)


def model_cache_ratio(
    speed: SpeedSummary, endpoint_ids: list[int], bucket: str, min_samples: int
) -> float | None:
    """The median over ``endpoint_ids`` with ``min_samples`` in both windows of the
    bucket of cached typical / uncached typical (at most 1), or None without any
    (computed once per speed snapshot)."""
    memo_key = ("cache_ratio", bucket, min_samples, tuple(endpoint_ids))
    if memo_key in speed.derived:
        return speed.derived[memo_key]
    counts, typicals = speed.count_by_key, speed.typical_by_key
    cached_bucket = speed_bucket(bucket, True)
    ratios = [
        min(1.0, typicals[(e, cached_bucket)] / typicals[(e, bucket)])
        for e in endpoint_ids
        if counts.get((e, cached_bucket), 0) >= min_samples
        and counts.get((e, bucket), 0) >= min_samples
        and typicals[(e, bucket)] > 0
    ]
    ratio = median(ratios) if ratios else None
    speed.derived[memo_key] = ratio
    return ratio


def _smaller_cached(
    speed: SpeedSummary, endpoint_id: int, bucket: str, min_samples: int
) -> float | None:
    """2x the cached typical of the next smaller bucket, if it has enough samples."""
    index = BUCKETS.index(bucket)  # type: ignore[arg-type]
    if index == 0:
        return None
    key = (endpoint_id, speed_bucket(BUCKETS[index - 1], True))
    if speed.count_by_key.get(key, 0) < min_samples:
        return None
    return SMALLER_BUCKET_FACTOR * speed.typical_by_key[key]


WindowKey = tuple[int, str] | None  # the speed window an estimate came from


class _Estimator:
    """The typical TTFTs of one plan's candidates: this turn's, and (a conversation)
    its warm follow-ups' there; the model-wide figures a cached estimate may need are
    computed once, and only when needed."""

    def __init__(
        self,
        speed: SpeedSummary,
        eligible: list[EndpointInfo],
        bucket: Bucket,
        min_samples: int,
        tuning: SmartTuning,
    ) -> None:
        self.speed, self.bucket, self.min_samples = speed, bucket, min_samples
        self.tail_weight, self.horizon = tuning.tail_weight, tuning.conversation_horizon
        self.by_id = {e.endpoint_id: e for e in eligible}
        self._memo: dict[str, float | None] = {}

    def _model_figure(self, name: str) -> float | None:
        if name not in self._memo:
            args = (self.speed, list(self.by_id), self.bucket, self.min_samples)
            figure = model_cache_speedup if name == "speedup" else model_cache_ratio
            self._memo[name] = figure(*args)
        return self._memo[name]

    def _derived(self, endpoint_id: int) -> float | None:
        speedup = self._model_figure("speedup")
        return own_cached_estimate(self.speed, self.by_id[endpoint_id], self.bucket, speedup)

    def _ratio(self) -> float | None:
        return self._model_figure("ratio")

    def estimate(self, endpoint_id: int, cached: bool) -> tuple[float | None, WindowKey, int]:
        """``_estimate`` with this plan's way of deriving a cached estimate: from the
        endpoint's own speed (the horizon rule) or by the model's cached/uncached ratio."""
        speed, bucket, min_samples = self.speed, self.bucket, self.min_samples
        if self.horizon:
            return _estimate(speed, endpoint_id, bucket, cached, min_samples, None, self._derived)
        return _estimate(speed, endpoint_id, bucket, cached, min_samples, self._ratio)

    def tailed(self, typical: float, key: WindowKey) -> float:
        """``typical`` plus the tail weight x the window's slow tail."""
        tail = self.speed.tail_by_key.get(key, 0.0) if key is not None else 0.0
        return typical + self.tail_weight * tail

    def judged(
        self, endpoint_id: int, typical: float, key: WindowKey, followups: float
    ) -> tuple[float, float]:
        """What R2.4 compares (typical, tailed): this turn's; for a conversation its warm
        turns' (``core.horizon``), or without the horizon rule the mean over this turn
        and its follow-ups."""
        tailed = self.tailed(typical, key)
        if not followups:
            return typical, tailed
        later, later_key, _ = self.estimate(endpoint_id, True)
        if later is None:
            later, later_tailed = typical, tailed
        else:
            later_tailed = self.tailed(later, later_key)
        if self.horizon:
            return later, later_tailed
        weight = 1 + followups
        return (typical + followups * later) / weight, (tailed + followups * later_tailed) / weight


def _candidates(
    model: ModelInfo,
    eligible: list[EndpointInfo],
    features: RequestFeatures,
    bucket: Bucket,
    costs: dict[int, float],
    speed: SpeedSummary,
    unusable: Set[int],
    min_samples: int,
    tuning: SmartTuning,
) -> list[Candidate]:
    usual = usual_price(costs)
    throughputs, cached = speed.throughput_by_endpoint, features.cached_tokens
    prompt, stale_keys = features.prompt_tokens, speed.stale_keys
    followups = features.expected_followup_turns
    estimator = _Estimator(speed, eligible, bucket, min_samples, tuning)
    candidates = []
    for endpoint in eligible:
        endpoint_id = endpoint.endpoint_id
        is_cached = mostly_cached(cached.get(endpoint_id, 0), prompt)
        typical, key, count = estimator.estimate(endpoint_id, is_cached)
        judged = tailed = typical
        later_count = min_samples
        if typical is not None:
            judged, tailed = estimator.judged(endpoint_id, typical, key, followups)
            if followups:
                later_count = speed.count(endpoint_id, speed_bucket(bucket, True))
        cost = costs[endpoint_id]
        price_eligible = cost <= usual or cost <= dear_price_limit(
            model, features, cached.get(endpoint_id, 0), tuning
        )
        candidate = Candidate(
            endpoint,
            cost,
            typical,
            throughputs.get(endpoint_id),
            endpoint_id not in unusable,
            price_eligible,
            judged,
        )
        candidate.tailed = tailed
        candidate.stale = key in stale_keys
        # thin: too little data for this turn, or (a conversation) for its follow-up
        # turns, cache reads there: explored, else a provider whose cached prefill is fast
        # would never get the conversations that would show it
        candidate.thin = count < min_samples or later_count < min_samples
        candidate.cached_here = is_cached
        candidate.learns_cached = (
            is_cached and speed.count(endpoint_id, speed_bucket(bucket, True)) < min_samples
        )
        candidates.append(candidate)
    return candidates


def model_typical_ttft(
    speed: SpeedSummary, endpoints: Sequence[EndpointInfo], bucket: str, min_samples: int
) -> float | None:
    """O8: the model's typical TTFT in ``bucket``, the median of its endpoints' own
    uncached estimates (every endpoint with data there, marked or filtered out ones
    included); None when none has data. An endpoint without data of its own gets its
    first-token budget from it (``timeouts.first_token_timeout_s``)."""
    estimates = [
        ttft
        for endpoint in endpoints
        if (ttft := expected_ttft(speed, endpoint.endpoint_id, bucket, False, min_samples))
        is not None
    ]
    return median(estimates) if estimates else None


def apply_model_prior(candidates: list[Candidate]) -> None:
    """O8: an endpoint without a sample in the bucket starts from the model's typical
    numbers (the median of the measured endpoints' estimates, marked ones included), so
    a new or re-priced endpoint competes at once; it is explored like thin data and its
    own samples replace the prior as they come. Without any measured endpoint nothing
    changes (R2.8: the cheapest)."""
    measured = [c.judged for c in candidates if c.judged is not None]
    if not measured:
        return
    prior = median(measured)
    for candidate in candidates:
        if candidate.typical is None:
            candidate.typical = candidate.judged = candidate.tailed = prior
            candidate.prior = True


def _rank(
    usable: list[Candidate],
    marked: list[Candidate],
    options: RoutingOptions,
    rng: random.Random,
    exploration_rate: float,
    tuning: SmartTuning = DEFAULT_TUNING,
    conversation: bool = False,
) -> Ranked:
    """Usable candidates by strategy, then (R2.7) the marked ones as a last resort: a
    gateway should still try an endpoint that refused a call rather than fail outright.
    A ``conversation``'s request (expected follow-ups) stays where it is warm unless
    clearly cheaper elsewhere (O7, ``horizon.keep_warm_home``)."""
    if options.is_customer_choice:
        ranked = rank_customer(usable, options)
        last = rank_customer(marked, options)
    else:
        ranked = rank_smart(usable)
        if tuning.conversation_horizon and conversation:
            ranked = keep_warm_home(ranked, tuning.move_min_saving)
        ranked = with_exploration(ranked, rng, exploration_rate)
        last = [(c, "") for c in sorted(marked, key=cost_key)]
    return ranked + [(c, f"{LAST_RESORT}; {r}" if r else LAST_RESORT) for c, r in last]


def _with_preferences(
    ranked: Ranked, options: RoutingOptions, speed: SpeedSummary, bucket: Bucket
) -> Ranked:
    """OpenRouter's preferred_max_latency / preferred_min_throughput: within each tier
    (the customer's ``order``, the rest, the last resorts) the endpoints that miss them
    go behind the others (preferences.py); nothing is removed."""
    if not (options.max_latency_s or options.min_throughput):
        return ranked
    order = options.order

    def tier(candidate: Candidate) -> int:
        listed = bool(order) and matches_any(candidate.slug, order)
        return 2 * (not candidate.usable) + (not listed)

    return prefer_performance(
        ranked, options.max_latency_s, options.min_throughput, speed, bucket, tier
    )


def plan_route(
    model: ModelInfo,
    endpoints: Sequence[EndpointInfo],
    features: RequestFeatures,
    options: RoutingOptions,
    speed: SpeedSummary,
    unusable: Set[int],
    rng: random.Random,
    *,
    exploration_rate: float = 0.05,
    min_samples: int = 3,
    tuning: SmartTuning = DEFAULT_TUNING,
) -> RoutePlan:
    """Every endpoint that may serve this request, best first, never repeated.

    ``unusable`` holds endpoint ids marked unusable now (R2.7); they go last. An
    endpoint with fewer than ``min_samples`` TTFT samples in the request's bucket has
    "too little data": its samples count (from the first one), and it is explored.
    Raises RoutingError 400 (unknown provider slug) or 404 (no
    endpoint passes the filters; the message says which filter).
    """
    bucket = bucket_for(features.prompt_tokens)
    eligible = filter_endpoints(model, endpoints, features, options)
    request_costs = _costs(endpoints, features)
    costs = _ranking_costs(endpoints, features, request_costs)
    candidates = _candidates(
        model, eligible, features, bucket, costs, speed, unusable, min_samples, tuning
    )
    model_typical = None
    if any(c.typical is None for c in candidates):  # only then: the plan's hot path stays
        model_typical = model_typical_ttft(speed, endpoints, bucket, min_samples)
    if not options.is_customer_choice:
        apply_model_prior(candidates)
    usable = [c for c in candidates if c.usable]
    marked = [c for c in candidates if not c.usable]
    mark_fast_enough(usable, tuning, reference=candidates, bucket=bucket)
    conversation = bool(features.expected_followup_turns)
    ranked = _rank(usable, marked, options, rng, exploration_rate, tuning, conversation)
    ranked = restrict_to_listed(_with_preferences(ranked, options, speed, bucket), options)
    if not ranked:
        raise RoutingError(
            404,
            "no_allowed_provider",
            f"no provider in provider.order can serve this request for model {model.slug} "
            "and provider.allow_fallbacks is false",
        )
    choices = tuple(
        RouteChoice(
            c.endpoint,
            reason,
            request_costs[c.endpoint_id],
            None if c.prior else c.typical,
            c.fast_enough,
            model_typical,
        )
        for c, reason in ranked
    )
    return RoutePlan(choices, bucket, "customer" if options.is_customer_choice else "smart")
