"""The pure daily hedge budget (R3.4)."""

from routing.core.budget import SECONDS_PER_DAY, InMemoryHedgeBudget, budget_day


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_reserve_until_spent_then_refuse():
    clock = Clock(10 * SECONDS_PER_DAY + 5)
    budget = InMemoryHedgeBudget(daily_usd=1.0, clock=clock)
    assert budget.try_reserve(0.6)
    assert not budget.try_reserve(0.5)  # all or nothing
    assert budget.try_reserve(0.4)
    assert budget.remaining() == 0.0


def test_settle_replaces_reservation_by_real_cost():
    clock = Clock(0.0)
    budget = InMemoryHedgeBudget(daily_usd=1.0, clock=clock)
    assert budget.try_reserve(0.8)
    budget.settle(0.8, 0.3, budget_day(clock()))
    assert abs(budget.remaining() - 0.7) < 1e-12


def test_resets_at_utc_midnight():
    clock = Clock(3 * SECONDS_PER_DAY - 1)
    budget = InMemoryHedgeBudget(daily_usd=1.0, clock=clock)
    assert budget.try_reserve(1.0) and not budget.try_reserve(0.01)
    clock.now += 1  # 00:00 UTC
    assert budget.remaining() == 1.0 and budget.try_reserve(0.01)


def test_negative_amounts_refused():
    assert not InMemoryHedgeBudget(daily_usd=1.0, clock=Clock(0)).try_reserve(-1)
