"""The daily hedge budget (R3.4) in the shared database: one row per UTC day.

Reserving is a single conditional UPDATE, so any number of gateway processes share the
budget without overspending it. The amounts follow the pure rules of
``routing.core.budget`` (reserve the estimate first, settle with the real cost).
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from decimal import Decimal

from django.db.models import F

from common.aio import db_call

from .config import gateway_config
from .core.budget import paced_allowance_usd
from .models import NANO, HedgeBudgetDay


def nano(usd: Decimal) -> int:
    """USD as whole nano-dollars, rounded up (a reservation never undercounts)."""
    return int((usd * NANO).to_integral_value(rounding="ROUND_CEILING"))


def utc_today() -> date:
    return datetime.now(UTC).date()


_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def day_number(day: date) -> int:
    """``day`` as the core's day number (``routing.core.budget.budget_day``)."""
    return day.toordinal() - _EPOCH_ORDINAL


def paced_allowance(budget: Decimal, day: date, now: float | None = None) -> Decimal:
    """What ``day``'s spend may reach at ``now`` (Unix s, default: now), as
    ``routing.core.budget.paced_allowance_usd``: the budget accrues over the UTC day plus
    ``HEDGE_BUDGET_BURST_S`` seconds' worth at 00:00 (default one hour; a day or more:
    not paced). Another day than ``now``'s: the whole budget."""
    burst = gateway_config().hedge_budget_burst_s
    now = time.time() if now is None else now
    if day != datetime.fromtimestamp(now, UTC).date():
        return budget
    return min(budget, Decimal(str(paced_allowance_usd(float(budget), now, burst))))


def hedge_budget_open_day(day: date | None = None) -> HedgeBudgetDay:
    """The day's row, created with the configured budget if it does not exist yet."""
    budget = nano(Decimal(str(gateway_config().hedge_budget_usd_per_day)))
    row, _ = HedgeBudgetDay.objects.get_or_create(
        day=day or utc_today(), defaults={"budget_nanousd": budget}
    )
    return row


def hedge_budget_try_reserve(amount: Decimal, day: date | None = None) -> bool:
    """Reserve ``amount`` USD today if the budget left covers it (atomic, all or nothing)."""
    row, amount_nano = hedge_budget_open_day(day), nano(amount)
    allowance = nano(paced_allowance(row.budget_usd, row.day))
    updated = (
        HedgeBudgetDay.objects.filter(
            id=row.id, spent_nanousd__lte=F("budget_nanousd") - amount_nano
        )
        .filter(spent_nanousd__lte=allowance - amount_nano)  # paced over the day
        .update(spent_nanousd=F("spent_nanousd") + amount_nano, hedges=F("hedges") + 1)
    )
    return updated == 1


def hedge_budget_replace(reserved: Decimal, actual: Decimal, day: date | None = None) -> None:
    """Replace a reservation by the real cost (never below zero)."""
    refund = nano(reserved) - nano(min(actual, reserved))
    HedgeBudgetDay.objects.filter(day=day or utc_today()).update(
        spent_nanousd=F("spent_nanousd") - refund
    )


def hedge_budget_remaining(day: date | None = None) -> Decimal:
    row = hedge_budget_open_day(day)
    return max(Decimal(0), paced_allowance(row.budget_usd, row.day) - row.spent_usd)


async def hedge_budget_reserve(amount: Decimal) -> bool:
    if not gateway_config().hedging:
        return False
    return await db_call(hedge_budget_try_reserve)(amount)


async def hedge_budget_settle(reserved: Decimal, actual: Decimal) -> None:
    await db_call(hedge_budget_replace)(reserved, actual)


def hedge_budget_left_usd(day: date | None = None) -> Decimal:
    """Today's budget left, read only (a day without a row has its whole budget)."""
    day = day or utc_today()
    row = HedgeBudgetDay.objects.filter(day=day).first()
    if row is None:
        budget = Decimal(str(gateway_config().hedge_budget_usd_per_day))
        return paced_allowance(budget, day)
    return max(Decimal(0), paced_allowance(row.budget_usd, row.day) - row.spent_usd)
