"""The OpenAI Responses API (``POST /api/v1/responses``, ``/v1/responses``) on the same
gateway session as chat completions.

A Responses request is translated to the neutral (OpenAI chat) form
(``providers.protocols.openai_responses``), validated and planned like any chat request,
and run by the same ``LiveCall``: routing, retries, hedging, billing and the Activity row
are the chat path's. ``ResponsesResponder`` is the ``Responder`` the call writes to: it
turns the OpenAI chunks (and the keep-alive comments, the mid-stream error chunk,
``[DONE]``) into Responses SSE events, and a whole reply into a Response. Errors keep
OpenAI's shape. Nothing is stored: ``previous_response_id`` is a 400 (the client sends
the whole conversation, as Codex does with ``store: false``). The Response's ``id`` is
the call's generation id (``GET /api/v1/generation?id=``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from billing.auth import KeyPrincipal
from providers.protocols import openai_chat
from providers.protocols import openai_responses as wire
from providers.protocols.types import ProtocolError

from ..config import live_config
from ..errors import GatewayError
from ..request import ChatRequest, chat_request_from, loads
from .accept import Accepted, accept_chat
from .asgi import GatewayApp
from .big import per_message_work
from .respond import Responder


class ResponsesResponder(Responder):
    """A ``Responder`` that speaks Responses: what ``LiveCall`` writes in OpenAI's chat
    format (whole SSE events, or one ``chat.completion``) leaves as Responses."""

    __slots__ = ("renderer", "request", "sse")

    def __init__(self, send) -> None:
        super().__init__(send)
        self.sse = False  # a stream started: writes are chat SSE events to translate
        self.renderer: wire.ResponseRenderer | None = None
        self.request: dict[str, Any] = {}

    def bind(self, request: dict[str, Any], accepted: Accepted) -> None:
        created = int(accepted.created_at.timestamp())
        response = wire.skeleton(request, accepted.request_id, accepted.chat.model_slug, created)
        self.renderer = wire.ResponseRenderer(
            response, wire.namespaces(request.get("tools")), accepted.prompt_tokens_estimate
        )

    def model_switched(self, accepted: Accepted) -> None:
        """The call fell back to another model: the Response names it (unless the
        stream's ``response.created`` already left)."""
        if self.renderer is not None and not self.sse:
            self.renderer.response["model"] = accepted.chat.model_slug

    async def start_sse(self, request_id: str) -> None:
        await super().start_sse(request_id)
        self.sse = True
        assert self.renderer is not None
        await Responder.write(self, self.renderer.start())

    def _translate(self, body: bytes) -> bytes:
        renderer = self.renderer
        assert renderer is not None
        out = []
        for event in body.split(b"\n\n"):
            if not event:
                continue
            if event.startswith(b":"):
                out.append(event + b"\n\n")  # a keep-alive comment: SSE clients skip it
            elif event == b"data: [DONE]":
                out.append(renderer.finish())
            elif event.startswith(b"data: "):
                chunk = orjson.loads(event[6:])
                out += [renderer.render(e) for e in openai_chat.events_from_chunk(chunk)]
        return b"".join(out)

    async def write(self, body: bytes, *, end: bool = False) -> None:
        await Responder.write(self, self._translate(body) if self.sse else body, end=end)

    async def json(
        self,
        status: int,
        body: bytes,
        request_id: str | None = None,
        extra: Iterable[tuple[bytes, bytes]] = (),
    ) -> None:
        if status == 200 and self.renderer is not None:
            events = openai_chat.events_from_completion(orjson.loads(body))
            body = orjson.dumps(wire.render_response(self.renderer, events))
        await Responder.json(self, status, body, request_id, extra)


def _chat_request(request: Any) -> ChatRequest:
    return chat_request_from(wire.to_chat_body(request))


class ResponsesApp(GatewayApp):
    """ASGI app for the Responses API: ``GatewayApp`` with Responses replies."""

    responder = ResponsesResponder

    async def accept(
        self, scope: dict[str, Any], principal: KeyPrincipal, body: bytes, out: Responder
    ) -> Accepted | None:
        assert isinstance(out, ResponsesResponder)
        depth = live_config().max_json_depth
        request = await per_message_work(len(body), loads, body, depth)
        try:
            chat = await per_message_work(len(body), _chat_request, request)
        except ProtocolError as exc:
            raise GatewayError(exc.status, exc.message, param=exc.param) from None
        accepted = await accept_chat(principal, chat, len(body))
        out.bind(request, accepted)
        return accepted


responses_app = ResponsesApp()
