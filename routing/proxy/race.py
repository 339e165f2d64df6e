"""Trying the route plan (R4 retries) and racing a second provider (R3 hedging).

``Opener.run()`` tries the plan's endpoints in order, never one twice, at most
``MAX_ATTEMPTS`` in all, until one attempt succeeds (for a stream: produces its first
token). For long streaming prompts the first round is hedged: after ``HEDGE_DELAY_S``
without a first token (32k-128k), or at once (>128k), the same request also goes to the
next fast-enough endpoint of another provider, if the daily hedge budget covers it.
The first leg to succeed wins; the other is cancelled at that moment (its connection
closed) and its cost is charged to the hedge budget, never to the customer. A leg that
fails does not end the race while the other is alive; retries go on after both fail.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Generic, TypeVar

from django.conf import settings

from billing.ledger import AttemptResult
from billing.pricing import call_cost
from providers.upstream import UpstreamError

from ..budget import hedge_budget_reserve, hedge_budget_settle
from ..catalog import EndpointRoute
from ..core.hedge import NO_HEDGE, HedgeDecision, hedge_partner, hedge_policy
from ..core.retry import RetryPolicy, is_retryable, marks_unusable
from ..core.types import RouteChoice
from ..errors import GatewayError
from ..state import mark_unusable
from .state import CallState

logger = logging.getLogger(__name__)
T = TypeVar("T")
TryOne = Callable[[RouteChoice, EndpointRoute, AttemptResult], Awaitable[T]]


def final_error(error: UpstreamError, attempts: int) -> GatewayError:
    """The customer's error once every attempt failed: the last upstream error."""
    if error.kind == "timeout":
        status = 504
    elif error.status in (400, 413, 422):
        status = 400
    elif error.status == 429:
        status = 429
    else:
        status = 502
    message = f"All {attempts} upstream attempt(s) failed; last: {error.message}"
    return GatewayError(status, message, code="upstream_error")


def _core_kind(error: UpstreamError) -> tuple[str, int | None]:
    """The core's failure kinds: a protocol failure before the first token counts as 502."""
    if error.kind in ("connect", "timeout"):
        return error.kind, None
    return "http", error.status or 502


