"""When a probe shows a real change of speed (R5), pure.

A window's typical TTFT is robust on purpose (R2.2: one slow call must not drop a good
provider), so a single probe cannot move it. To still notice a slowdown at one size
within one probe cycle, a probe that disagrees with the typical value by more than
``SHIFT_FACTOR`` (slower or faster) is confirmed at once by ``CONFIRMATIONS`` more
probes; if all of them shift the same way, the change is real and the bucket's window
restarts from these probes (older samples no longer count). A stall is outvoted: with
a majority rule, a provider stalling on 13% of calls had a quarter of its stalled probes
"confirmed" by a second stall in the simulator; needing all three makes that ~2%.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from statistics import median

from .candidate import SmartTuning, absolute_bound
from .pricing import request_cost
from .speed import SpeedSummary
from .types import EndpointInfo, ModelInfo, bucket_for

SHIFT_FACTOR = 2.0
CONFIRMATIONS = 2


def shift_direction(typical_s: float | None, ttft_s: float) -> int:
    """+1 much slower than typical, -1 much faster, 0 in line (or nothing to compare)."""
    if typical_s is None or typical_s <= 0:
        return 0
    if ttft_s > SHIFT_FACTOR * typical_s:
        return 1
    if ttft_s < typical_s / SHIFT_FACTOR:
        return -1
    return 0


def confirmed_shift(typical_s: float | None, ttfts_s: Sequence[float]) -> bool:
    """True when the probe and all its confirmations shifted in the same direction."""
    directions = {shift_direction(typical_s, ttft) for ttft in ttfts_s}
    return len(ttfts_s) > CONFIRMATIONS and len(directions) == 1 and 0 not in directions


def worth_probing(
    endpoint: EndpointInfo,
    model: ModelInfo,
    endpoints: Sequence[EndpointInfo],
    dear_min_discount: float = 0.5,
) -> bool:
    """Probe economy (issue 10): a probe is an uncached prompt, so an endpoint whose
    input price is above the model's usual one (the median over its endpoints) and not
    at least ``dear_min_discount`` below the list price can never be picked for speed
    for such a prompt (R2.9): probing it is money spent for nothing (the first party at
    list price was most of the probe bill). Its real calls still measure it."""
    usual = median(e.price_input for e in endpoints)
    price = endpoint.price_input
    return price <= usual or price <= (1.0 - dear_min_discount) * model.list_price_input


def probe_worst_cost(probe_cost_usd: float) -> float:
    """What a probe may cost with its confirmations (``CONFIRMATIONS`` more calls)."""
    return (1 + CONFIRMATIONS) * probe_cost_usd


def within_probe_budget(spent_today_usd: float, probe_cost_usd: float, budget_usd: float) -> bool:
    """Daily probe budget (issue 10): a probe is sent only if today's (UTC) probe spend
    plus its worst cost (with its confirmations) stays within ``budget_usd``; a budget of
    0 (or less) means no limit."""
    return budget_usd <= 0 or spent_today_usd + probe_worst_cost(probe_cost_usd) <= budget_usd


def within_volume_share(
    customer_usd: float, probe_usd: float, probe_cost_usd: float, share: float
) -> bool:
    """Probe economy by volume (issue 10): over the recent window (the last hour), the
    probes of one model's size bucket may cost at most ``share`` x what that model's
    customers spent in the bucket, so a size that customers rarely send is measured in
    proportion to what rides on it (R5's three sizes every 5 minutes cost $0.25 a cycle
    on the demo catalog, whatever the traffic). Probes of an endpoint without any speed
    data (cold start) are not limited by this. ``share`` <= 0 means no limit."""
    return share <= 0 or probe_usd + probe_cost_usd <= share * customer_usd


def probe_relevant(
    endpoint: EndpointInfo,
    prompt_tokens: int,
    model: ModelInfo,
    endpoints: Sequence[EndpointInfo],
    speed: SpeedSummary,
    *,
    ratio: float = 2.0,
    under_s: float = 1.0,
    dear_min_discount: float = 0.5,
    under_s_long: float | None = None,
) -> bool:
    """Probe economy by need (pure): could a probe of ``endpoint`` at ``prompt_tokens``
    (uncached) change where an uncached prompt of that size goes?

    ``speed`` gives each endpoint's typical uncached TTFT in the probe's bucket. Among
    the endpoints R2.9 may pick for speed (``worth_probing``), R2.4/R2.5 send such a
    prompt to the cheapest one within ``ratio`` x the fastest (or under ``under_s``;
    ``under_s_long`` from 32k up when set: ``candidate.absolute_bound``).
    A probe is needed for an endpoint without data in the bucket, for the current pick
    (a slowdown there must move traffic; skipped anyway when real traffic measured it)
    and for every endpoint cheaper than the pick (one that got fast enough would take
    the traffic). The fastest endpoint, when dearer than the pick, sets the bar: its
    probe is needed only if a slowdown there (which raises the bar to at most ``ratio``
    x the next fastest) could let an endpoint cheaper than the pick in (R5.1: catch a
    slowdown at one size). Any other endpoint, dearer than the pick and slower than the
    fastest, cannot take that traffic whatever its speed does, short of becoming the
    fastest: its probe is skipped. Skipped endpoints are still measured by their real
    calls (hedge legs, retries), and probed again as soon as the pick or the fastest
    changes, or their samples expire (no data: probed).
    """
    eligible = [e for e in endpoints if worth_probing(e, model, endpoints, dear_min_discount)]
    bucket = bucket_for(prompt_tokens)
    under_s = absolute_bound(bucket, under_s, under_s_long)
    known = {e.endpoint_id: speed.typical(e.endpoint_id, bucket) for e in eligible}
    mine = known.get(endpoint.endpoint_id)
    measured = [t for t in known.values() if t is not None]
    if mine is None or not measured:
        return True
    fastest = min(measured)

    def fast_enough(ttft: float | None, bar_s: float) -> bool:
        return ttft is not None and (ttft <= ratio * bar_s or ttft < under_s)

    def cost(e: EndpointInfo) -> float:
        return request_cost(e, prompt_tokens, 0, 0)

    fast = [e for e in eligible if fast_enough(known[e.endpoint_id], fastest)]
    if not fast:
        return True
    pick = min(cost(e) for e in fast)
    if cost(endpoint) <= pick:
        return True  # the pick, or cheaper: it would take the traffic if fast enough
    if mine > fastest:
        return False  # dearer and not the fastest
    # the fastest, dearer than the pick: a slowdown could only raise the bar to ratio x
    # the next fastest; needed if that would let an endpoint cheaper than the pick in
    others = [t for eid, t in known.items() if t is not None and eid != endpoint.endpoint_id]
    if not others:
        return True
    next_fastest = min(others)
    return any(cost(e) < pick and fast_enough(known[e.endpoint_id], next_fastest) for e in eligible)


COLD_PROBE_TOKENS = 2_000  # a cold endpoint is also probed below 8k (issue 10)


def probe_sizes(
    endpoint: EndpointInfo,
    model: ModelInfo,
    endpoints: Sequence[EndpointInfo],
    sizes: Sequence[int],
    *,
    measured: Container[str],
    cold: bool,
    speed: SpeedSummary | None,
    tuning: SmartTuning,
) -> list[int]:
    """The sizes to probe ``endpoint`` at this cycle (R5, the probe economy), in order.

    None when it can never be picked for speed (``worth_probing``); a size whose bucket
    real uncached traffic measured during the last period (``measured``: buckets) is
    skipped; with ``speed`` (probes by need) so is one that could not change where an
    uncached prompt of that size goes (``probe_relevant``). A ``cold`` endpoint (no
    sample at all: new, re-enabled, an empty gateway) is probed at every size and
    below 8k too (``COLD_PROBE_TOKENS``, last; once if ``sizes`` hold it)."""
    if not worth_probing(endpoint, model, endpoints, tuning.dear_min_discount):
        return []
    if cold:
        return [*sizes] if COLD_PROBE_TOKENS in sizes else [*sizes, COLD_PROBE_TOKENS]
    wanted = [size for size in sizes if bucket_for(size) not in measured]
    if speed is None:
        return wanted
    return [
        size
        for size in wanted
        if probe_relevant(
            endpoint,
            size,
            model,
            endpoints,
            speed,
            ratio=tuning.fast_enough_ratio,
            under_s=tuning.fast_enough_under_s,
            dear_min_discount=tuning.dear_min_discount,
            under_s_long=tuning.fast_enough_under_s_long,
        )
    ]
