"""Hedging long streaming prompts (R3): when to send a second leg, and to whom.

R3.1's trigger (issue 43, "hedge value"): the second leg starts when the primary's first
token is *late*: later than ``floor_s`` (the seed's 1 s) and later than ``factor`` x the
primary's own typical TTFT for this request (its bucket's cached or uncached window,
``RouteChoice.typical_ttft_s``; the model's when it has none). A long uncached prompt
whose normal prefill takes 2 s is not raced at 1 s; a stall is. The seed's flat trigger
(``trigger="flat"``: after ``floor_s`` whatever the endpoint) stays a setting.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .types import BUCKET_LOWER_BOUND, RouteChoice, RoutePlan

HedgeMode = Literal["none", "delayed", "immediate"]
HedgeTrigger = Literal["late", "flat"]
HEDGE_TRIGGERS: tuple[HedgeTrigger, ...] = ("late", "flat")


@dataclass(frozen=True, slots=True)
class HedgeDecision:
    """``delayed``: start the second leg if no first token after ``delay_s``;
    ``immediate``: start both legs at once; ``none``: one leg only."""

    mode: HedgeMode
    delay_s: float = 0.0


NO_HEDGE = HedgeDecision("none")


def hedge_policy(
    bucket: str,
    stream: bool,
    budget_remaining_usd: float,
    estimated_leg_cost: float,
    *,
    delayed_from_tokens: int = 32_000,
    immediate_from_tokens: int = 128_000,
    delay_s: float = 1.0,
) -> HedgeDecision:
    """R3.1/R3.2: streaming prompts in a bucket starting at >= 32k get a delayed hedge
    (after 1 s), at >= 128k an immediate one. R3.4: no hedge when the daily hedge budget
    left cannot pay for the extra leg (``estimated_leg_cost``, the partner's cost)."""
    if not stream or budget_remaining_usd < estimated_leg_cost:
        return NO_HEDGE
    bucket_lower = BUCKET_LOWER_BOUND[bucket]
    if bucket_lower >= immediate_from_tokens:
        return HedgeDecision("immediate", 0.0)
    if bucket_lower >= delayed_from_tokens:
        return HedgeDecision("delayed", delay_s)
    return NO_HEDGE


def reference_ttft_s(choice: RouteChoice) -> float | None:
    """What ``choice`` normally takes for this request: its own typical TTFT in the
    request's bucket and cache state, else the model's (O8), else None."""
    typical = choice.typical_ttft_s
    return choice.model_typical_ttft_s if typical is None else typical


def late_after_s(
    choice: RouteChoice,
    *,
    floor_s: float,
    factor: float,
    trigger: str = "late",
    reference_s: float | None = None,
) -> float:
    """When the first token at ``choice`` is late (R3.1): ``max(floor_s, factor x its
    reference TTFT)`` (``reference_s``, else ``reference_ttft_s``); ``floor_s`` alone with
    the flat trigger or with no reference."""
    reference = reference_ttft_s(choice) if reference_s is None else reference_s
    if trigger == "flat" or reference is None:
        return floor_s
    return max(floor_s, factor * reference)


def base_provider(slug: str) -> str:
    """``deepinfra/turbo`` -> ``deepinfra``: variants of one provider are one provider."""
    return slug.split("/", 1)[0]


def hedge_partner(
    plan: RoutePlan,
    primary: RouteChoice | None = None,
    expected_s: Mapping[int, float] | None = None,
    tried: Container[int] = (),
    slack: float = 1.5,
) -> RouteChoice | None:
    """The partner of ``primary`` (default: the plan's first): a fast-enough, usable
    choice of another provider, not yet tried. With ``expected_s`` (endpoint id ->
    expected TTFT, stalls included: ``expected_ttft_s``) the one most likely to beat a
    stalled primary at a price: the first in plan order (the cheapest) whose expected
    TTFT is within ``slack`` x the best one's (an endpoint without a figure only
    when none has one); without, the first such choice after the primary in the plan."""
    candidates = _partner_candidates(plan, primary, tried, after_lead=expected_s is None)
    if expected_s is None or not candidates:
        return candidates[0] if candidates else None
    known = [expected_s[c.endpoint_id] for c in candidates if c.endpoint_id in expected_s]
    if not known:
        return candidates[0]
    bound = slack * min(known)
    return next(c for c in candidates if expected_s.get(c.endpoint_id, float("inf")) <= bound)


def _partner_candidates(
    plan: RoutePlan, primary: RouteChoice | None, tried: Container[int], *, after_lead: bool
) -> list[RouteChoice]:
    """Fast-enough choices of another provider than the primary's, not yet tried, in
    plan order (``after_lead``: only those after the primary)."""
    lead = plan.first if primary is None else primary
    lead_provider = base_provider(lead.endpoint.provider_slug)
    seen_lead = not after_lead
    out = []
    for choice in plan.choices:
        if choice.endpoint_id == lead.endpoint_id:
            seen_lead = True
            continue
        if not seen_lead or not choice.fast_enough or choice.endpoint_id in tried:
            continue
        if base_provider(choice.endpoint.provider_slug) != lead_provider:
            out.append(choice)
    return out


def expected_ttft_s(samples: Sequence[float], typical: float | None) -> float | None:
    """The mean TTFT of a window (its stalls weigh as often as they happen), else the
    typical value (None: nothing known)."""
    return sum(samples) / len(samples) if samples else typical


def late_share(samples: Sequence[float], late_s: float) -> float:
    """Share of a window's first tokens later than ``late_s``: how often the endpoint
    stalls for this kind of request (``MIN_LATE_SHARE`` with no samples, so an unknown
    endpoint's hedge still has a value)."""
    if not samples:
        return MIN_LATE_SHARE
    return max(MIN_LATE_SHARE, sum(1 for t in samples if t > late_s) / len(samples))


MIN_LATE_SHARE = 0.01


def hedge_value(stall_share: float, stall_cost_s: float, leg_usd: float) -> float:
    """What a hedge is worth per USD: the chance the primary is stalled times the
    seconds a stall costs there, over what the hedge leg may cost."""
    return stall_share * stall_cost_s / max(leg_usd, 1e-9)


def ration_share(left_usd: float, burst_usd: float) -> float:
    """The share of hedges the budget affords now (R3.4, rationed). The paced budget
    left (``budget.paced_allowance_usd`` minus today's spend) stays at or above half the
    burst (``burst_usd``: the burst's worth of the daily budget) while spend keeps pace
    with the day; below that the day's spend runs ahead and would run out early, so only
    the most valuable ``left / (burst / 2)`` share of hedges go, down to none."""
    if burst_usd <= 0:
        return 1.0
    return max(0.0, min(1.0, 2 * left_usd / burst_usd))


class HedgeValues:
    """The values of the last ``size`` hedges considered (``hedge_value``): a new one
    goes when it is within the best ``share`` of them (``admits``)."""

    __slots__ = ("_values",)

    def __init__(self, size: int = 200) -> None:
        self._values: deque[float] = deque(maxlen=size)

    def admits(self, value: float, share: float) -> bool:
        """Note ``value``; True if it is among the best ``share`` of recent values."""
        values = sorted(self._values)
        self._values.append(value)
        if share <= 0.0:
            return False
        if share >= 1.0 or len(values) < MIN_VALUES:
            return True
        return value >= values[min(len(values) - 1, int((1.0 - share) * len(values)))]


MIN_VALUES = 20
