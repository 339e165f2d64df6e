"""The pure daily hedge budget (R3.4)."""

from routing.core.budget import (
    SECONDS_PER_DAY,
    InMemoryHedgeBudget,
    budget_day,
    paced_allowance_usd,
)


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


def test_paced_budget_accrues_over_the_utc_day():
    """Issue 10: paced, what may be spent by t into the day is budget x (t + burst) / day,
    never more than the budget; unpaced (burst None), the whole budget from 00:00."""
    day0 = 7 * SECONDS_PER_DAY
    assert paced_allowance_usd(2.0, day0, 3_600) == 2.0 / 24  # an hour's share at 00:00
    assert paced_allowance_usd(2.0, day0 + SECONDS_PER_DAY / 2, 0) == 1.0
    assert paced_allowance_usd(2.0, day0 + SECONDS_PER_DAY - 1, 3_600) == 2.0
    assert paced_allowance_usd(2.0, day0 + 5, None) == 2.0
    assert paced_allowance_usd(2.0, day0 + 5, SECONDS_PER_DAY) == 2.0


def test_paced_budget_refuses_what_the_day_has_not_accrued_yet():
    clock = Clock(3 * SECONDS_PER_DAY + 6 * 3_600)  # 06:00 UTC
    budget = InMemoryHedgeBudget(daily_usd=2.4, clock=clock, burst_s=0.0)  # $0.1 an hour
    assert abs(budget.remaining() - 0.6) < 1e-9
    assert budget.try_reserve(0.5) and not budget.try_reserve(0.2)  # 0.7 > 0.6 accrued
    clock.now += 2 * 3_600  # 08:00: 0.8 accrued, 0.5 spent
    assert budget.try_reserve(0.2) and abs(budget.remaining() - 0.1) < 1e-9
    clock.now = 4 * SECONDS_PER_DAY  # next day: its own (paced) budget
    assert budget.remaining() == 0.0 and not budget.try_reserve(0.01)
