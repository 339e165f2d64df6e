"""The live shell around the gateway session: legs are asyncio tasks, timers are loop
callbacks, the serving leg is relayed straight to the ASGI ``send`` (usually from the
leg's own task, which had the first token: ``LiveCall._first``).

Nothing reaches the customer before an upstream has produced its first token, so any
failure until then is retried (R4). If that takes longer than ``KEEPALIVE_AFTER_S`` (a
long prefill) a streaming response starts anyway and SSE comments (``: PROCESSING``)
keep it alive; a failure from then on ends the stream with an error chunk, never a
silent clean end. A non-streaming reply is assembled from the upstream stream; a
failure at any point of it is retried, since nothing reached the customer.

The call's task is cancelled when the client disconnects (``routing.gateway.asgi``):
every leg is cancelled with it and its upstream connection closed, and the row says
cancelled, with the tokens delivered so far billed (the provider charged for them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import aclosing
from decimal import Decimal

import orjson

from billing.ledger import AttemptResult
from common.aio import run_in_background
from providers.upstream import UpstreamCall, UpstreamError, open_stream

from ..budget import hedge_budget_reserve, hedge_budget_settle
from ..catalog import EndpointRoute
from ..config import live_config
from ..core.session import (
    Action,
    CancelLeg,
    Done,
    GatewaySession,
    GiveUp,
    Leg,
    OpenLeg,
    Serve,
    StartTimer,
    SwitchModel,
)
from ..errors import OVERLOADED, GatewayError
from .accept import Accepted
from .assemble import CompletionAssembler
from .finish import Outcome, finish
from .heartbeat import register, unregister
from .relay import (
    DONE,
    DONE_DATA,
    KEEPALIVE,
    ChunkRewriter,
    LiveAttempt,
    encode_all,
    error_chunk,
)
from .respond import Responder
from .router import LiveRouter

logger = logging.getLogger(__name__)


# What a provider answers when the request, not the provider, is wrong: the client's error,
# relayed with its status; it marks no endpoint (routing.core.retry.classify_failure).
REQUEST_STATUSES = (400, 413, 422)
# An attempt that failed before any upstream call because the gateway cannot encode the
# request for that upstream (``request_body``): the request's error, never the provider's.
REQUEST = "request"


def final_error(error: UpstreamError | None, attempts: int) -> GatewayError:
    """The customer's error once every attempt failed: the last upstream error."""
    if error is None:
        return GatewayError(503, "No endpoint could be tried.", code="no_endpoint")
    if error.kind == REQUEST:
        return GatewayError(400, error.message, code="invalid_request_error")
    if error.kind == "http" and error.status in REQUEST_STATUSES:
        return _request_refused(error, attempts)
    code, retry_after_s = "upstream_error", None
    if error.kind == "timeout":
        status = 504
    elif error.status == 429:
        status, retry_after_s = 429, 1
    elif error.status in (503, 529):
        # Overloaded, not broken: a 503 the SDKs retry (the Messages API answers 529
        # overloaded_error, as Anthropic does), with a hint when to.
        status, code, retry_after_s = 503, OVERLOADED, 1
    else:
        status = 502
    message = f"All {attempts} upstream attempt(s) failed; last: {error.message}"
    return GatewayError(status, message, code=code, retry_after_s=retry_after_s)


def _request_refused(error: UpstreamError, attempts: int) -> GatewayError:
    """The provider refused the request itself (400/413/422): the client gets that status
    and the provider's own words."""
    assert error.status is not None
    words = provider_words(error.message)
    message = f"{words} (the provider answered HTTP {error.status}; attempts: {attempts})"
    return GatewayError(error.status, message, code="upstream_error")


def provider_words(message: str) -> str:
    """The message inside an upstream error body ("upstream HTTP 400: {json}") in
    OpenAI's or Anthropic's error shape, else the text as it is."""
    _, _, text = message.partition(": ")
    try:
        error = orjson.loads(text).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return message
    inner = error.get("message") if isinstance(error, dict) else error
    return inner if isinstance(inner, str) and inner else message


