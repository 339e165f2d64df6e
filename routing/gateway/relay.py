"""One upstream attempt as the live shell sees it, and the rewriting of its SSE chunks
for the customer (one JSON parse and one dump per chunk).

Usage is read where it comes (the provider's usage chunk, usually the last), in the
endpoint's dialect (``providers.protocols.usage``), into the gateway's form; the client's
reply shows that form, the cost billed and ``cost_estimated`` (docs/api.md "Usage
dialects"), so the reply and the bill never disagree."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from billing.ledger import AttemptResult
from billing.pricing import call_cost
from providers.protocols.usage import UnreadableUsage, gateway_usage, read_usage
from providers.redact import redact
from providers.upstream import UpstreamError, UpstreamStream

from ..catalog import EndpointRoute
from ..memory import memory

logger = logging.getLogger(__name__)
# A usage count above this is not credible where the endpoint's context length is unknown.
MAX_TOKENS_WITHOUT_CONTEXT = 10_000_000
DONE_DATA = b"[DONE]"
DONE = b"data: [DONE]\n\n"
KEEPALIVE = b": PROCESSING\n\n"


@dataclass(slots=True)
class LiveAttempt:
    """An attempt's upstream stream, rewriter and ledger record."""

    route: EndpointRoute
    record: AttemptResult
    rewriter: ChunkRewriter
    stream: UpstreamStream | None = None
    pending: list[dict] = field(default_factory=list)  # rewritten chunks up to the first token
    started: float = 0.0
    error: UpstreamError | None = None  # why the attempt failed
    counted: bool = False  # in memory.knowledge.inflight (O3 concurrency caps) until closed
    aborted: bool = False  # closed because the client left: not the provider's failure

    @property
    def ttft_ms(self) -> int | None:
        return self.record.ttft_ms

    @property
    def duration_ms(self) -> int | None:
        return self.record.duration_ms

    def usage_numbers(self, accepted) -> tuple[int, int, int, bool]:
        """(prompt, cached, completion, estimated) from reported usage, else an estimate."""
        usage = self.rewriter.usage
        if usage and not self.rewriter.usage_replaced:
            details = usage.get("prompt_tokens_details") or {}
            return (
                int(usage.get("prompt_tokens") or 0),
                int(details.get("cached_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                False,
            )
        cached = accepted.cached_tokens.get(self.route.endpoint_id, 0)
        return accepted.prompt_tokens_estimate, cached, self.rewriter.completion_chunks, True

    def cache_write_tokens(self) -> int:
        """Prompt tokens the provider wrote to its cache (billed at the cache-write price)."""
        usage = self.rewriter.usage or {}
        details = usage.get("prompt_tokens_details") or {}
        return int(details.get("cache_write_tokens") or 0)

    def reply_usage(self, accepted) -> dict[str, Any]:
        """The usage the client is shown: the billed counts (the provider's report read in
        its dialect, else the gateway's estimate), their cost and whether it is estimated."""
        cost, prompt, cached, completion, estimated = self.cost(accepted)
        usage = self.rewriter.usage
        if estimated or not usage:
            usage = gateway_usage(prompt, cached, 0, completion)
        return {**usage, "cost": float(cost), "cost_estimated": estimated}

    def closing_usage(self, accepted) -> bytes:
        """The usage event a stream ends with when the client asked for usage and none
        was sent (the provider reported none, or its dialect is ``none``): the
        gateway's own count, ``cost_estimated: true``. Else b""."""
        if not accepted.chat.include_usage or self.rewriter.usage_sent:
            return b""
        chunk = {
            "id": accepted.request_id,
            "object": "chat.completion.chunk",
            "created": int(accepted.created_at.timestamp()),
            "model": accepted.chat.model_slug,
            "provider": self.route.provider_slug,
            "choices": [],
            "usage": self.reply_usage(accepted),
        }
        return b"data: " + orjson.dumps(chunk) + b"\n\n"

    def cost(self, accepted) -> tuple[Decimal, int, int, int, bool]:
        prompt, cached, completion, estimated = self.usage_numbers(accepted)
        cost = self.cost_of(prompt, cached, completion)
        return cost, prompt, cached, completion, estimated

    def cost_of(self, prompt: int, cached: int, completion: int) -> Decimal:
        """What these tokens cost at this attempt's prices, with its cache writes."""
        return call_cost(
            prices=self.route.prices,
            prompt_tokens=prompt,
            cached_tokens=cached,
            completion_tokens=completion,
            cache_write_tokens=self.cache_write_tokens(),
        )

    def opening(self) -> None:
        """The upstream call is being opened: it counts in the process's calls in flight
        at its endpoint (learnt concurrency caps, O3) until ``aclose``."""
        if not self.counted:
            self.counted = True
            memory.knowledge.inflight[self.route.endpoint_id] += 1

    def abort(self) -> None:
        """Close the upstream connection at once (``aclose`` still follows)."""
        self.aborted = True
        if self.stream is not None:
            self.stream.abort()

    async def aclose(self) -> None:
        if self.counted:
            self.counted = False
            memory.knowledge.inflight[self.route.endpoint_id] -= 1
        if self.stream is not None:
            stream, self.stream = self.stream, None
            await stream.aclose()


class ChunkRewriter:
    """Sets our id, model and ``provider`` on each chunk; captures usage and adds its cost.

    The usage chunk is passed on only if ``keep_usage`` (the client asked for it with
    ``include_usage``, or the reply is assembled into one non-streaming response).
    """

    __slots__ = (
        "accepted",
        "attempt",
        "completion_chunks",
        "dialect",
        "finished",
        "keep_usage",
        "model",
        "provider",
        "request_id",
        "route",
        "saw_token",
        "tool_calls",
        "upstream_error",
        "usage",
        "usage_replaced",
        "usage_sent",
    )

    def __init__(self, accepted, route: EndpointRoute) -> None:
        self.accepted = accepted
        self.route = route
        # What every chunk gets, looked up once (an attempt's model never changes).
        self.request_id = accepted.request_id
        self.model = accepted.chat.model_slug
        self.provider = route.provider_slug
        self.dialect = route.usage_dialect
        self.attempt: LiveAttempt | None = None
        self.keep_usage = accepted.chat.include_usage or not accepted.chat.stream
        self.saw_token = False
        self.finished = False
        self.completion_chunks = 0  # content chunks seen: the estimate if usage never comes
        self.upstream_error: str | None = None
        self.usage: dict[str, Any] | None = None
        self.usage_replaced = False  # the provider's report was not credible: our estimate
        self.usage_sent = False  # a usage chunk went to the client
        # The reply's tool calls, joined from their fragments, when the request has tools
        # (checked once the call is served: ``tool_calls_of``, O5); None: not collected.
        self.tool_calls: dict[tuple[int, Any], dict[str, str]] | None = (
            {} if accepted.chat.body.get("tools") else None
        )

    def _track(self, choices: Any) -> bool:
        """Count the tokens and the finish of ``choices``, in the same pass checking its
        shape: False unless it is a list of objects whose ``delta`` / ``message``, if
        any, are objects (a provider's chunk of another shape is a failed stream, not a
        gateway error; the chunk is then dropped, so what was counted does not matter)."""
        if not isinstance(choices, list):
            return False
        for choice in choices:
            if not isinstance(choice, dict):
                return False
            delta = choice.get("delta")
            if delta:
                if not isinstance(delta, dict):
                    return False
                if (
                    delta.get("content")
                    or delta.get("tool_calls")
                    or delta.get("refusal")
                    or delta.get("reasoning_content")
                    or delta.get("reasoning")
                ):
                    self.saw_token = True
                    self.completion_chunks += 1
                if self.tool_calls is not None and delta.get("tool_calls"):
                    collect_tool_calls(self.tool_calls, choice.get("index", 0), delta["tool_calls"])
            message = choice.get("message")
            if message and not isinstance(message, dict):
                return False
            if choice.get("finish_reason"):
                self.saw_token = True
                self.finished = True
        return True

    def _usage(self, chunk: dict[str, Any], reported: Any) -> bool:
        """Read the provider's usage in the endpoint's dialect (each report replaces the
        last: never summed) and put the billed form, with its cost, in the chunk;
        returns whether the chunk should still be sent."""
        usage = self._read(reported)
        if usage is None or not self.keep_usage:
            del chunk["usage"]  # not read (dialect none), or not asked for
            return bool(chunk.get("choices"))
        self.usage_sent = True
        chunk["usage"] = self.attempt.reply_usage(self.accepted) if self.attempt else usage
        return True

    def _read(self, reported: Any) -> dict[str, Any] | None:
        """The report in the gateway's form (None: the dialect reads none), or our
        estimate in place of one no provider could mean."""
        try:
            usage = read_usage(self.dialect, reported)
        except UnreadableUsage:
            usage = self._estimated_usage(reported)
        else:
            if usage is None:
                return None
            if credible_usage(usage, self.route.info.context_length):
                self.usage_replaced = False
            else:
                usage = self._estimated_usage(reported)
        self.usage = usage
        return usage

    def _estimated_usage(self, reported: Any) -> dict[str, Any]:
        """Our estimate in place of a report no provider could mean (negative, not a
        whole number, beyond the context length, more cached than sent): billed and
        shown as estimated, as when no usage comes at all."""
        logger.warning(
            "provider %s reported impossible usage %.200r; billing the estimate",
            self.provider,
            reported,
        )
        self.usage_replaced = True
        prompt = self.accepted.prompt_tokens_estimate
        cached = min(prompt, self.accepted.cached_tokens.get(self.route.endpoint_id, 0))
        return gateway_usage(prompt, cached, 0, self.completion_chunks)

    def rewrite(self, data: bytes) -> dict[str, Any] | None:
        """The chunk to pass on (None: drop it); sets ``upstream_error`` on an error."""
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.upstream_error = "upstream sent a chunk that is not valid JSON"
            return None
        if not isinstance(chunk, dict):
            return None
        if chunk.get("error"):
            error = chunk["error"]
            message = str(error.get("message") if isinstance(error, dict) else error)
            self.upstream_error = redact(message, self.route.authorization)
            return None
        if not self._track(chunk.get("choices") or []):
            self.upstream_error = "upstream sent a malformed chunk"
            return None
        chunk["id"] = self.request_id
        chunk["model"] = self.model
        chunk["provider"] = self.provider
        usage = chunk.get("usage")
        if usage:
            if not self._usage(chunk, usage):
                return None
        elif "usage" in chunk and not self.keep_usage:
            del chunk["usage"]
        return chunk


def collect_tool_calls(
    parts: dict[tuple[int, Any], dict[str, str]], choice: Any, calls: Any
) -> None:
    """Join streamed tool-call fragments per (choice, call index): string appends only;
    the check runs once on the assembled calls (``tool_calls_of``)."""
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict):
            continue
        key = (choice, call.get("index", len(parts)))
        merged = parts.setdefault(key, {"name": "", "arguments": ""})
        function = call.get("function")
        if isinstance(function, dict):
            for field_name in ("name", "arguments"):
                piece = function.get(field_name)
                if isinstance(piece, str):
                    merged[field_name] += piece


def tool_calls_of(rewriter: ChunkRewriter) -> list[dict[str, Any]]:
    """The assembled tool calls of a served reply, in the OpenAI form (none: [])."""
    parts = rewriter.tool_calls
    return [{"function": part} for part in parts.values()] if parts else []


def _count(value: Any, limit: int) -> bool:
    """A token count: a whole number (an integral float too) from 0 to ``limit``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 <= value <= limit and float(value).is_integer()


def credible_usage(usage: Any, context_length: int) -> bool:
    """Whether a provider's usage report can be billed: every count present is a whole
    number from 0 to the endpoint's context length (no prompt or reply can be longer),
    and the cached and cache-written prompt tokens are at most the prompt's."""
    if not isinstance(usage, dict):
        return False
    limit = context_length if context_length > 0 else MAX_TOKENS_WITHOUT_CONTEXT
    prompt = usage.get("prompt_tokens") or 0
    if not _count(prompt, limit) or not _count(usage.get("completion_tokens") or 0, limit):
        return False
    details = usage.get("prompt_tokens_details") or {}
    if not isinstance(details, dict):
        return False
    return all(
        _count(details.get(name) or 0, int(prompt))
        for name in ("cached_tokens", "cache_write_tokens")
    )


def error_chunk(accepted, provider_slug: str | None, message: str) -> bytes:
    """The mid-stream error event (OpenRouter's shape): error + finish_reason "error"."""
    payload = {
        "id": accepted.request_id,
        "object": "chat.completion.chunk",
        # OpenAI's ChatCompletionChunk requires it: Unix seconds the call was accepted.
        "created": int(accepted.created_at.timestamp()),
        "model": accepted.chat.model_slug,
        "provider": provider_slug,
        "error": {"message": message, "type": "upstream_error", "code": 502},
        "choices": [{"index": 0, "delta": {}, "finish_reason": "error"}],
    }
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def encode_all(chunks: list[dict[str, Any]]) -> bytes:
    """Several chunks as consecutive SSE events, in one bytes object (one write)."""
    return b"".join([b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks])
