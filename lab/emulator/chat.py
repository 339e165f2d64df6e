"""``POST /{provider}/v1/chat/completions``: admission, disconnect watching, errors.

The response runs as a task next to a watcher on ``receive()``; when the client
disconnects (also during the silent TTFT wait) the task is cancelled at once and
the log record becomes ``cancelled`` with ``ended_at`` = the time of cancellation.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from .admission import Reject, check_auth, check_model, parse_body, validate_chat
from .generate import Exchange, run_completion, run_scripted, sleep
from .responses import Receive, Send, send_error
from .scripted import Script, script_for, spoiled
from .state import EmulatorState, ProviderState, finish_record, new_record
from .timing import cache_ttl_real_s, effective_scale, plan_request
from .tokens import estimate_prompt_tokens


async def handle_chat(
    state: EmulatorState,
    provider: ProviderState,
    scope: dict[str, Any],
    body: bytes,
    receive: Receive,
    send: Send,
    *,
    record_extra: dict[str, Any] | None = None,
) -> None:
    """Answer one chat-completions request and keep its log record up to date
    (``record_extra``: fields added to the log record, e.g. by the Messages route)."""
    record = new_record(provider.slug, scope["headers"])
    record.update(record_extra or {})
    state.log.append(record)
    try:
        check_auth(provider, scope["headers"])
        data = parse_body(body, record)
        request = validate_chat(data)
        script = script_for(data, record["id"], provider.profile["reasoning_tokens"])
        script = maybe_spoiled(provider, script)
        request = replace(request, script=script)
        check_model(provider, request, estimate_prompt_tokens(request.messages))
    except Reject as reject:
        finish_record(record, reject.log_status, reject.status, reject.message)
        await send_error(send, reject.status, reject.message, code=reject.code, param=reject.param)
        return
    scale = effective_scale(provider.profile, state.time_scale)
    exchange = Exchange(provider, request, record, scale, send)
    await _watched(_respond(exchange), receive, exchange)


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _watched(coro: Any, receive: Receive, exchange: Exchange) -> None:
    """Run ``coro`` until done, or cancel it as soon as the client disconnects."""
    task = asyncio.ensure_future(coro)
    watcher = asyncio.ensure_future(_wait_disconnect(receive))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        watcher.cancel()
        raise
    if task.done():
        watcher.cancel()
        task.result()  # re-raise StreamAbort (connection abort) or a bug
        return
    if exchange.finished:  # disconnect seen only because the response completed
        await task
        return
    finish_record(exchange.record, "cancelled", None, "client disconnected")
    task.cancel()
    await asyncio.wait({task})


async def _respond(ex: Exchange) -> None:
    profile, record = ex.provider.profile, ex.record
    override = profile["status_override"]
    if override is not None:
        await sleep(profile["error_delay_s"] * ex.scale)
        log_status = "rate_limited" if override == 429 else "error"
        await _fail(ex, override, f"status_override {override}", log_status)
        return
    cap = profile["concurrency_cap"]
    if cap is not None and ex.provider.active >= cap:
        await _fail(ex, 429, f"Too many concurrent requests (cap {cap}).", "rate_limited")
        return
    ex.provider.active += 1
    try:
        ttl = cache_ttl_real_s(profile, ex.scale)
        prompt, cached = ex.provider.cache.lookup_and_store(
            ex.request.model, ex.request.messages, ttl
        )
        record["prompt_tokens"], record["cached_tokens"] = prompt, cached
        plan = plan_request(profile, ex.provider.rng, prompt, cached)
        record["planned_ttft_s"], record["stalled"] = plan.ttft_s, plan.stalled
        if plan.fail:
            await sleep(profile["error_delay_s"] * ex.scale)
            await _fail(ex, 500, "The server had an error while processing your request.")
            return
        if ex.request.script is not None:
            await run_scripted(ex, plan.ttft_s)
        else:
            await run_completion(ex, plan.ttft_s)
    finally:
        ex.provider.active -= 1


async def _fail(ex: Exchange, status: int, message: str, log_status: str = "error") -> None:
    await send_error(ex.send, status, message)
    finish_record(ex.record, log_status, status, message)


def maybe_spoiled(provider: ProviderState, script: Script | None) -> Script | None:
    """The script, its tool call malformed on the profile's ``malformed_tool_calls``
    share of calls (drawn from the provider's seeded RNG only for a tool call)."""
    rate = provider.profile["malformed_tool_calls"]
    if script is None or script.tool_call is None or not rate:
        return script
    rng = provider.rng
    return spoiled(script, rng.randrange(3)) if rng.random() < rate else script
