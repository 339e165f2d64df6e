"""Probes (R5) on the virtual clock: the live gateway's probe rules (routing.core.probe).

At the start of every ``probe_period_s`` cycle: one max_tokens=1 call per endpoint and
probe size that fits its context (the sizes the strategy asks for: ``core.probe.probe_sizes``;
smart skips a size whose bucket real uncached traffic measured during the last period,
and adds a <8k probe for an endpoint without any data), with a fresh (uncached) prompt.
When the live gateway's confirmation rule is available (routing.core.probe), a probe that disagrees
with the bucket's typical TTFT by more than 2x is followed at once by two more; if most
of them shift the same way the bucket's window restarts from these probes. The calls
of one probe must finish within ``probe_timeout_s`` in all; a failure marks the
endpoint unusable and records nothing. Every answered call (prompt + one output token)
is platform cost. A daily budget (``probe_budget_usd_per_day``, 0 = none) stops probes
for the rest of the UTC day once the day's probe spend plus the cycle's probes at their
worst cost would exceed it. With ``probe_spend_share`` s > 0 (probes by volume,
``core.probe.within_volume_share``), a probe is also sent only if the probes of its
model's size bucket over the last hour, this one included, cost at most s x what that
model's customers paid for requests of that bucket finished in the last hour; an
endpoint without data in the bucket is probed anyway.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import TYPE_CHECKING

from routing.core import BUCKETS, bucket_for, budget_day
from routing.core.lessons import Probed
from routing.core.probe import probe_worst_cost, within_probe_budget, within_volume_share

from .market import OK
from .metrics import LONG_TOKENS
from .randomness import mix

if TYPE_CHECKING:
    from .shell import Shell

try:  # the confirmation rule may not exist in every version of the core
    from routing.core.probe import CONFIRMATIONS, confirmed_shift, shift_direction
except ImportError:  # pragma: no cover - older core: single probes
    CONFIRMATIONS, confirmed_shift, shift_direction = 0, None, None


class ProbeRequest:
    """The market's view of a probe: a fresh prompt, nothing cached, one output token."""

    __slots__ = (
        "cache_key",
        "output_tokens",
        "prompt_tokens",
        "rseed",
        "shared_key",
        "shared_tokens",
    )

    def __init__(self, prompt_tokens: int, rseed: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.rseed = rseed
        self.cache_key = self.shared_key = -1
        self.shared_tokens = 0
        self.output_tokens = 1


class Probe:
    """One (cycle, endpoint, size) probe and its confirmations."""

    __slots__ = ("cycle", "endpoint_id", "size", "started", "ttfts", "typical")

    def __init__(self, cycle: int, endpoint_id: int, size: int, started: float) -> None:
        self.cycle = cycle
        self.endpoint_id = endpoint_id
        self.size = size
        self.started = started
        self.ttfts: list[float] = []
        self.typical: float | None = None


class VolumeLedger:
    """What customers and probes spent per (model, bucket) over the last ``window_s``
    (probes by volume). Customer spend is read from the run's records as they finish."""

    def __init__(self, engine: Shell, window_s: float = 3600.0) -> None:
        self.engine = engine
        self.window_s = window_s
        self.read = 0  # records already taken in
        self.customer: dict[tuple[int, str], deque] = defaultdict(deque)
        self.probes: dict[tuple[int, str], deque] = defaultdict(deque)

    def _take_in(self) -> None:
        records, endpoints = self.engine.metrics.records, self.engine.market.endpoints
        for record in records[self.read :]:
            served, cost = record[12], record[7]
            if served and cost:
                key = (endpoints[served].model, BUCKETS[record[0]])
                self.customer[key].append((record[14] + record[6], cost))
        self.read = len(records)

    @staticmethod
    def _total(entries: deque, since: float) -> float:
        while entries and entries[0][0] < since:
            entries.popleft()
        return sum(cost for _, cost in entries)

    def allows(self, model: int, bucket: str, probe_cost: float, share: float) -> bool:
        self._take_in()
        since = self.engine.now - self.window_s
        customer = self._total(self.customer[(model, bucket)], since)
        probes = self._total(self.probes[(model, bucket)], since)
        return within_volume_share(customer, probes, probe_cost, share)

    def probed(self, model: int, bucket: str, cost: float) -> None:
        self.probes[(model, bucket)].append((self.engine.now, cost))


class Prober:
    def __init__(self, engine: Shell) -> None:
        self.engine = engine
        gateway = engine.scenario.gateway
        self.period = float(gateway["probe_period_s"])
        self.sizes = [int(size) for size in gateway["probe_sizes"]]
        self.timeout = float(gateway["probe_timeout_s"])
        self.budget = float(gateway["probe_budget_usd_per_day"] or 0)
        self.cycle_reserved = 0.0  # worst cost of the probes this cycle sends
        self.volume_share = float(gateway["probe_spend_share"] or 0)
        self.volume = VolumeLedger(engine)
        engine.metrics.probe_budget_usd_per_day = self.budget

    def start(self) -> None:
        if self.engine.strategy.uses_probes and self.period > 0:
            self.engine.at(0.0, self.cycle, 0)

    def cycle(self, number: int) -> None:
        engine = self.engine
        now = engine.now
        if now > engine.traffic.duration_s:
            return
        engine.market.purge(now)
        strategy = engine.strategy
        self.cycle_reserved = 0.0
        for state in engine.market.endpoints[1:]:
            for size in strategy.probe_sizes(state.endpoint_id, self.sizes, now):
                if (
                    size + 1 <= state.context_length
                    and self._worth_its_volume(state.endpoint_id, size)
                    and self._affordable(state.endpoint_id, size)
                ):
                    self._call(Probe(number, state.endpoint_id, size, now))
        engine.at(now + self.period, self.cycle, number + 1)

    def _worth_its_volume(self, endpoint_id: int, size: int) -> bool:
        """Probes by volume (``probe_spend_share``); an endpoint without data in the
        bucket is probed anyway."""
        if self.volume_share <= 0:
            return True
        engine = self.engine
        bucket = bucket_for(size)
        if engine.strategy.probe_typical(endpoint_id, bucket, engine.now) is None:
            return True
        cost = engine.market.cost(endpoint_id, ProbeRequest(size, 0), 0, 1)  # type: ignore[arg-type]
        model = engine.market.endpoints[endpoint_id].model
        if self.volume.allows(model, bucket, cost, self.volume_share):
            return True
        engine.metrics.probes_below_volume += 1
        return False

    def _affordable(self, endpoint_id: int, size: int) -> bool:
        """The daily probe budget (``core.probe.within_probe_budget``): a probe is sent only
        if what probes cost so far this UTC day plus the worst cost (with confirmations)
        of this cycle's probes, this one included, stays within the budget."""
        if self.budget <= 0:
            return True
        engine = self.engine
        spent = engine.metrics.probe_spend_by_day.get(budget_day(engine.sim.epoch()), 0.0)
        cost = engine.market.cost(endpoint_id, ProbeRequest(size, 0), 0, 1)  # type: ignore[arg-type]
        if not within_probe_budget(spent + self.cycle_reserved, cost, self.budget):
            engine.metrics.probes_over_budget += 1
            return False
        self.cycle_reserved += probe_worst_cost(cost)
        return True

    def _call(self, probe: Probe) -> None:
        engine = self.engine
        market, now = engine.market, engine.now
        key = mix(
            engine.seed, 0x9B0BE, probe.cycle, probe.endpoint_id, probe.size, len(probe.ttfts)
        )
        request = ProbeRequest(probe.size, key)
        kind, _, delay, _ = market.outcome(request, probe.endpoint_id, now)  # type: ignore[arg-type]
        ok = kind == OK and now + delay - probe.started <= self.timeout
        if not ok:
            delay = min(delay, max(0.0, probe.started + self.timeout - now))
        market.inflight[probe.endpoint_id] += 1
        if kind == OK:
            market.accepted(probe.endpoint_id, probe.size, now)
        engine.metrics.probes += 1
        engine.at(now + delay, self._done, (probe, ok, delay))

    def _done(self, arg: tuple[Probe, bool, float]) -> None:
        probe, ok, ttft = arg
        engine = self.engine
        market, strategy, now = engine.market, engine.strategy, engine.now
        market.inflight[probe.endpoint_id] -= 1
        if not ok:
            engine.metrics.probe_failures += 1
            strategy.on_probe(Probed(probe.endpoint_id, probe.size, None, False), now)
            return
        cost = market.cost(probe.endpoint_id, ProbeRequest(probe.size, 0), 0, 1)  # type: ignore[arg-type]
        engine.metrics.probe_spend += cost
        if probe.size >= LONG_TOKENS:
            engine.metrics.long_probe_spend += cost
        self.volume.probed(
            engine.market.endpoints[probe.endpoint_id].model, bucket_for(probe.size), cost
        )
        day = budget_day(engine.sim.epoch())
        by_day = engine.metrics.probe_spend_by_day
        by_day[day] = by_day.get(day, 0.0) + cost
        probe.ttfts.append(ttft)
        bucket = bucket_for(probe.size)
        if len(probe.ttfts) == 1 and shift_direction is not None:
            probe.typical = strategy.probe_typical(probe.endpoint_id, bucket, now)
            if shift_direction(probe.typical, ttft) != 0:
                self._call(probe)  # confirm at once
                return
        elif 1 < len(probe.ttfts) <= CONFIRMATIONS:
            self._call(probe)
            return
        restart = len(probe.ttfts) > 1 and bool(confirmed_shift(probe.typical, probe.ttfts))
        strategy.on_probe(Probed(probe.endpoint_id, probe.size, tuple(probe.ttfts), restart), now)
