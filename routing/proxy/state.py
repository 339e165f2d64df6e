"""Per-request state, the ledger writes around it, and what is learnt from each attempt."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson
from django.http import HttpResponse

from billing.auth import KeyPrincipal
from billing.ledger import AttemptResult, CallResult, activity_finish, activity_open
from billing.pricing import call_cost
from uberllm.aio import db_call, run_in_background

from ..catalog import CatalogModel, EndpointRoute
from ..core.types import RouteChoice, RoutePlan
from ..errors import GatewayError
from ..request import ChatRequest

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class CallState:
    """One chat request from acceptance to its finished ledger row."""

    request_id: str
    principal: KeyPrincipal
    chat: ChatRequest
    model: CatalogModel
    plan: RoutePlan
    prompt_tokens_estimate: int
    raw_prompt_tokens: int
    prefix_hashes: list[tuple[str, int]]
    cached_tokens: dict[int, int]
    created_at: datetime
    started: float = field(default_factory=time.perf_counter)
    attempts: list[AttemptResult] = field(default_factory=list)
    served: EndpointRoute | None = None
    served_choice: RouteChoice | None = None
    usage: dict[str, Any] | None = None
    rewriter: Any = None  # the serving attempt's ChunkRewriter
    ttft_ms: int | None = None
    open_task: asyncio.Task | None = None
    finished: bool = False
    hedged: bool = False
    hedge_cost_usd: Decimal = Decimal(0)

    def open_ledger_row(self) -> None:
        """Insert the pending Activity row (once), in a background thread. Called when
        the first upstream attempt has answered, so the insert runs while the provider
        computes the first token instead of competing with sending the request (the
        thread holds the GIL for the ORM's Python work); ``finish`` calls it first if
        no attempt got that far."""
        if self.open_task is not None:
            return
        self.open_task = run_in_background(
            db_call(activity_open)(
                request_id=self.request_id,
                organisation_id=self.principal.organisation_id,
                api_key_id=self.principal.api_key_id,
                model_slug=self.chat.model_slug,
                stream=self.chat.stream,
                created_at=self.created_at,
            )
        )

    def upstream_body(self, route: EndpointRoute) -> bytes:
        body = dict(self.chat.body)
        body["model"] = route.upstream_model
        # Upstream always streams (a non-streaming reply is assembled from the chunks, so
        # every call measures its TTFT) and always reports usage, which billing needs; the
        # usage chunk is stripped if the client did not ask for it.
        body["stream"] = True
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return orjson.dumps(body)

    def error_response(self, error: GatewayError) -> HttpResponse:
        """The error of an accepted request: its id is in X-Generation-Id, so the failed
        call (with every attempt) can be looked up too."""
        response = error.response()
        response["X-Generation-Id"] = self.request_id
        return response

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)

    def usage_numbers(self) -> tuple[int, int, int, bool]:
        """(prompt, cached, completion, estimated) from reported usage, else an estimate."""
        if self.usage:
            details = self.usage.get("prompt_tokens_details") or {}
            return (
                int(self.usage.get("prompt_tokens") or 0),
                int(details.get("cached_tokens") or 0),
                int(self.usage.get("completion_tokens") or 0),
                False,
            )
        chunks = self.rewriter.completion_chunks if self.rewriter is not None else 0
        return self.prompt_tokens_estimate, 0, chunks, True

    def cost(self, route: EndpointRoute | None = None) -> tuple[Any, int, int, int, bool]:
        """(USD, prompt, cached, completion, estimated) at ``route`` (default: serving)."""
        prompt, cached, completion, estimated = self.usage_numbers()
        route = route or self.served
        assert route is not None
        cost = call_cost(
            prices=route.prices,
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=completion,
        )
        return cost, prompt, cached, completion, estimated

    def result(self, status: str, http_status: int, error: str = "") -> CallResult:
        result = CallResult(
            request_id=self.request_id,
            status=status,
            http_status=http_status,
            total_ms=self.elapsed_ms(),
            ttft_ms=self.ttft_ms,
            routing_strategy=self.plan.strategy,
            prompt_bucket=self.plan.bucket,
            error_message=error,
            hedged=self.hedged,
            hedge_cost_usd=self.hedge_cost_usd,
            attempts=list(self.attempts),
        )
        # A stream cut or cancelled after its first token was served: the provider
        # charged for it, so it is billed (estimated if usage never arrived).
        if self.served is not None and self.served_choice is not None:
            cost, prompt, cached, completion, estimated = self.cost()
            result.endpoint_id = self.served.endpoint_id
            result.provider_slug = self.served.provider_slug
            result.routing_reason = self.served_choice.reason
            result.prompt_tokens, result.cached_tokens = prompt, cached
            result.completion_tokens, result.usage_estimated = completion, estimated
            result.cost_usd = cost
            result.prices = {k: str(v) for k, v in self.served.prices.items()}
        elif self.plan.choices:
            result.routing_reason = self.plan.choices[0].reason
        return result

    def finish(self, status: str, http_status: int, error: str = "") -> asyncio.Task | None:
        """Write the outcome once, in a task a client disconnect cannot cancel."""
        if self.finished:
            return None
        self.finished = True
        self.open_ledger_row()
        return run_in_background(self._write(self.result(status, http_status, error)))

    async def _write(self, result: CallResult) -> None:
        from ..learning import learn_from_call

        try:
            if self.open_task is not None:
                await self.open_task
            await db_call(activity_finish)(result)
            await learn_from_call(self, result)
        except Exception:
            logger.exception("ledger write failed for %s", self.request_id)
