"""Mutable records of one request in flight (``Run``) and one upstream attempt (``Leg``)."""

from __future__ import annotations

from typing import Any

from routing.core import RoutePlan

from .traffic import SimRequest


class Leg:
    """One attempt at one endpoint: outcome drawn at its start, resolved at ``start + delay``."""

    __slots__ = (
        "cached",
        "cancelled",
        "delay",
        "endpoint_id",
        "hedge_leg",
        "kind",
        "nth",
        "run",
        "start",
        "status",
    )

    def __init__(
        self, run: Run, endpoint_id: int, start: float, outcome: tuple, nth: int, hedge_leg: bool
    ) -> None:
        self.run = run
        self.endpoint_id = endpoint_id
        self.start = start
        self.kind, self.status, self.delay, self.cached = outcome
        self.nth = nth
        self.hedge_leg = hedge_leg
        self.cancelled = False


class Run:
    """A request from arrival to its last token (or to its last failed attempt).

    ``plan`` (plan-based strategies) or ``order`` is the strategy's ranking; ``tried``
    every endpoint attempted (hedge legs included), in order; ``scratch`` is free for the
    strategy (e.g. the features it routed with).
    """

    __slots__ = (
        "active",
        "best_ttft",
        "cost",
        "done",
        "failures",
        "first_endpoint",
        "first_round",
        "hedge_cost",
        "hedge_day",
        "hedge_partner",
        "hedge_reserved",
        "hedged",
        "hit429",
        "lost_s",
        "order",
        "plan",
        "primary",
        "request",
        "scratch",
        "tried",
        "ttft_at",
        "winner",
    )

    def __init__(self, request: SimRequest) -> None:
        self.request = request
        self.plan: RoutePlan | None = None
        self.order: list[int] | None = None
        self.tried: list[int] = []
        self.active: list[Leg] = []
        self.winner: Leg | None = None
        self.primary: Leg | None = None
        self.first_round = True
        self.first_endpoint = 0
        self.ttft_at: float | None = None
        self.best_ttft: float | None = None
        self.lost_s = 0.0
        self.failures = 0
        self.hit429 = False
        self.hedged = False
        self.hedge_partner: Any = None
        self.hedge_reserved: float | None = None
        self.hedge_day = 0
        self.hedge_cost = 0.0  # what the gateway charges its budget (its own estimate)
        self.cost = 0.0
        self.done = False
        self.scratch: Any = None

    def tries_at(self, endpoint_id: int) -> int:
        """How many attempts of this request went to ``endpoint_id`` so far."""
        return self.tried.count(endpoint_id)
