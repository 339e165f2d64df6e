"""The daily hedge budget (R3.4), pure: what a hedge may spend, day by day (UTC).

A hedge is started only if the budget left covers its estimated cost: that amount is
*reserved* first, then *settled* with the loser's real cost (which may be lower or, if
the provider billed more than estimated, higher) once the race is over. The live
gateway keeps the same numbers in one database row per day, updated atomically; the
simulator uses ``InMemoryHedgeBudget`` on its virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

SECONDS_PER_DAY = 86_400
HEDGE_BUDGET_BURST_S = 3_600.0  # default pacing: one hour's share available at 00:00 UTC


def budget_day(now: float) -> int:
    """The UTC day number of a Unix time: the budget resets at 00:00 UTC."""
    return int(now // SECONDS_PER_DAY)


def paced_allowance_usd(daily_usd: float, now: float, burst_s: float | None) -> float:
    """How much of the day's budget may be spent by ``now`` (Unix seconds), paced.

    R3.4 gives hedging a fixed daily budget; spent greedily it is gone within the first
    hour after 00:00 UTC at a few req/s (docs/simulator.md, finding 7) and every later
    long stream of the day goes unhedged. Paced, the budget accrues evenly over the UTC
    day, plus ``burst_s`` seconds' worth at 00:00 so hedging can start at once: by time
    t into the day at most ``daily_usd * min(1, (t + burst_s) / 86400)`` is spent. What
    is not spent in one hour stays available later the same day. ``burst_s`` None (or
    >= a day): not paced, the whole budget from 00:00.
    """
    if burst_s is None or burst_s >= SECONDS_PER_DAY:
        return daily_usd
    into_day = now - budget_day(now) * SECONDS_PER_DAY
    return daily_usd * min(1.0, (into_day + max(0.0, burst_s)) / SECONDS_PER_DAY)


@dataclass(slots=True)
class InMemoryHedgeBudget:
    """``daily_usd`` per UTC day; ``clock`` returns Unix seconds (virtual or real);
    ``burst_s``: paced over the day (``paced_allowance_usd``), None = not paced."""

    daily_usd: float
    clock: Callable[[], float]
    spent_by_day: dict[int, float] = field(default_factory=dict)
    burst_s: float | None = None

    def allowance(self) -> float:
        """What today's spend may reach now: the daily budget, or its paced share."""
        return paced_allowance_usd(self.daily_usd, self.clock(), self.burst_s)

    def remaining(self) -> float:
        return max(0.0, self.allowance() - self.spent_by_day.get(budget_day(self.clock()), 0.0))

    def try_reserve(self, amount_usd: float) -> bool:
        """Reserve ``amount_usd`` if the budget left covers it (all or nothing)."""
        day = budget_day(self.clock())
        spent = self.spent_by_day.get(day, 0.0)
        if amount_usd < 0 or spent + amount_usd > self.allowance():
            return False
        self.spent_by_day[day] = spent + amount_usd
        return True

    def settle(self, reserved_usd: float, actual_usd: float, reserved_day: int) -> None:
        """Replace a reservation by the real cost, on the day it was reserved."""
        spent = self.spent_by_day.get(reserved_day, 0.0)
        self.spent_by_day[reserved_day] = max(0.0, spent - reserved_usd + actual_usd)