class Opener(Generic[T]):
    """Runs the attempts of one request until one succeeds; see the module doc."""

    def __init__(self, state: CallState, try_one: TryOne[T], *, hedge: bool) -> None:
        self.state = state
        self.try_one = try_one
        self.hedge = hedge
        self.policy = RetryPolicy(max_attempts=settings.UBERLLM["MAX_ATTEMPTS"])
        self.tried: list[int] = []
        self.last_error: UpstreamError | None = None
        self.winner: AttemptResult | None = None

    async def run(self) -> T:
        """The first successful attempt's result; GatewayError when all failed."""
        first_round = True
        while (choice := self.policy.next_choice(self.state.plan, self.tried)) is not None:
            legs = [self._start(choice, hedge_leg=False)]
            decision = self._hedge_decision(choice) if first_round and self.hedge else NO_HEDGE
            first_round = False
            outcome = await self._race(legs, choice, decision)
            if outcome is not None:
                return outcome
        if self.last_error is None:
            raise GatewayError(503, "No endpoint could be tried.", code="no_endpoint")
        raise final_error(self.last_error, len(self.tried))

    # --- one leg ---------------------------------------------------------------
    def _start(self, choice: RouteChoice, *, hedge_leg: bool) -> asyncio.Task:
        route = self.state.model.by_id[choice.endpoint.endpoint_id]
        self.tried.append(route.endpoint_id)
        attempt = AttemptResult(
            attempt_no=len(self.tried), endpoint_id=route.endpoint_id,
            provider_slug=route.provider_slug, reason=choice.reason, outcome="pending",
            hedge_leg=hedge_leg,
        )  # fmt: skip
        self.state.attempts.append(attempt)
        task = asyncio.ensure_future(self._leg(choice, route, attempt))
        task.attempt, task.route, task.choice = attempt, route, choice  # type: ignore[attr-defined]
        return task

    async def _leg(self, choice: RouteChoice, route: EndpointRoute, attempt: AttemptResult):
        started = time.perf_counter()
        try:
            return await self.try_one(choice, route, attempt)
        except UpstreamError as error:
            self._failed(route, attempt, error, started)
            raise
        except Exception as exc:  # a bug in one leg: log it, fail the leg, keep serving
            logger.exception("attempt %s failed unexpectedly", attempt.attempt_no)
            error = UpstreamError("protocol", f"gateway error: {exc.__class__.__name__}")
            self._failed(route, attempt, error, started)
            raise error from exc

    def _failed(
        self, route: EndpointRoute, attempt: AttemptResult, error: UpstreamError, started: float
    ) -> None:
        attempt.outcome = f"{error.kind}_error"
        attempt.http_status = error.status
        attempt.error_message = error.message
        attempt.duration_ms = int((time.perf_counter() - started) * 1000)
        self.last_error = error
        kind, status = _core_kind(error)
        if marks_unusable(status, kind):
            mark_unusable(self.state.model.info.slug, route.endpoint_id)
        if not is_retryable(status, kind):
            self.policy = RetryPolicy(max_attempts=0)  # stop: another try cannot help

    # --- hedging -----------------------------------------------------------------
    def _hedge_decision(self, choice: RouteChoice) -> HedgeDecision:
        conf = settings.UBERLLM
        return hedge_policy(
            self.state.plan.bucket, self.state.chat.stream, float("inf"), 0.0,
            delayed_from_tokens=conf["HEDGE_DELAYED_FROM_TOKENS"],
            immediate_from_tokens=conf["HEDGE_IMMEDIATE_FROM_TOKENS"],
            delay_s=conf["HEDGE_DELAY_S"],
        )  # fmt: skip

    def _partner(self, choice: RouteChoice) -> RouteChoice | None:
        if len(self.tried) >= self.policy.max_attempts:
            return None
        partner = hedge_partner(self.state.plan, choice)
        if partner is None or partner.endpoint.endpoint_id in self.tried:
            return None
        return partner

    def loser_cost(self, route: EndpointRoute) -> Decimal:
        """What a cancelled leg cost: the prompt it was sent, at its input/cache prices."""
        cached = self.state.cached_tokens.get(route.endpoint_id, 0)
        return call_cost(prices=route.prices, prompt_tokens=self.state.prompt_tokens_estimate,
                         cached_tokens=cached, completion_tokens=0)  # fmt: skip

    async def _try_hedge(self, choice: RouteChoice, legs: list[asyncio.Task]) -> Decimal | None:
        """Start the partner leg if the budget covers either leg losing; the reserved USD."""
        partner = self._partner(choice)
        if partner is None:
            return None
        routes = [self.state.model.by_id[c.endpoint.endpoint_id] for c in (choice, partner)]
        reserve = max(self.loser_cost(route) for route in routes)
        if not await hedge_budget_reserve(reserve):
            return None
        self.state.hedged = True
        legs.append(self._start(partner, hedge_leg=True))
        return reserve

    async def _race(
        self, legs: list[asyncio.Task], choice: RouteChoice, decision: HedgeDecision
    ) -> T | None:
        reserved: Decimal | None = None
        try:
            if decision.mode == "immediate":
                reserved = await self._try_hedge(choice, legs)
            elif decision.mode == "delayed":
                done, _ = await asyncio.wait(legs, timeout=decision.delay_s)
                if not done:
                    reserved = await self._try_hedge(choice, legs)
            return await self._first_success(legs)
        finally:
            if reserved is not None:
                await hedge_budget_settle(reserved, self.state.hedge_cost_usd)

    async def _first_success(self, legs: list[asyncio.Task]) -> T | None:
        pending = set(legs)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if not task.cancelled() and task.exception() is None:
                        self.state.served, self.state.served_choice = task.route, task.choice
                        self.winner = task.attempt
                        return task.result()
            return None
        finally:
            await self._cancel_losers(pending)

    async def _cancel_losers(self, pending: set[asyncio.Task]) -> None:
        for task in pending:
            task.cancel()
        for task in pending:
            try:
                await task
            except (asyncio.CancelledError, UpstreamError):
                pass
            except Exception:  # noqa: S110 - a loser's own failure changes nothing now
                pass
            attempt = task.attempt
            if attempt.outcome == "pending":  # cancelled before its first token: it lost
                attempt.outcome = "hedge_lost" if self.winner else "cancelled"
                attempt.duration_ms = self.state.elapsed_ms()
                if self.winner is not None:
                    attempt.platform_cost_usd = self.loser_cost(task.route)
                    self.state.hedge_cost_usd += attempt.platform_cost_usd