def request_body(accepted: Accepted, route: EndpointRoute) -> bytes:
    """The upstream body for ``route``; a body the gateway cannot encode (JSON nested past
    the encoder's 254 levels, with ``MAX_JSON_DEPTH`` raised that far) is the request's
    error, raised before any upstream call (UpstreamError kind ``request``)."""
    try:
        return accepted.upstream_body(route)
    except orjson.JSONEncodeError as exc:
        message = f"The request cannot be encoded for the provider: {exc}."
        raise UpstreamError(REQUEST, message, 400) from None


async def _first_token(attempt: LiveAttempt) -> None:
    """Read events until the first one carrying a token; the rewritten chunks up to it
    go to ``attempt.pending`` (later events of the same read stay in the stream)."""
    stream, rewriter = attempt.stream, attempt.rewriter
    assert stream is not None
    while True:
        events = await stream.next_events()
        if events is None:
            raise UpstreamError("protocol", "upstream stream ended before the first token")
        for index, data in enumerate(events):
            if data == DONE_DATA:
                raise UpstreamError("protocol", "upstream stream ended before the first token")
            chunk = rewriter.rewrite(data)
            if rewriter.upstream_error is not None:
                raise UpstreamError("http", rewriter.upstream_error, 502)
            if chunk:
                attempt.pending.append(chunk)
            if rewriter.saw_token:
                stream.push_back(events[index + 1 :])
                return


def _rewrite_read(rewriter: ChunkRewriter, events: list[bytes]) -> tuple[list[dict], bool]:
    """The rewritten chunks of one upstream read, and True if it carried [DONE] (the
    events after it are ignored); raises UpstreamError on an error chunk."""
    batch = []
    for data in events:
        if data == DONE_DATA:
            return batch, True
        chunk = rewriter.rewrite(data)
        if rewriter.upstream_error is not None:
            raise UpstreamError("protocol", rewriter.upstream_error)
        if chunk:
            batch.append(chunk)
    return batch, False


def _encoded_read(rewriter: ChunkRewriter, events: list[bytes]) -> tuple[bytes, bool]:
    """``_rewrite_read`` for the relay: the rewritten chunks of one upstream read as the
    SSE bytes of one write (b"" if none), and True if it carried [DONE]."""
    body = b""
    for data in events:
        if data == DONE_DATA:
            return body, True
        chunk = rewriter.rewrite(data)
        if rewriter.upstream_error is not None:
            raise UpstreamError("protocol", rewriter.upstream_error)
        if chunk:
            body += b"data: " + orjson.dumps(chunk) + b"\n\n"
    return body, False


async def _rewritten_reads(attempt: LiveAttempt) -> AsyncIterator[tuple[list[dict], bool]]:
    """The serving leg's rewritten chunks after its first token, one list per upstream
    read, with True on the read that carried [DONE] (the last); raises UpstreamError on
    an error chunk. A stream that just ends yields no True (``rewriter.finished`` says
    whether it had finished)."""
    stream, rewriter = attempt.stream, attempt.rewriter
    assert stream is not None
    while (events := await stream.next_events()) is not None:
        batch, done = _rewrite_read(rewriter, events)
        yield batch, done
        if done:
            return


