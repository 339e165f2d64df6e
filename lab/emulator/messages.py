"""``POST /{provider}/v1/messages``: the Anthropic Messages API of a provider.

The request is translated to the OpenAI chat body (``providers.protocols.
anthropic_messages.to_chat_body``) and answered by the same code as chat completions
(timing, cache, faults, scripted thinking and tool calls); what that code sends is
turned back into Messages on the way out: SSE (``message_start``, ``ping``,
``content_block_*`` for text, thinking and tool_use, ``message_delta`` with usage,
``message_stop``, ``error``), a whole Message, or Anthropic's error shape with the same
HTTP status (``status_override: 529`` answers ``overloaded_error``).

Anthropic's rules that matter to a client are enforced: ``anthropic-version`` is
required, the key comes as ``x-api-key`` (or Bearer), ``max_tokens`` is required, and
a ``thinking`` block sent back must carry the signature this emulator gave it
(``emu-sig-...``), else 400, as Anthropic checks its own signatures. Usage follows
Anthropic's convention (``input_tokens`` excludes cache reads and writes); a request
carrying any ``cache_control`` reports its uncached prompt as
``cache_creation_input_tokens`` (the emulator's cache stores every prefix anyway).
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from providers.protocols import anthropic_messages as wire
from providers.protocols import openai_chat
from providers.protocols.types import ProtocolError, ReasoningDelta, ReasoningSignature

from .admission import last_message_part_types
from .chat import handle_chat
from .responses import JSON_TYPE, Receive, Send
from .state import EmulatorState, ProviderState
from .tokens import estimate_prompt_tokens


async def send_anthropic_error(send: Send, status: int, message: str, headers=()) -> None:
    payload = orjson.dumps(wire.error_body(status, message))
    length = (b"content-length", str(len(payload)).encode())
    await send(
        {"type": "http.response.start", "status": status, "headers": [JSON_TYPE, length, *headers]}
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


SIGNATURE_PREFIX = "emu-sig-"


def _signed(events: list) -> list:
    """A signature after the first reasoning of a reply (the renderer puts it on the
    thinking block)."""
    for index, event in enumerate(events):
        if isinstance(event, ReasoningDelta):
            signature = ReasoningSignature(SIGNATURE_PREFIX + os.urandom(8).hex())
            return [*events[: index + 1], signature, *events[index + 1 :]]
    return events


def _bad_signature(request: dict[str, Any]) -> str | None:
    for m_index, message in enumerate(request.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for b_index, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, dict) or block.get("type") != "thinking":
                continue
            signature = block.get("signature")
            if not isinstance(signature, str) or not signature.startswith(SIGNATURE_PREFIX):
                return (
                    f"messages.{m_index}.content.{b_index}: Invalid `signature` in `thinking` block"
                )
    return None


def _with_cache_writes(usage: dict[str, Any] | None, cache_hint: bool) -> None:
    if not usage or not cache_hint:
        return
    details = usage.setdefault("prompt_tokens_details", {})
    cached = int(details.get("cached_tokens") or 0)
    details["cache_write_tokens"] = max(int(usage.get("prompt_tokens") or 0) - cached, 0)


class MessagesSend:
    """The ASGI ``send`` the chat code writes OpenAI chat to; Messages leave."""

    def __init__(self, send: Send, model: str, prompt_estimate: int, cache_hint: bool) -> None:
        self.send = send
        self.model = model
        self.cache_hint = cache_hint
        self.message_id = "msg_" + os.urandom(12).hex()
        self.renderer = wire.StreamRenderer(self.message_id, model, prompt_estimate)
        self.prompt_estimate = prompt_estimate
        self.start: dict[str, Any] | None = None
        self.sse = False
        self.opened = False
        self.buffer = b""
        self.signed = False

    def _events(self, data: bytes) -> list:
        chunk = orjson.loads(data)
        _with_cache_writes(chunk.get("usage"), self.cache_hint)
        events = openai_chat.events_from_chunk(chunk)
        if not self.signed and any(isinstance(e, ReasoningDelta) for e in events):
            self.signed = True
            return _signed(events)
        return events

    def _translate(self, body: bytes) -> bytes:
        out = []
        if not self.opened:
            self.opened = True
            out.append(self.renderer.start() + wire.PING)
        for event in body.split(b"\n\n"):
            if event == b"data: [DONE]":
                out.append(self.renderer.finish())
            elif event.startswith(b"data: "):
                out += [self.renderer.render(e) for e in self._events(event[6:])]
        return b"".join(out)

    def _whole(self, status: int, body: bytes) -> bytes:
        data = orjson.loads(body) if body else {}
        if status != 200:
            error = data.get("error") if isinstance(data, dict) else None
            message = error.get("message") if isinstance(error, dict) else "error"
            return orjson.dumps(wire.error_body(status, str(message)))
        _with_cache_writes(data.get("usage"), self.cache_hint)
        events = _signed(openai_chat.events_from_completion(data))
        message = wire.render_message(self.message_id, self.model, events, self.prompt_estimate)
        return orjson.dumps(message)

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = message.get("headers") or []
            self.sse = any(
                k == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers
            )
            if self.sse:
                await self.send(message)
            else:
                self.start = message
            return
        body, more = message.get("body", b""), message.get("more_body", False)
        if self.sse:
            await self.send(
                {"type": "http.response.body", "body": self._translate(body), "more_body": more}
            )
            return
        self.buffer += body
        if more:
            return
        assert self.start is not None
        payload = self._whole(self.start["status"], self.buffer)
        kept = [
            (k, v)
            for k, v in self.start.get("headers") or []
            if k not in (b"content-length", b"content-type")
        ]
        headers = [JSON_TYPE, (b"content-length", str(len(payload)).encode()), *kept]
        await self.send({**self.start, "headers": headers})
        await self.send({"type": "http.response.body", "body": payload, "more_body": False})


def _betas(scope: dict[str, Any]) -> tuple[str, ...]:
    """The ``anthropic-beta`` header's names (they loosen validation as at Anthropic)."""
    header = (_header(scope, b"anthropic-beta") or b"").decode("latin-1")
    return tuple(name.strip() for name in header.split(",") if name.strip())


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value
    return None


async def handle_messages(
    state: EmulatorState,
    provider: ProviderState,
    scope: dict[str, Any],
    body: bytes,
    receive: Receive,
    send: Send,
) -> None:
    """Answer one Messages request (see the module doc)."""
    if _header(scope, b"anthropic-version") is None:
        await send_anthropic_error(send, 400, "anthropic-version: header is required")
        return
    try:
        request = orjson.loads(body)
        chat = wire.to_chat_body(request, _betas(scope))
    except orjson.JSONDecodeError:
        await send_anthropic_error(send, 400, "The request body is not valid JSON.")
        return
    except ProtocolError as exc:
        await send_anthropic_error(send, exc.status, exc.message)
        return
    if isinstance(request, dict) and (problem := _bad_signature(request)) is not None:
        await send_anthropic_error(send, 400, problem)
        return
    cache_hint = b'"cache_control"' in body
    out = MessagesSend(send, request["model"], estimate_prompt_tokens(chat["messages"]), cache_hint)
    extra = {
        "protocol": "anthropic_messages",
        "anthropic_body_keys": sorted(request),
        "anthropic_last_part_types": last_message_part_types(request.get("messages")),
    }
    await handle_chat(state, provider, scope, orjson.dumps(chat), receive, out, record_extra=extra)
