"""The gateway session: one request's attempts, retries and hedge race, sans-IO.

The session owns the orchestration that the live gateway and the simulator share
(R3 hedging, R4 retries): which attempt comes next, when a hedge leg starts, which leg
wins, which are cancelled, when the request gives up. It does no I/O and reads no
clock: the shell feeds it events with the time they happened, and executes the
actions it returns (the shells: routing/gateway/call.py with asyncio tasks,
lab/simulator/shell.py on a virtual clock). Where to go and what to learn are the
``Router``'s business (the live gateway's plan-based router, or a simulator strategy).

    session = GatewaySession(request, router)
    session.start(now)                    -> [OpenLeg(1, e1)] (+ StartTimer("hedge", t))
    session.first_token(1, now)           -> [CancelLeg(2, lost=True), Serve(1)]
    session.failed(1, kind, status, now)  -> [OpenLeg(2, e2)] | [GiveUp()] | []
                                             | [SwitchModel(r), OpenLeg(3, e5)]
    session.timer("hedge", now)           -> [OpenLeg(2, e3, hedge=True, reserve_usd=r)]
    session.ended(1, now, ok)             -> [Done()]
    session.client_gone(now)              -> [CancelLeg(...), Done()]

Model fallback (OpenRouter's ``models``): when no endpoint of the request's model is
left before the first token, a router that has ``next_model(session, now)`` may move
the request to its next model (it returns the new request, or None); the session then
asks ``next_attempt`` again and tells the shell with ``SwitchModel`` before the new
leg. A router without that method (the simulator's strategies) never switches.

Invariants: an endpoint is attempted at most once per request (hedge legs included);
at most one leg serves; a leg that fails does not end a race while another leg is
alive; the hedge reservation is settled (``Router.end_hedge``) exactly once, when the
race it was made for is over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from .hedge import HedgeDecision

Step = tuple[int, float]  # (endpoint_id, delay_s before the attempt starts)


@dataclass(frozen=True, slots=True)
class HedgeStart:
    """Race ``endpoint_id``; ``reserve_usd`` of the UTC ``day``'s hedge budget is held
    for it (``Router.start_hedge``; the session keeps it until the race is over)."""

    endpoint_id: int
    reserve_usd: float
    day: int


class Leg:
    """One attempt at one endpoint. ``data`` belongs to the shell (its connection, or
    the simulator's drawn outcome); ``kind``/``status`` are set when the leg fails."""

    __slots__ = (
        "cancelled",
        "data",
        "endpoint_id",
        "failed",
        "hedge_leg",
        "kind",
        "no",
        "nth",
        "served",
        "start",
        "status",
    )

    def __init__(self, no: int, endpoint_id: int, start: float, hedge_leg: bool, nth: int) -> None:
        self.no = no
        self.endpoint_id = endpoint_id
        self.start = start
        self.hedge_leg = hedge_leg
        self.nth = nth  # earlier attempts of this request at the same endpoint
        self.cancelled = False
        self.failed = False
        self.served = False
        self.kind = ""
        self.status: int | None = None
        self.data: Any = None

    def __repr__(self) -> str:
        return f"Leg({self.no}, endpoint={self.endpoint_id}, hedge={self.hedge_leg})"


# --- actions the shell executes --------------------------------------------------------
@dataclass(frozen=True, slots=True)
class OpenLeg:
    """Start attempt ``leg``; a hedge leg carries the USD its race reserved."""

    leg: Leg
    reserve_usd: float | None = None


@dataclass(frozen=True, slots=True)
class StartTimer:
    """Call ``session.timer(name, at)`` at ``at`` unless the session is done by then."""

    name: str
    at: float
    endpoint_id: int | None = None


@dataclass(frozen=True, slots=True)
class CancelLeg:
    """Close ``leg`` now; ``lost``: a hedge leg that lost the race (its prompt is
    platform cost), else a leg dropped because the request ended."""

    leg: Leg
    lost: bool


@dataclass(frozen=True, slots=True)
class Serve:
    """``leg`` produced the first token: relay it to the client."""

    leg: Leg


@dataclass(frozen=True, slots=True)
class SwitchModel:
    """The request moved to its next fallback model: ``request`` (the router's new
    request) replaces the shell's from now on (its reply and record name that model)."""

    request: Any


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Every attempt failed (or none could be made): answer the last failure."""

    last_failure: Leg | None


@dataclass(frozen=True, slots=True)
class Done:
    """The request is over: ``outcome`` is success, error, cut or cancelled."""

    outcome: str


Action = OpenLeg | StartTimer | CancelLeg | Serve | SwitchModel | GiveUp | Done


class Router(Protocol):
    """Where to go and what to learn: the session asks, the router answers.

    ``first``/``next_attempt`` return (endpoint_id, delay_s) or None (no endpoint
    left). ``start_hedge`` returns the partner and the hedge budget it reserved
    (``HedgeStart``), or None; ``on_cancel`` what the cancelled loser cost. The router
    returns values and never assigns into the session: the session keeps them
    (``hedge_reserved``, ``hedge_day``, ``hedge_cost``). The ``on_*`` hooks tell the
    router what happened, at the time it happened, so it can learn.
    """

    def first(self, session: GatewaySession, now: float) -> Step | None: ...
    def next_attempt(self, session: GatewaySession, now: float) -> Step | None: ...
    def hedge_decision(self, session: GatewaySession, now: float) -> HedgeDecision: ...
    def start_hedge(self, session: GatewaySession, now: float) -> HedgeStart | None: ...
    def end_hedge(self, session: GatewaySession, now: float) -> None: ...
    def on_cancel(self, session: GatewaySession, leg: Leg) -> float: ...
    def on_first_token(self, session: GatewaySession, leg: Leg, now: float) -> None: ...
    def on_failure(self, session: GatewaySession, leg: Leg, now: float) -> None: ...
    def on_success(self, session: GatewaySession, leg: Leg, now: float) -> None: ...
    def on_cut(self, session: GatewaySession, leg: Leg, now: float) -> None: ...


@dataclass(slots=True)
class GatewaySession:
    """One request from acceptance to its end; see the module doc.

    ``request`` is the shell's accepted request (opaque here); ``plan`` and ``scratch``
    are the router's (its route plan and whatever it routed with). A shell that needs
    more on its legs sets ``leg_type`` to a subclass of ``Leg`` (same constructor).
    """

    leg_type: ClassVar[type[Leg]] = Leg
    request: Any
    router: Router
    plan: Any = None
    scratch: Any = None
    legs: list[Leg] = field(default_factory=list)
    tried: list[int] = field(default_factory=list)
    active: list[Leg] = field(default_factory=list)
    primary: Leg | None = None
    winner: Leg | None = None
    last_failure: Leg | None = None
    first_round: bool = True
    first_endpoint: int = 0
    hedged: bool = False
    hedge_reserved: float | None = None
    hedge_day: int = 0
    hedge_cost: float = 0.0  # what the losers cost (the gateway's own estimate)
    ttft_at: float | None = None
    failures: int = 0
    model_switches: int = 0
    lost_s: float = 0.0  # time spent on attempts that failed
    outcome: str = ""  # set once done: success, error, cut, cancelled
    done: bool = False

    # --- events ------------------------------------------------------------------------
    def start(self, now: float) -> list[Action]:
        """The request was accepted: its first attempt (possibly after a delay)."""
        step = self.router.first(self, now)
        if step is None:
            return self._give_up()
        endpoint_id, delay = step
        self.first_endpoint = endpoint_id
        if delay > 0:
            return [StartTimer("first", now + delay, endpoint_id)]
        return self._open_first(endpoint_id, now)

    def timer(self, name: str, now: float, endpoint_id: int | None = None) -> list[Action]:
        """A timer the session asked for went off."""
        if self.done:
            return []
        if name == "first":
            return self._open_first(self.first_endpoint, now)
        if name == "retry" and endpoint_id is not None:
            return [OpenLeg(self._new_leg(endpoint_id, now, hedge_leg=False))]
        if name == "hedge":
            primary = self.primary
            if self.winner is None and primary is not None and primary in self.active:
                return self._try_hedge(now)
        return []

    def first_token(self, leg_no: int, now: float) -> list[Action]:
        """A leg produced its first token: it wins; every other leg is cancelled."""
        leg = self.legs[leg_no - 1]
        if leg.cancelled or leg.failed or self.done or self.winner is not None:
            return []
        self.winner = leg
        leg.served = True
        self.ttft_at = now
        self.active.remove(leg)
        actions: list[Action] = []
        for loser in self.active:
            loser.cancelled = True
            self.hedge_cost += self.router.on_cancel(self, loser)
            actions.append(CancelLeg(loser, lost=True))
        self.active = []
        self._settle_hedge(now)
        self.router.on_first_token(self, leg, now)
        actions.append(Serve(leg))
        return actions

    def failed(self, leg_no: int, kind: str, status: int | None, now: float) -> list[Action]:
        """A leg failed before its first token (``kind``: http, connect, timeout,
        protocol; ``status``: the upstream's HTTP status, if any)."""
        leg = self.legs[leg_no - 1]
        if leg.cancelled or leg.failed or self.done:
            return []
        leg.failed, leg.kind, leg.status = True, kind, status
        self.active.remove(leg)
        self.lost_s += now - leg.start
        self.failures += 1
        self.last_failure = leg
        self.router.on_failure(self, leg, now)
        if self.active:
            return []  # the other leg of the race is still alive
        self._settle_hedge(now)
        self.first_round = False
        switched: list[Action] = []
        step = self.router.next_attempt(self, now)
        while step is None and (request := self._next_model(now)) is not None:
            switched.append(SwitchModel(request))
            step = self.router.next_attempt(self, now)
        if step is None:
            return switched + self._give_up()
        endpoint_id, delay = step
        if delay > 0:
            return [*switched, StartTimer("retry", now + delay, endpoint_id)]
        return [*switched, OpenLeg(self._new_leg(endpoint_id, now, hedge_leg=False))]

    def _next_model(self, now: float) -> Any:
        """The request on its next fallback model, or None (see the module doc)."""
        next_model = getattr(self.router, "next_model", None)
        if next_model is None or self.winner is not None:
            return None
        request = next_model(self, now)
        if request is not None:
            self.request = request
            self.model_switches += 1
        return request

    def ended(
        self, leg_no: int, now: float, *, complete: bool, retry: bool = False
    ) -> list[Action]:
        """The serving leg's stream ended: whole (``complete``) or cut by the upstream.
        ``retry``: nothing of it reached the client yet (a reply assembled whole), so a
        cut is a failed attempt and the next one follows, as before the first token."""
        leg = self.legs[leg_no - 1]
        if self.done or leg is not self.winner:
            return []
        if complete:
            self.router.on_success(self, leg, now)
            return self._finish("success")
        if not retry:
            self.router.on_cut(self, leg, now)  # a provider that cuts streams is demoted
            return self._finish("cut")
        self.winner, leg.served, self.ttft_at = None, False, None
        self.active.append(leg)
        return self.failed(leg_no, "protocol", None, now)

    def client_gone(self, now: float) -> list[Action]:
        """The client disconnected: close every leg; the request is cancelled."""
        if self.done:
            return []
        actions: list[Action] = []
        for leg in [*self.active, *([self.winner] if self.winner else [])]:
            if not leg.cancelled:
                leg.cancelled = True
                actions.append(CancelLeg(leg, lost=False))
        self.active = []
        self._settle_hedge(now)
        return actions + self._finish("cancelled")

    def hedge_refused(self, leg_no: int, now: float) -> list[Action]:
        """The shell could not reserve the budget for a hedge leg: it never started."""
        leg = self.legs[leg_no - 1]
        if leg in self.active:
            leg.cancelled = True
            self.active.remove(leg)
            self.tried.remove(leg.endpoint_id)
            self.hedged = False
            self.hedge_reserved = None
        return []

    # --- helpers -----------------------------------------------------------------------
    def _new_leg(self, endpoint_id: int, now: float, *, hedge_leg: bool) -> Leg:
        nth = self.tried.count(endpoint_id)
        leg = self.leg_type(len(self.legs) + 1, endpoint_id, now, hedge_leg, nth)
        self.legs.append(leg)
        self.tried.append(endpoint_id)
        self.active.append(leg)
        return leg

    def _open_first(self, endpoint_id: int, now: float) -> list[Action]:
        self.primary = self._new_leg(endpoint_id, now, hedge_leg=False)
        actions: list[Action] = [OpenLeg(self.primary)]
        decision = self.router.hedge_decision(self, now)
        if decision.mode == "immediate":
            actions += self._try_hedge(now)
        elif decision.mode == "delayed":
            actions.append(StartTimer("hedge", now + decision.delay_s))
        return actions

    def _try_hedge(self, now: float) -> list[Action]:
        start = self.router.start_hedge(self, now)
        if start is None:
            return []
        self.hedged = True
        self.hedge_reserved, self.hedge_day = start.reserve_usd, start.day
        return [OpenLeg(self._new_leg(start.endpoint_id, now, hedge_leg=True), start.reserve_usd)]

    def _settle_hedge(self, now: float) -> None:
        if self.hedge_reserved is not None:
            self.router.end_hedge(self, now)
            self.hedge_reserved = None

    def _give_up(self) -> list[Action]:
        return [GiveUp(self.last_failure), *self._finish("error")]

    def _finish(self, outcome: str) -> list[Action]:
        self.done = True
        self.outcome = outcome
        return [Done(outcome)]
