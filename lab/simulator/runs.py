"""A simulated request is a gateway session (``Run``), its attempts the session's legs
(``Leg``) with the market's drawn outcome; the orchestration is routing/core/session.py's."""

from __future__ import annotations

from dataclasses import dataclass

from routing.core.session import GatewaySession
from routing.core.session import Leg as SessionLeg

from .market import Outcome


class Leg(SessionLeg):
    """One attempt at one endpoint. ``data`` is the market's outcome, drawn when the leg
    opens: (kind, status, delay, cached); it resolves at ``start + delay``."""

    __slots__ = ()
    data: Outcome

    @property
    def delay(self) -> float:
        """Seconds from the leg's start to its first token (or its failure)."""
        return self.data[2]

    @property
    def cached(self) -> int:
        """Prompt tokens the provider read from its cache for this leg."""
        return self.data[3]


@dataclass(slots=True)
class Run(GatewaySession):
    """A request from arrival to its last token (or to its last failed attempt): the
    gateway session plus what only the simulator keeps.

    ``order`` is a non-plan strategy's ranking (endpoint ids); ``best_ttft`` the best
    first-token time any endpoint would have realised at arrival; ``cost`` the serving
    provider's bill; ``hit429`` whether any attempt got a 429; ``output_tokens`` what
    the serving endpoint sent or was sending (None: never served); ``primary_stalled``
    whether a hedged call's primary was stalled as the live gateway judges it
    (``SmartRouter.primary_stalled``; None: not hedged, or no leg won).
    """

    leg_type = Leg
    order: list[int] | None = None
    best_ttft: float | None = None
    cost: float = 0.0
    hit429: bool = False
    output_tokens: int | None = None
    primary_stalled: bool | None = None  # a hedged call's primary, by the live rule
