"""Hedging long streaming prompts (R3): when to send a second leg, and to whom."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .types import BUCKET_LOWER_BOUND, RouteChoice, RoutePlan

HedgeMode = Literal["none", "delayed", "immediate"]


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


def base_provider(slug: str) -> str:
    """``deepinfra/turbo`` -> ``deepinfra``: variants of one provider are one provider."""
    return slug.split("/", 1)[0]


def hedge_partner(plan: RoutePlan, primary: RouteChoice | None = None) -> RouteChoice | None:
    """The next fast-enough, usable choice after ``primary`` (default: the plan's first)
    whose provider differs from the primary's provider, or None."""
    lead = plan.first if primary is None else primary
    seen_lead = False
    for choice in plan.choices:
        if choice.endpoint.endpoint_id == lead.endpoint.endpoint_id:
            seen_lead = True
            continue
        if (
            seen_lead
            and choice.fast_enough
            and base_provider(choice.endpoint.provider_slug)
            != base_provider(lead.endpoint.provider_slug)
        ):
            return choice
    return None
