"""Per-request results of one strategy run and their summary (the report's numbers).

Times are simulated seconds measured from the request's arrival: ``ttft`` to the first
token the customer gets (retries and hedges included), ``whole`` to the last token.
Costs are USD: ``cost`` is what the customer is billed (the serving provider's bill,
R6.1; $0 for a request that failed, R4.2); hedge losers and probes are platform cost.
The headline ``total_cost_usd_per_1k_requests`` adds both: what routing really costs.

``summary(window)`` restricts every figure to a time window (``--from-minute``,
``--to-minute``): requests whose arrival falls in it, and platform spend (probes, hedge
losers, retried cut replies) incurred in it; the simulation itself always runs whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from .runs import Run

BUCKET_NAMES = ("<8k", "8k-32k", "32k-128k", ">128k")
MID_BUCKET = 2  # 32k-128k: R3.1's delayed hedges
HEDGE_SPLIT = (
    "hedge_legs_stalled",
    "hedge_legs_not_stalled",
    "hedge_spend_stalled",
    "hedge_spend_not_stalled",
    "mid_hedge_spend_stalled",
    "mid_hedge_spend_not_stalled",
)
LONG_TOKENS = 32_000


def is_long_stream(request: Any) -> bool:
    """A streamed request of 32k prompt tokens or more (R8's "long streams")."""
    return bool(request.stream) and request.prompt_tokens >= LONG_TOKENS


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in [0, 100]) of ascending values."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _times(values: list[float]) -> dict[str, Any]:
    values = sorted(values)
    return {
        "n": len(values),
        "mean": _r(sum(values) / len(values)) if values else None,
        "p50": _r(percentile(values, 50)),
        "p90": _r(percentile(values, 90)),
        "p95": _r(percentile(values, 95)),
    }


Window = tuple[float, float | None]  # (from, to) simulated seconds; to None: the end


