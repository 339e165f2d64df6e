"""Smart routing (R2.3-R2.9): the cheapest endpoint that is fast enough for this
prompt's size, with exploration of endpoints that have too little or stale data."""

from __future__ import annotations

import random

from .candidate import DEFAULT_TUNING, Candidate, Ranked, SmartTuning, cost_key

CHEAPEST_FAST_ENOUGH = "cheapest fast enough"
FASTEST_CHEAPER_TOO_SLOW = "fastest: cheaper ones too slow"
NO_SPEED_DATA = "no speed data: cheapest"
NO_SPEED_DATA_WITHIN_USUAL_PRICE = "no speed data within usual price: cheapest"
FASTEST_USABLE = "fastest usable: the fast ones are marked unusable"
CHEAPEST_BY_MODEL_TYPICAL = "cheapest fast enough by the model's typical speed (no data yet)"
EXPLORATION = "exploration"
FALLBACK_FAST_ENOUGH = "fallback: fast enough"
FALLBACK_TOO_SLOW = "fallback: too slow"
FALLBACK_NO_SPEED_DATA = "fallback: no speed data"
FALLBACK_ABOVE_USUAL_PRICE = "fallback: above usual price"


def mark_fast_enough(
    candidates: list[Candidate],
    tuning: SmartTuning = DEFAULT_TUNING,
    reference: list[Candidate] | None = None,
    bucket: str = "<8k",
) -> None:
    """R2.4 over the endpoints that may be picked for speed (measured and R2.9 eligible):
    fast enough = judged TTFT <= ratio x the fastest of them, or under the absolute bound.

    The judged TTFT of a conversation's turn includes its expected follow-up turns (cache
    reads where it is served now), as its price does: a provider whose cache reads are
    fast is fast enough for agent turns even if this one turn would be uncached there.

    With ``tuning.tail_weight`` > 0 the same test is also applied to ``tailed`` (typical
    + weight x the window's slow tail), and both must pass: a provider that stalls on
    13% of calls is not fast enough next to one that does not, and the fastest's own
    tail does not let slower endpoints in.

    The fastest is taken over ``reference`` (default: ``candidates``); the plan passes
    every endpoint, the ones marked unusable included: a 30 s outage of the best one
    must not make a 15 s endpoint "fast enough" for long prompts. ``bucket`` is the
    request's size bucket (it picks the absolute bound: ``SmartTuning.under_s_for``)."""
    pool = candidates if reference is None else reference
    measured = [c for c in pool if c.judged is not None and c.price_eligible]
    if not measured:
        return
    ratio, under_s = tuning.fast_enough_ratio, tuning.under_s_for(bucket)
    slowest_fast_enough = ratio * min(c.judged for c in measured)  # type: ignore[type-var]
    slowest_tail = ratio * min(c.tailed for c in measured)  # type: ignore[type-var]
    for candidate in candidates:
        typical, tailed = candidate.judged, candidate.tailed
        candidate.fast_enough = (
            typical is not None
            and tailed is not None
            and candidate.price_eligible
            and (typical <= slowest_fast_enough or typical < under_s)
            and (tailed <= slowest_tail or tailed < under_s)
        )


def _fallback_key(candidate: Candidate) -> tuple[bool, bool, float, float, int]:
    typical = candidate.judged
    return (
        not candidate.price_eligible,
        typical is None,
        0.0 if typical is None else typical,
        candidate.cost,
        candidate.endpoint_id,
    )


def _fallback_reason(candidate: Candidate) -> str:
    if not candidate.price_eligible:
        return FALLBACK_ABOVE_USUAL_PRICE
    return FALLBACK_NO_SPEED_DATA if candidate.typical is None else FALLBACK_TOO_SLOW


def _first_reason(first: Candidate, candidates: list[Candidate]) -> str:
    if first.prior:
        return CHEAPEST_BY_MODEL_TYPICAL
    fastest = min(c.judged for c in candidates if c.fast_enough and c.judged is not None)
    cheaper_measured = any(c.cost < first.cost and c.judged is not None for c in candidates)
    if first.judged == fastest and cheaper_measured:
        return FASTEST_CHEAPER_TOO_SLOW
    return CHEAPEST_FAST_ENOUGH


