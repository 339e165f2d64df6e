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


def budget_day(now: float) -> int:
    """The UTC day number of a Unix time: the budget resets at 00:00 UTC."""
    return int(now // SECONDS_PER_DAY)


@dataclass(slots=True)
class InMemoryHedgeBudget:
    """``daily_usd`` per UTC day; ``clock`` returns Unix seconds (virtual or real)."""

    daily_usd: float
    clock: Callable[[], float]
    spent_by_day: dict[int, float] = field(default_factory=dict)

    def remaining(self) -> float:
        return max(0.0, self.daily_usd - self.spent_by_day.get(budget_day(self.clock()), 0.0))

    def try_reserve(self, amount_usd: float) -> bool:
        """Reserve ``amount_usd`` if the budget left covers it (all or nothing)."""
        day = budget_day(self.clock())
        spent = self.spent_by_day.get(day, 0.0)
        if amount_usd < 0 or spent + amount_usd > self.daily_usd:
            return False
        self.spent_by_day[day] = spent + amount_usd
        return True

    def settle(self, reserved_usd: float, actual_usd: float, reserved_day: int) -> None:
        """Replace a reservation by the real cost, on the day it was reserved."""
        spent = self.spent_by_day.get(reserved_day, 0.0)
        self.spent_by_day[reserved_day] = max(0.0, spent - reserved_usd + actual_usd)
