"""The gateway session on its own: events in, actions out, with a scripted router."""

from __future__ import annotations

from routing.core.hedge import NO_HEDGE, HedgeDecision
from routing.core.session import (
    CancelLeg,
    Done,
    GatewaySession,
    GiveUp,
    HedgeStart,
    Leg,
    OpenLeg,
    Serve,
    StartTimer,
    SwitchModel,
)


class ScriptRouter:
    """Attempts go to ``endpoints`` in order; one hedge partner; records every hook."""

    def __init__(self, endpoints, hedge=NO_HEDGE, partner=None, retry_delay=0.0):
        self.endpoints = list(endpoints)
        self.hedge = hedge
        self.partner = partner
        self.retry_delay = retry_delay
        self.calls: list[tuple] = []

    def _next(self, session, delay):
        left = [e for e in self.endpoints if e not in session.tried]
        return (left[0], delay) if left else None

    def first(self, session, now):
        return self._next(session, 0.0)

    def next_attempt(self, session, now):
        return self._next(session, self.retry_delay)

    def hedge_decision(self, session, now):
        return self.hedge

    def start_hedge(self, session, now):
        if self.partner is None:
            return None
        return HedgeStart(self.partner, 0.5, 7)

    def end_hedge(self, session, now):
        self.calls.append(("end_hedge", session.hedge_cost))

    def on_cancel(self, session, leg):
        self.calls.append(("cancel", leg.no))
        return 0.1

    def on_first_token(self, session, leg, now):
        self.calls.append(("first_token", leg.no))

    def on_failure(self, session, leg, now):
        self.calls.append(("failure", leg.no, leg.kind, leg.status))

    def on_success(self, session, leg, now):
        self.calls.append(("success", leg.no))


def test_failure_retries_the_next_endpoint_then_serves():
    router = ScriptRouter([7, 8])
    session = GatewaySession("request", router)
    [opened] = session.start(0.0)
    assert isinstance(opened, OpenLeg) and opened.leg.endpoint_id == 7
    [retry] = session.failed(1, "http", 500, 0.4)
    assert isinstance(retry, OpenLeg) and retry.leg.endpoint_id == 8
    assert session.first_token(2, 1.0) == [Serve(retry.leg)]
    assert session.ended(2, 3.0, complete=True) == [Done("success")]
    assert (session.failures, session.lost_s, session.ttft_at) == (1, 0.4, 1.0)
    assert router.calls == [("failure", 1, "http", 500), ("first_token", 2), ("success", 2)]


def test_backoff_is_a_timer_and_no_endpoint_left_gives_up():
    router = ScriptRouter([7, 8], retry_delay=2.0)
    session = GatewaySession("request", router)
    session.start(0.0)
    assert session.failed(1, "http", 429, 0.5) == [StartTimer("retry", 2.5, 8)]
    [opened] = session.timer("retry", 2.5, 8)
    assert opened.leg.endpoint_id == 8
    actions = session.failed(2, "connect", None, 3.0)
    assert actions == [GiveUp(session.legs[1]), Done("error")]
    assert session.done and session.outcome == "error"


def test_first_token_wins_the_race_and_the_reservation_is_settled_once():
    router = ScriptRouter([7], hedge=HedgeDecision("immediate"), partner=9)
    session = GatewaySession("request", router)
    primary, hedge = session.start(0.0)
    assert hedge.leg.hedge_leg and hedge.reserve_usd == 0.5 and session.hedged
    assert (session.hedge_reserved, session.hedge_day) == (0.5, 7)  # kept by the session
    actions = session.first_token(2, 0.8)
    assert actions == [CancelLeg(primary.leg, lost=True), Serve(hedge.leg)]
    assert session.first_token(1, 0.9) == []  # the cancelled leg's late token is ignored
    assert router.calls == [("cancel", 1), ("end_hedge", 0.1), ("first_token", 2)]


def test_a_failed_leg_does_not_end_a_race_while_the_other_is_alive():
    router = ScriptRouter([7, 8], hedge=HedgeDecision("delayed", 1.0), partner=9)
    session = GatewaySession("request", router)
    assert session.start(0.0)[1] == StartTimer("hedge", 1.0)
    [hedge] = session.timer("hedge", 1.0)
    assert session.failed(1, "timeout", None, 1.5) == []
    assert session.first_token(hedge.leg.no, 2.0) == [Serve(hedge.leg)]
    assert ("end_hedge", 0.0) in router.calls


def test_leg_type_lets_a_shell_carry_its_own_leg_fields():
    class SimLeg(Leg):
        __slots__ = ("drawn",)

    class SimSession(GatewaySession):
        leg_type = SimLeg

    session = SimSession("request", ScriptRouter([7]))
    [opened] = session.start(0.0)
    assert type(opened.leg) is SimLeg and opened.leg.nth == 0
    opened.leg.drawn = "ok"
    assert type(GatewaySession("request", ScriptRouter([7])).start(0.0)[0].leg) is Leg


class FallbackRouter(ScriptRouter):
    """Model "a" on endpoints 7, 8; then model "b" on endpoint 9 (OpenRouter's ``models``)."""

    def __init__(self):
        super().__init__([7, 8])
        self.models = [("b", [9])]

    def next_model(self, session, now):
        if not self.models:
            return None
        request, self.endpoints = self.models.pop(0)
        self.calls.append(("next_model", request))
        return request


def test_every_endpoint_failed_moves_to_the_next_model():
    router = FallbackRouter()
    session = GatewaySession("a", router)
    session.start(0.0)
    session.failed(1, "http", 500, 0.1)
    switched, opened = session.failed(2, "http", 500, 0.2)
    assert switched == SwitchModel("b") and opened.leg.endpoint_id == 9
    assert session.request == "b" and session.model_switches == 1
    assert session.first_token(3, 0.5) == [Serve(opened.leg)]
    assert session.ended(3, 1.0, complete=True) == [Done("success")]


def test_no_model_left_gives_up_after_the_switch():
    router = FallbackRouter()
    session = GatewaySession("a", router)
    session.start(0.0)
    session.failed(1, "http", 500, 0.1)
    session.failed(2, "connect", None, 0.2)
    actions = session.failed(3, "http", 503, 0.3)
    assert isinstance(actions[0], GiveUp) and actions[0].last_failure.endpoint_id == 9
    assert actions[-1] == Done("error") and session.model_switches == 1


def test_a_router_without_next_model_never_switches():
    session = GatewaySession("a", ScriptRouter([7]))
    session.start(0.0)
    actions = session.failed(1, "http", 500, 0.1)
    assert isinstance(actions[0], GiveUp) and session.model_switches == 0
