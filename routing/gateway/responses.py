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

from typing import Any

import orjson

from billing.auth import KeyPrincipal
from providers.protocols import openai_chat
from providers.protocols import openai_responses as wire
from providers.protocols.types import ProtocolError

from ..request import ChatRequest, chat_request_from
from .accept import Accepted, accept_chat
from .asgi import GatewayApp
from .big import per_message_work
from .respond import Responder
from .translate import TranslatingResponder, load_request, protocol_error


class ResponsesResponder(TranslatingResponder):
    """A ``Responder`` that speaks Responses: what ``LiveCall`` writes in OpenAI's chat
    format (whole SSE events, or one ``chat.completion``) leaves as Responses."""

    __slots__ = ("request",)
    renderer: wire.ResponseRenderer | None  # set by the base class, bound in ``bind``

    def __init__(self, send) -> None:
        super().__init__(send)
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

    def whole(self, body: bytes) -> bytes:
        if self.renderer is None:
            return body
        events = openai_chat.events_from_completion(orjson.loads(body))
        return orjson.dumps(wire.render_response(self.renderer, events))


def _chat_request(request: Any) -> ChatRequest:
    return chat_request_from(wire.to_chat_body(request))


class ResponsesApp(GatewayApp):
    """ASGI app for the Responses API: ``GatewayApp`` with Responses replies."""

    responder = ResponsesResponder

    async def accept(
        self, scope: dict[str, Any], principal: KeyPrincipal, body: bytes, out: Responder
    ) -> Accepted | None:
        assert isinstance(out, ResponsesResponder)
        request = await load_request(body)
        try:
            chat = await per_message_work(len(body), _chat_request, request)
        except ProtocolError as exc:
            raise protocol_error(exc) from None
        accepted = await accept_chat(principal, chat, len(body))
        out.bind(request, accepted)
        return accepted


responses_app = ResponsesApp()
