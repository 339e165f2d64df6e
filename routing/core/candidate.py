"""Per-request working record of one endpoint while a plan is ranked (internal)."""

from __future__ import annotations

from dataclasses import dataclass

from .types import BUCKET_LOWER_BOUND, EndpointInfo

LONG_PROMPT_TOKENS = 32_000  # where R3's hedged buckets start


@dataclass(frozen=True, slots=True)
class SmartTuning:
    """Thresholds of smart routing (R2.4, R2.9); defaults are the product's numbers.

    fast enough: typical TTFT <= fast_enough_ratio x the fastest, or < fast_enough_under_s
    (``fast_enough_under_s_long`` instead, when set, for prompts of 32k tokens and more:
    ``under_s_for``).
    R2.9: an endpoint priced above the model's usual price may be picked for speed only
    if its cost for this request is <= (1 - dear_min_discount) x the list-price cost.
    ``tail_weight`` (w, default 0: off): an endpoint is fast enough only if, besides,
    typical + w x (p90 - typical) is within fast_enough_ratio of the lowest such value
    (or under fast_enough_under_s); w = 1 judges the p90 too. It can only exclude: the
    fastest's own tail never widens the band (docs/routing.md "Slow tail").
    ``conversation_horizon`` (issue 43, ``core.horizon``): a conversation's request is
    judged by its warm turns, stays where it is warm unless the horizon cost elsewhere
    is at most ``1 - move_min_saving`` of staying, and an endpoint without cached
    samples gets a cached estimate from its own uncached speed; off: the judgement of
    round 23 (the mean over this turn and the follow-ups, the model's cached/uncached
    ratio).
    """

    fast_enough_ratio: float = 2.0
    fast_enough_under_s: float = 1.0
    dear_min_discount: float = 0.5
    tail_weight: float = 0.0
    fast_enough_under_s_long: float | None = None
    conversation_horizon: bool = True
    move_min_saving: float = 0.2

    def under_s_for(self, bucket: str) -> float:
        """R2.4's absolute bound for a prompt of this bucket: an operator may set a
        longer one for the long buckets (32k+, the prompts R3 hedges and R8 measures),
        where no provider starts within 1 s and the product's own result is ~3.3 s
        (docs/routing.md "Fast enough")."""
        return absolute_bound(bucket, self.fast_enough_under_s, self.fast_enough_under_s_long)


def absolute_bound(bucket: str, under_s: float, under_s_long: float | None) -> float:
    """R2.4's "under N seconds" for a bucket: ``under_s_long`` (when set) from 32k up."""
    if under_s_long is not None and BUCKET_LOWER_BOUND.get(bucket, 0) >= LONG_PROMPT_TOKENS:
        return under_s_long
    return under_s


DEFAULT_TUNING = SmartTuning()


class Candidate:
    """One filtered endpoint with this request's cost and its speed in the bucket.

    ``typical`` is the typical TTFT this request should see there (its cached or
    uncached window), None when the endpoint has too little data in the bucket.
    ``judged`` is what R2.4 compares: ``typical``, or for a conversation the mean over
    this turn and its expected follow-up turns (cached there). ``price_eligible`` is the
    R2.9 test. ``fast_enough`` is set by smart.mark_fast_enough(). ``stale``: the window
    ``typical`` came from has no recent sample (R2.6 explores it).
    """

    __slots__ = (
        "cached_here",
        "cost",
        "endpoint",
        "endpoint_id",
        "fast_enough",
        "judged",
        "learns_cached",
        "price_eligible",
        "prior",
        "slug",
        "stale",
        "tailed",
        "thin",
        "throughput",
        "typical",
        "usable",
    )

    def __init__(
        self,
        endpoint: EndpointInfo,
        cost: float,
        typical: float | None,
        throughput: float | None,
        usable: bool,
        price_eligible: bool,
        judged: float | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.endpoint_id = endpoint.endpoint_id
        self.slug = endpoint.provider_slug
        self.cost = cost
        self.typical = typical
        self.judged = typical if judged is None else judged
        self.tailed = self.judged  # judged + the slow tail (speed.slow_tail)
        self.throughput = throughput
        self.usable = usable
        self.price_eligible = price_eligible
        self.fast_enough = False
        self.stale = False  # its speed data is old (SpeedSummary.stale_keys): explore it
        self.thin = typical is None  # fewer than min_samples samples: explore it
        # This turn is mostly cached here and this endpoint's cached window (in the
        # bucket) is thin: serving it here is the sample that window lacks (R2.6).
        self.learns_cached = False
        self.cached_here = False  # this request's prompt is mostly a cache read here
        self.prior = False  # ``typical`` is the model's typical value (O8), not its own

    def __repr__(self) -> str:
        return (
            f"Candidate({self.endpoint_id}, {self.slug}, cost={self.cost:.6f}, "
            f"typical={self.typical}, fast_enough={self.fast_enough})"
        )


Ranked = list[tuple[Candidate, str]]


def cost_key(candidate: Candidate) -> tuple[float, int]:
    """Cheapest first; ties by endpoint id so plans are deterministic."""
    return (candidate.cost, candidate.endpoint_id)