class LiveCall:
    """Runs one accepted request to its end; ``run()`` never raises but CancelledError."""

    def __init__(self, accepted: Accepted, out: Responder) -> None:
        self.accepted = accepted
        self.out = out
        self.router = LiveRouter(accepted)
        self.session = GatewaySession(accepted, self.router, plan=accepted.plan)
        self.events: asyncio.Queue[tuple] = asyncio.Queue()
        self.tasks: dict[int, asyncio.Task] = {}
        self.timers: list[asyncio.TimerHandle] = []
        self.records: list[AttemptResult] = []
        self.reservation: asyncio.Task | None = None  # the hedge leg's budget reservation
        self.outcome = Outcome("cancelled", 499, "client disconnected")
        self.served: LiveAttempt | None = None
        self.ttft_ms: int | None = None
        # The call's task waits for an event with nothing queued and no action under way:
        # a leg's first token may then be served from the leg's own task (``_first``).
        self.waiting = False
        self.acting = False  # a leg's task is acting on its first token
        self.held: deque[tuple] = deque()  # events that came meanwhile, heard after it
        self.crash: Exception | None = None  # a bug met while a leg's task acted
        self._t0 = time.monotonic()
        # A streamed reply's headers leave when a provider has accepted the call (HTTP
        # 200), while it prefills, not with the first token (``EARLY_STREAM_START``).
        self.early_start = accepted.chat.stream and live_config().early_stream_start

    # --- the loop ------------------------------------------------------------------------
    async def run(self) -> None:
        register(self)  # the row is checkpointed while the call lives
        try:
            await self._apply(self.session.start(time.monotonic()))
            while not self.session.done:
                await self._apply(await self._next_event())
        except asyncio.CancelledError:
            self.session.client_gone(time.monotonic())
            raise
        except Exception as exc:  # a bug must still answer visibly and finish the row
            logger.exception("chat call %s failed", self.accepted.request_id)
            self.outcome = Outcome("error", 500, f"gateway error: {exc.__class__.__name__}")
            await self._answer_error(GatewayError(500, "Internal gateway error.", code="internal"))
        finally:
            closing = asyncio.ensure_future(self._close_all())
            try:
                await asyncio.shield(closing)
            except asyncio.CancelledError:
                closing.add_done_callback(lambda _: self._wrap_up())
                raise
            self._wrap_up()

    def abort_upstreams(self) -> None:
        """The client is gone: close every open upstream connection now, synchronously,
        before the cancellation this precedes has unwound the call (on a loaded loop
        that takes a few turns, during which a provider would go on streaming)."""
        for leg in self.session.legs:
            attempt: LiveAttempt | None = leg.data
            if attempt is not None:
                attempt.abort()

    def _wrap_up(self) -> None:
        """Settle the hedge budget and write the outcome (once, synchronously)."""
        unregister(self)
        self._settle_hedges()
        finish(self.accepted, self.outcome, self)

    async def _next_event(self) -> list[Action]:
        while True:
            if self.held and not self.acting:
                event = self.held.popleft()
            else:
                event = await self._wait_event()
                if event is None:
                    continue
                if self.acting and event[0] != "served":
                    # As when this task itself acted: heard once the leg's task is done.
                    self.held.append(event)
                    continue
            if event[0] == "accepted":  # the shell's own business: no news for the session
                await self._start_stream(event[1])
                continue
            return self._dispatch(event)

    async def _wait_event(self) -> tuple | None:
        """The next queued event; None after a keep-alive was due (and sent)."""
        timeout = self._keepalive_wait()
        self.waiting = self.events.empty() and not self.held and not self.acting
        try:
            async with asyncio.timeout(timeout):
                return await self.events.get()
        except TimeoutError:
            self.waiting = False
            if self.session.winner is None:  # else a leg's task is serving the reply
                await self._keepalive()
            return None
        finally:
            self.waiting = False

    async def _start_stream(self, leg: Leg) -> None:
        """A provider answered 200: the SSE response starts now, while it prefills, so the
        first token leaves alone. From here a failure on every provider ends the stream
        with an error chunk (as after a keep-alive), not an HTTP error status."""
        if not self.out.started and not self.session.done and not leg.failed:
            await self.out.start_sse(self.accepted.request_id)

    def _dispatch(self, event: tuple) -> list[Action]:
        now, session = time.monotonic(), self.session
        match event:
            case ("first", leg):
                return session.first_token(leg.no, now)
            case ("failed", leg, error):
                return session.failed(leg.no, error.kind, error.status, now)
            case ("timer", name, endpoint_id):
                return session.timer(name, now, endpoint_id)
            case ("refused", leg):
                return session.hedge_refused(leg.no, now)
            case ("served",):  # a leg's task has acted on its first token (``_first``)
                if self.crash is not None:
                    raise self.crash  # answered and recorded by ``run``, as if raised there
                return []
        raise ValueError(f"unknown event {event!r}")

    async def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            match action:
                case OpenLeg(leg, reserve):
                    self._open(leg, reserve)
                case StartTimer(name, at, endpoint_id):
                    loop = asyncio.get_running_loop()
                    delay = max(0.0, at - time.monotonic())
                    event = ("timer", name, endpoint_id)
                    self.timers.append(loop.call_later(delay, self.events.put_nowait, event))
                case CancelLeg(leg, lost):
                    await self._cancel(leg, lost)
                case Serve(leg):
                    await self._apply(await self._serve(leg))
                case SwitchModel(request):
                    self._switch_model(request)
                case GiveUp(last):
                    error = last.data.error if last is not None else None
                    await self._give_up(final_error(error, len(self.session.tried)))
                case Done():
                    pass

    def _switch_model(self, accepted: Accepted) -> None:
        """Every endpoint of the model failed before the first token: the call goes on
        with its next ``models`` fallback; the reply, the Activity row and later
        attempts name that model."""
        logger.info("call %s falls back to model %s", accepted.request_id, accepted.chat.model_slug)
        self.accepted = accepted
        switched = getattr(self.out, "model_switched", None)
        if switched is not None:
            switched(accepted)

    # --- legs ------------------------------------------------------------------------------
    def _open(self, leg: Leg, reserve_usd: float | None) -> None:
        route = self.router.route(leg.endpoint_id)
        choice = self.router.choice(leg.endpoint_id)
        record = AttemptResult(
            attempt_no=len(self.records) + 1,
            endpoint_id=route.endpoint_id,
            provider_slug=route.provider_slug,
            reason=choice.reason,
            outcome="pending",
            hedge_leg=leg.hedge_leg,
        )
        self.records.append(record)
        attempt = LiveAttempt(route, record, ChunkRewriter(self.accepted, route))
        attempt.rewriter.attempt = attempt
        leg.data = attempt
        self.tasks[leg.no] = asyncio.ensure_future(self._leg(leg, attempt, reserve_usd))

    async def _leg(self, leg: Leg, attempt: LiveAttempt, reserve_usd: float | None) -> None:
        attempt.started = time.perf_counter()
        try:
            if reserve_usd is not None:
                self.reservation = asyncio.ensure_future(
                    hedge_budget_reserve(Decimal(str(reserve_usd)))
                )
                if not await asyncio.shield(self.reservation):
                    attempt.record.outcome = "not_started"
                    self.records.remove(attempt.record)
                    self.events.put_nowait(("refused", leg))
                    return
            await self._open_upstream(attempt, leg)
        except UpstreamError as error:
            if attempt.aborted:  # the client left and the call is being cancelled
                return
            if error.kind == REQUEST:  # no upstream call was made: no attempt to record
                self.records.remove(attempt.record)
            self._failed(attempt, error)
            self.events.put_nowait(("failed", leg, error))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in one leg: log it, fail the leg, keep serving
            logger.exception("attempt %s failed unexpectedly", attempt.record.attempt_no)
            error = UpstreamError("protocol", f"gateway error: {exc.__class__.__name__}")
            self._failed(attempt, error)
            self.events.put_nowait(("failed", leg, error))
        else:
            await self._first(leg)

    async def _first(self, leg: Leg) -> None:
        """``leg`` has its first token. Usually the call's task is waiting with nothing
        queued: the session hears of it here and the leg's own task serves it, which saves
        the first token a hop between tasks (~70 µs at one stream, docs/benchmarks.md,
        round 21). Otherwise the event is queued, in order, for the call's task. Events
        that come while the leg's task acts are heard after it (``held``), as they were
        when the call's task acted itself; a client that leaves cancels the call's task,
        which cancels this one (an upstream it aborted first is no provider's failure)."""
        if not self.waiting:
            self.events.put_nowait(("first", leg))
            return
        self.waiting, self.acting = False, True
        try:
            await self._apply(self._dispatch(("first", leg)))
        except Exception as exc:  # ``run`` answers it and finishes the row (``_dispatch``)
            self.crash = exc
        finally:
            self.acting = False
            self.events.put_nowait(("served",))

    async def _open_upstream(self, attempt: LiveAttempt, leg: Leg) -> None:
        """Open the upstream stream and read up to its first token (the attempt's TTFT);
        raises UpstreamError, always with the stream closed. Once the provider answered
        200, the call may start its own SSE response (``_start_stream``)."""
        accepted, route = self.accepted, attempt.route
        call = UpstreamCall(
            route.url, request_body(accepted, route), route.authorization, route.protocol
        )
        # A hanging provider costs a few times its typical TTFT, not the flat timeout.
        timeout_s = self.router.timeout_s(route.endpoint_id)
        try:
            async with asyncio.timeout(timeout_s):
                attempt.opening()  # in flight at its endpoint (O3) until closed
                attempt.stream = await open_stream(call)
                if self.early_start and not self.out.started:
                    self.events.put_nowait(("accepted", leg))
                await _first_token(attempt)
        except TimeoutError:
            await attempt.aclose()
            raise UpstreamError("timeout", "no first token before the timeout") from None
        except BaseException:
            await asyncio.shield(attempt.aclose())
            raise
        attempt.record.ttft_ms = int((time.perf_counter() - attempt.started) * 1000)

    def _failed(self, attempt: LiveAttempt, error: UpstreamError) -> None:
        record = attempt.record
        record.outcome = f"{error.kind}_error"
        record.http_status = error.status
        record.error_message = error.message
        record.retry_after_s = error.retry_after_s
        record.duration_ms = int((time.perf_counter() - attempt.started) * 1000)
        attempt.error = error

    async def _cancel(self, leg: Leg, lost: bool) -> None:
        attempt: LiveAttempt = leg.data
        task = self.tasks.get(leg.no)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.shield(attempt.aclose())
        record = attempt.record
        if record.outcome == "pending":
            record.outcome = "hedge_lost" if lost else "cancelled"
            record.duration_ms = self.accepted.elapsed_ms()
            if lost:
                record.platform_cost_usd = self.router.loser_cost(leg.endpoint_id)

    async def _close_all(self) -> None:
        for timer in self.timers:
            timer.cancel()
        for leg in self.session.legs:
            task = self.tasks.get(leg.no)
            if task is not None and not task.done():
                task.cancel()
        for leg in self.session.legs:
            task = self.tasks.get(leg.no)
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)
            attempt: LiveAttempt | None = leg.data
            if attempt is None:
                continue
            await attempt.aclose()
            if attempt.record.outcome == "pending":
                attempt.record.outcome = "cancelled"
                attempt.record.duration_ms = self.accepted.elapsed_ms()

    def _settle_hedges(self) -> None:
        for reserved, spent in self.router.stores.settlements:
            run_in_background(self._settle(reserved, spent))
        self.router.stores.settlements.clear()

    async def _settle(self, reserved: Decimal, spent: Decimal) -> None:
        if self.reservation is not None and not await self.reservation:
            return  # nothing was reserved
        await hedge_budget_settle(reserved, spent)

    # --- answering ------------------------------------------------------------------------
    def _keepalive_wait(self) -> float | None:
        if not self.accepted.chat.stream or self.session.winner is not None:
            return None
        conf = live_config()
        if not self.out.started:
            return max(0.0, self._t0 + conf.keepalive_after_s - time.monotonic())
        return conf.keepalive_interval_s

    async def _keepalive(self) -> None:
        if not self.out.started:
            await self.out.start_sse(self.accepted.request_id)
        await self.out.write(KEEPALIVE)

    async def _give_up(self, error: GatewayError) -> None:
        self.outcome = Outcome("error", error.status, error.message)
        await self._answer_error(error)

    async def _answer_error(self, error: GatewayError) -> None:
        if self.out.started:
            if not self.out.ended:
                await self.out.write(error_chunk(self.accepted, None, error.message), end=True)
        else:
            await self.out.error(error, self.accepted.request_id)

    async def _serve(self, leg: Leg) -> list[Action]:
        attempt: LiveAttempt = leg.data
        self.served = attempt
        self.ttft_ms = self.accepted.elapsed_ms()
        if self.accepted.chat.stream:
            return await self._relay(leg, attempt)
        return await self._assemble(leg, attempt)

    async def _relay(self, leg: Leg, attempt: LiveAttempt) -> list[Action]:
        out, rewriter, stream = self.out, attempt.rewriter, attempt.stream
        assert stream is not None
        if not out.started:
            await out.start_sse(self.accepted.request_id)
        self.outcome = Outcome("cancelled", 499, "client disconnected")
        try:
            if attempt.pending:
                await out.write(encode_all(attempt.pending))
            # One write per upstream read: the chunks that arrived together leave together;
            # the last ones leave with [DONE]. (The loop of _rewritten_reads, inline: this
            # runs once per token.)
            while True:
                events = await stream.next_events()
                if events is None:  # the stream ended without [DONE]
                    body = b""
                    break
                body, done = _encoded_read(rewriter, events)
                if done:
                    break
                if body:
                    await out.write(body)
            if not rewriter.finished:
                raise UpstreamError("protocol", "upstream stream was cut before it finished")
            self._attempt_done(attempt, "success")
            # Success is recorded before the last write: a client that received it all
            # and left at once is not a cancelled call.
            self.outcome = Outcome("success", 200, "")
            await out.write(body + attempt.closing_usage(self.accepted) + DONE, end=True)
            return self.session.ended(leg.no, time.monotonic(), complete=True)
        except UpstreamError as exc:
            if attempt.aborted:  # the client left: the call is being cancelled (``_first``)
                raise asyncio.CancelledError from None
            self._attempt_done(attempt, "cut", exc.message)
            self.outcome = Outcome("error", 502, exc.message)
            await out.write(
                error_chunk(self.accepted, attempt.route.provider_slug, exc.message), end=True
            )
            return self.session.ended(leg.no, time.monotonic(), complete=False)
        finally:
            await asyncio.shield(attempt.aclose())

    async def _assemble(self, leg: Leg, attempt: LiveAttempt) -> list[Action]:
        rewriter, stream = attempt.rewriter, attempt.stream
        assert stream is not None
        assembler = CompletionAssembler()
        try:
            for chunk in attempt.pending:
                assembler.add(chunk)
            async with aclosing(_rewritten_reads(attempt)) as reads:
                async for batch, _ in reads:
                    for chunk in batch:
                        assembler.add(chunk)
            if not rewriter.finished:
                raise UpstreamError("protocol", "upstream stream was cut before it finished")
        except UpstreamError as exc:
            if attempt.aborted:  # the client left: the call is being cancelled (``_first``)
                raise asyncio.CancelledError from None
            self._attempt_done(attempt, "cut", exc.message)
            attempt.error = exc
            self.served = None
            return self.session.ended(leg.no, time.monotonic(), complete=False, retry=True)
        finally:
            await asyncio.shield(attempt.aclose())
        self._attempt_done(attempt, "success")
        body = assembler.completion()
        body["usage"] = attempt.reply_usage(self.accepted)
        self.outcome = Outcome("success", 200, "")
        await self.out.json(200, orjson.dumps(body), self.accepted.request_id)
        return self.session.ended(leg.no, time.monotonic(), complete=True)

    def _attempt_done(self, attempt: LiveAttempt, outcome: str, error: str = "") -> None:
        attempt.record.outcome = outcome
        attempt.record.duration_ms = int((time.perf_counter() - attempt.started) * 1000)
        if error:
            attempt.record.error_message = error