class _Timed:
    """A platform total (``metrics.probe_spend += cost``) that also logs each change
    with the virtual time it happened at, so a window can sum only its own part."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_total_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__[self.slot]

    def __set__(self, obj: Any, value: float) -> None:
        values = obj.__dict__
        if self.slot in values:
            obj.changes.append((obj.clock(), self.name, value - values[self.slot]))
        values[self.slot] = value


class Metrics:
    """Collects one record per finished request, plus platform costs."""

    hedge_spend = _Timed()
    probe_spend = _Timed()
    probes = _Timed()
    cut_streams = _Timed()
    cut_spend = _Timed()
    long_stream_hedge_spend = _Timed()  # the part of hedge_spend for streams >= 32k
    long_probe_spend = _Timed()  # the part of probe_spend at sizes >= 32k
    # hedge legs and what their losses cost, split by whether the market had drawn a
    # stall for the primary leg (the truth); "mid": prompts of 32k-128k
    hedge_legs_stalled = _Timed()
    hedge_legs_not_stalled = _Timed()
    hedge_spend_stalled = _Timed()
    hedge_spend_not_stalled = _Timed()
    mid_hedge_spend_stalled = _Timed()
    mid_hedge_spend_not_stalled = _Timed()

    def __init__(
        self,
        provider_of: dict[int, str],
        window_s: float = 300.0,
        clock: Callable[[], float] = lambda: 0.0,
    ) -> None:
        self.provider_of = provider_of
        self.window_s = window_s
        self.clock = clock  # the virtual clock (the engine's ``now``)
        self.changes: list[tuple[float, str, float]] = []  # (time, platform total, delta)
        self.records: list[tuple] = []
        self.hedge_spend = 0.0
        self.probe_spend = 0.0
        self.probes = 0
        self.probe_failures = 0
        self.probe_spend_by_day: dict[int, float] = {}  # UTC day number -> USD
        self.probe_budget_usd_per_day = 0.0  # 0: no limit
        self.probes_over_budget = 0  # probes not sent: the day's budget was spent
        self.probes_below_volume = 0  # probes not sent: too little traffic of that size
        self.hedge_legs = 0
        for name in HEDGE_SPLIT:
            setattr(self, name, 0.0)
        self.cut_streams = 0  # served calls the provider cut (endpoint cut_rate)
        self.cut_spend = 0.0  # what cut replies being assembled whole cost (retried)
        self.long_stream_hedge_spend = 0.0
        self.long_probe_spend = 0.0
        # (window, bucket index) -> endpoint id -> requests whose first attempt went there
        self.first_choice: dict[tuple[int, int], dict[int, int]] = defaultdict(
            lambda: defaultdict(int)
        )

    def record(self, run: Run, now: float, failed: bool) -> None:
        request = run.request
        ttft = None if failed or run.ttft_at is None else run.ttft_at - request.t
        best = run.best_ttft
        fast = None if best is None or ttft is None else (ttft <= 2 * best or ttft < 1.0)
        served = 0 if failed or run.winner is None else run.winner.endpoint_id
        self.records.append(
            (
                request.bucket_index,
                request.stream,
                request.prompt_tokens,
                request.output_tokens if run.output_tokens is None else run.output_tokens,
                failed,
                ttft,
                now - request.t,
                run.cost,
                run.failures > 0,
                run.hit429,
                run.hedged,
                run.lost_s,
                served,
                fast,
                request.t,
                run.primary_stalled,
                request.earlier_turns(),
            )
        )
        window = int(request.t // self.window_s)
        self.first_choice[(window, request.bucket_index)][run.first_endpoint] += 1

    def _platform(self, window: Window | None) -> dict[str, float]:
        """The platform totals, or their part incurred within ``window``."""
        names = (
            "hedge_spend",
            "probe_spend",
            "probes",
            "cut_streams",
            "cut_spend",
            "long_stream_hedge_spend",
            "long_probe_spend",
            *HEDGE_SPLIT,
        )
        if window is None:
            return {name: getattr(self, name) for name in names}
        start, end = window
        totals = dict.fromkeys(names, 0.0)
        for t, name, delta in self.changes:
            if t >= start and (end is None or t < end):
                totals[name] += delta
        totals["probes"] = round(totals["probes"])
        totals["cut_streams"] = round(totals["cut_streams"])
        return totals

    def summary(self, window: Window | None = None) -> dict[str, Any]:
        """The figures of the report; with ``window`` (from, to) in simulated seconds,
        of the requests arriving in [from, to) and the platform spend incurred then
        (``probe_spend_by_day`` and ``probes_over_budget`` stay whole-run: they are the
        probe budget's own bookkeeping)."""
        rows = self._rows_in(window)
        platform = self._platform(window)
        n = len(rows) or 1
        served = [r for r in rows if not r[4]]
        return {
            "requests": len(rows),
            "failed_share": _r(sum(r[4] for r in rows) / n, 5),
            "ttft_s": _times([r[5] for r in served]),
            "ttft_s_by_bucket": {
                name: _times([r[5] for r in served if r[0] == index])
                for index, name in enumerate(BUCKET_NAMES)
            },
            "whole_request_s": _times([r[6] for r in served]),
            **self._costs(rows, served, platform),
            "retry_share": _r(sum(r[8] for r in rows) / n, 5),
            "share_with_429": _r(sum(r[9] for r in rows) / n, 5),
            "hedged_share": _r(sum(r[10] for r in rows) / n, 5),
            "hedges": _hedge_split(rows, platform),
            **self._platform_figures(platform, n),
            "lost_ms_per_request": _r(1000 * sum(r[11] for r in rows) / n, 1),
            "fast_enough_share": _fast_enough_share(served),
            **self._provider_shares(served),
        }

    def _rows_in(self, window: Window | None) -> list[tuple]:
        """The records of the requests arriving in ``window`` (all without one)."""
        if window is None:
            return self.records
        start, end = window
        return [r for r in self.records if r[14] >= start and (end is None or r[14] < end)]

    @staticmethod
    def _costs(rows: list[tuple], served: list[tuple], platform: dict) -> dict[str, Any]:
        """What customers paid, with platform spend (the headline), and long streams'."""
        n = len(rows) or 1
        cost = sum(r[7] for r in rows)
        hedge, probe, cut = platform["hedge_spend"], platform["probe_spend"], platform["cut_spend"]
        tokens = sum(r[2] + r[3] for r in served) or 1
        long_streams = [r for r in served if r[1] and r[2] >= LONG_TOKENS]
        long_cost = sum(r[7] for r in long_streams)
        hedge_part, probe_part = _long_stream_platform(rows, long_cost, platform)
        per_1k = 1000 / (len(long_streams) or 1)
        return {
            "cost_usd_per_1k_requests": _r(1000 * cost / n, 5),
            # the headline: what customers paid plus platform spend (probes, hedge legs)
            "total_cost_usd_per_1k_requests": _r(1000 * (cost + hedge + probe + cut) / n, 5),
            "cost_usd_per_1m_tokens": _r(1e6 * cost / tokens, 5),
            "long_streams": {
                "n": len(long_streams),
                "cost_usd_per_1k": _r(1000 * long_cost / (len(long_streams) or 1), 5),
                "platform_usd_per_1k": _r(per_1k * (hedge_part + probe_part), 5),
                "platform_hedge_usd_per_1k": _r(per_1k * hedge_part, 5),
                "platform_probes_usd_per_1k": _r(per_1k * probe_part, 5),
                "platform_share_of_cost": (
                    _r((hedge_part + probe_part) / long_cost, 5) if long_cost else None
                ),
                "ttft_s": _times([r[5] for r in long_streams]),
            },
        }

    def _platform_figures(self, platform: dict, n: int) -> dict[str, Any]:
        """Hedge, probe and cut spend, and the probe budget's bookkeeping."""
        spend = platform["hedge_spend"] + platform["probe_spend"] + platform["cut_spend"]
        by_day = sorted(self.probe_spend_by_day.items())
        return {
            "hedge_spend_usd": _r(platform["hedge_spend"], 5),
            "probe_spend_usd": _r(platform["probe_spend"], 5),
            "probes": platform["probes"],
            "cut_streams": platform["cut_streams"],
            "probe_budget_usd_per_day": self.probe_budget_usd_per_day,
            "probe_spend_by_day": {str(day): _r(usd, 6) for day, usd in by_day},
            "probes_over_budget": self.probes_over_budget,
            "probes_below_volume": self.probes_below_volume,
            "platform_usd_per_1k_requests": _r(1000 * spend / n, 5),
        }

    def _provider_shares(self, served: list[tuple]) -> dict[str, Any]:
        """Each provider's share of the served calls, overall and per bucket, and of the
        served follow-up turns (a conversation's turns after its first: where it lives)."""
        by_provider: dict[str, int] = defaultdict(int)
        by_bucket: list[dict[str, int]] = [defaultdict(int) for _ in BUCKET_NAMES]
        followups: dict[str, int] = defaultdict(int)
        for r in served:
            by_provider[self.provider_of[r[12]]] += 1
            by_bucket[r[0]][self.provider_of[r[12]]] += 1
            if r[16] > 0:
                followups[self.provider_of[r[12]]] += 1
        return {
            "provider_share": _shares(by_provider, len(served), 5),
            "followup_turns": sum(followups.values()),
            "followup_share": _shares(followups, sum(followups.values()), 5),
            "provider_share_by_bucket": {
                name: _shares(by_bucket[index], sum(by_bucket[index].values()), 4)
                for index, name in enumerate(BUCKET_NAMES)
            },
        }

    def timeline(self) -> list[dict[str, Any]]:
        """Per window and bucket: share of first attempts per provider."""
        out = []
        for (window, bucket), counts in sorted(self.first_choice.items()):
            total = sum(counts.values())
            shares: dict[str, float] = defaultdict(float)
            for endpoint_id, count in counts.items():
                shares[self.provider_of.get(endpoint_id, "-")] += count / total
            out.append(
                {
                    "from_min": round(window * self.window_s / 60, 2),
                    "bucket": BUCKET_NAMES[bucket],
                    "requests": total,
                    "first_choice_share": {k: round(v, 4) for k, v in sorted(shares.items())},
                }
            )
        return out


def _long_stream_platform(
    rows: list[tuple], long_stream_cost: float, platform: dict
) -> tuple[float, float]:
    """Platform spend caused by long streams (product.md "Decisions"), as (their cancelled
    hedge legs, their part of the probes of sizes >= 32k: in proportion to the long
    streams' part of what customers paid for requests of 32k tokens and more)."""
    long_cost = sum(r[7] for r in rows if r[2] >= LONG_TOKENS)
    share = long_stream_cost / long_cost if long_cost else 0.0
    return platform["long_stream_hedge_spend"], share * platform["long_probe_spend"]


def hedge_split(
    metrics: Metrics, bucket_index: int, primary_stalled: bool, spend_usd: float | None
) -> None:
    """Count a hedge leg (``spend_usd`` None) or its lost prompt's cost, by whether its
    primary was stalled; a 32k-128k request's spend also in the "mid" totals."""
    tail = "stalled" if primary_stalled else "not_stalled"
    if spend_usd is None:
        name = "hedge_legs_" + tail
        setattr(metrics, name, getattr(metrics, name) + 1)
        return
    names = ["hedge_spend_" + tail]
    if bucket_index == MID_BUCKET:
        names.append("mid_hedge_spend_" + tail)
    for name in names:
        setattr(metrics, name, getattr(metrics, name) + spend_usd)


def _hedge_split(rows: list[tuple], platform: dict) -> dict[str, Any]:
    """Hedge legs and spend by whether the primary was stalled (the market's draw), the
    32k-128k spend on primaries that were not, and the live rule's verdicts."""
    mid_stalled = platform["mid_hedge_spend_stalled"]
    mid_not = platform["mid_hedge_spend_not_stalled"]
    verdicts = [r[15] for r in rows if r[15] is not None]
    return {
        "legs_primary_stalled": round(platform["hedge_legs_stalled"]),
        "legs_primary_not_stalled": round(platform["hedge_legs_not_stalled"]),
        "spend_usd_primary_stalled": _r(platform["hedge_spend_stalled"], 5),
        "spend_usd_primary_not_stalled": _r(platform["hedge_spend_not_stalled"], 5),
        "spend_32k_128k_not_stalled_share": _r(mid_not / ((mid_stalled + mid_not) or 1), 4),
        "judged_stalled_live_rule": sum(verdicts),
        "judged_not_stalled_live_rule": len(verdicts) - sum(verdicts),
    }


def _shares(counts: dict[str, int], total: int, digits: int) -> dict[str, float]:
    return {slug: _r(count / (total or 1), digits) for slug, count in sorted(counts.items())}


def _fast_enough_share(served: list[tuple]) -> float:
    fast = [r[13] for r in served if r[13] is not None]
    return _r(sum(fast) / (len(fast) or 1), 5)