def rank_smart(candidates: list[Candidate]) -> Ranked:
    """Order usable candidates (fast_enough already marked), every one exactly once.

    1. cheapest fast-enough endpoint; without any (the fast ones are marked) the fastest
       measured one; without speed data, the cheapest endpoint (R2.8);
    2. the other fast-enough endpoints, cheapest first;
    3. the rest: price-eligible before dearer-than-usual, measured before unmeasured,
       then by typical TTFT, then by cost.
    """
    if not candidates:
        return []
    by_cost = sorted(candidates, key=cost_key)
    fast = [c for c in by_cost if c.fast_enough]
    if fast:
        ranked: Ranked = [(fast[0], _first_reason(fast[0], candidates))]
        ranked += [(c, FALLBACK_FAST_ENOUGH) for c in fast[1:]]
        slow = [c for c in by_cost if not c.fast_enough]
    elif any(c.judged is not None and c.price_eligible for c in candidates):
        # measured, but none fast enough: the fast ones are marked unusable for now
        slow = sorted(candidates, key=_fallback_key)
        ranked = [(slow.pop(0), FASTEST_USABLE)]
    else:
        any_measured = any(c.typical is not None for c in candidates)
        reason = NO_SPEED_DATA_WITHIN_USUAL_PRICE if any_measured else NO_SPEED_DATA
        ranked = [(by_cost[0], reason)]
        slow = by_cost[1:]
    slow.sort(key=_fallback_key)
    ranked += [(c, _fallback_reason(c)) for c in slow]
    return ranked


def with_exploration(ranked: Ranked, rng: random.Random, exploration_rate: float) -> Ranked:
    """R2.6: with probability ``exploration_rate`` put first a random price-eligible
    endpoint with too little data in this bucket, or whose data is stale (no recent
    sample) and which is cheaper for this request than the normal first choice, other
    than the normal first choice.

    Stale data is explored to notice a provider that got faster; one dearer than the
    normal choice would not take the traffic if it had (R2.5), so exploring it only
    costs the customer (with probes by need, ``probe_relevant``, such endpoints are no
    longer probed every period and their windows go stale).

    A turn mostly cached at such an endpoint whose cached window is thin
    (``learns_cached``) is always explored there: only such a turn can measure that
    endpoint's cache reads (a conversation's first turn there is uncached, so random
    exploration alone fills a cached window only when two draws land on consecutive
    turns), it is cheap (a cache read), and it stops once the window has its samples.

    A turn mostly cached at the normal first choice is explored only at endpoints where
    it is mostly cached too (round 23): elsewhere it would be an uncached prompt of the
    conversation's whole size, many times the price of its cache read and several
    seconds slower (on `coding-agent` these turns were the >128k p90), and it would
    measure only an uncached window, which probes and first turns fill anyway.

    The rng is only drawn from when such an endpoint exists.
    """
    if exploration_rate <= 0 or len(ranked) < 2:
        return ranked
    first = ranked[0][0]
    pool = [
        c
        for c, _ in ranked[1:]
        if c.price_eligible
        and (c.thin or c.learns_cached or (c.stale and cost_key(c) < cost_key(first)))
    ]
    if first.cached_here:  # a warm turn is explored only where it is warm too
        pool = [c for c in pool if c.cached_here]
    learning = [c for c in pool if c.learns_cached]
    if learning:
        pool = learning
    elif not pool or rng.random() >= exploration_rate:
        return ranked
    explored = pool[rng.randrange(len(pool))]
    rest = [(c, r) for c, r in ranked if c is not explored]
    first_reason = rest[0][1]
    rest[0] = (
        first,
        first_reason if first_reason.startswith("fallback") else _as_fallback(first_reason),
    )
    return [(explored, EXPLORATION), *rest]


def _as_fallback(reason: str) -> str:
    return f"fallback: {reason}"
