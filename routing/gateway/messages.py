"""The Anthropic Messages API (``POST /api/v1/messages``, ``/v1/messages``, and
``.../messages/count_tokens``) on the same gateway session as chat completions.

A Messages request is translated to the neutral (OpenAI chat) form
(``providers.protocols.anthropic_messages``), validated and planned like any chat
request, and run by the same ``LiveCall``: routing, retries, hedging, billing and the
Activity row are the chat path's. Only the rendering differs: ``MessagesResponder`` is
the ``Responder`` the call writes to, and it turns the OpenAI chunks (and the
keep-alive comments, the mid-stream error chunk, ``[DONE]``) into Messages SSE events,
a whole reply into a Message, and every error into Anthropic's error shape.

Authentication: ``x-api-key: <key>`` (Anthropic's SDK) or ``Authorization: Bearer``
(Claude Code with ``ANTHROPIC_AUTH_TOKEN``); ``anthropic-version`` and
``anthropic-beta`` headers are accepted; two loosen the validation as at Anthropic
(``mid-conversation-system-*``: ``role: "system"`` inside ``messages``;
``interleaved-thinking-*``: a thinking budget above ``max_tokens``).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from billing.auth import KeyPrincipal
from providers.protocols import anthropic_messages as wire
from providers.protocols import openai_chat
from providers.protocols.types import ProtocolError

from ..catalog import catalog_cache
from ..errors import OVERLOADED, GatewayError
from ..memory import memory
from ..request import ChatRequest, chat_request_from
from .accept import Accepted, accept_chat
from .asgi import GatewayApp, _header
from .big import per_message_work
from .respond import Responder
from .translate import TranslatingResponder, load_request, protocol_error

logger = logging.getLogger(__name__)


def authorization(scope: dict[str, Any]) -> str | None:
    """``Authorization`` as sent, else ``x-api-key`` as a Bearer header."""
    header = _header(scope, b"authorization")
    if header:
        return header
    api_key = _header(scope, b"x-api-key")
    return f"Bearer {api_key}" if api_key else None


class MessagesResponder(TranslatingResponder):
    """A ``Responder`` that speaks Messages: what ``LiveCall`` writes in OpenAI's wire
    format (whole SSE events, or one ``chat.completion``) leaves as Messages."""

    __slots__ = ("accepted",)
    renderer: wire.StreamRenderer | None  # set by the base class, bound in ``bind``

    def __init__(self, send) -> None:
        super().__init__(send)
        self.accepted: Accepted | None = None

    def bind(self, accepted: Accepted) -> None:
        self.accepted = accepted
        self.renderer = wire.StreamRenderer(
            accepted.request_id, accepted.chat.model_slug, accepted.prompt_tokens_estimate
        )

    def model_switched(self, accepted: Accepted) -> None:
        """The call fell back to another model: the Message names it (unless the
        stream's ``message_start`` already left)."""
        self.accepted = accepted
        if self.renderer is not None and not self.sse:
            self.renderer.model = accepted.chat.model_slug

    def opening(self) -> bytes:
        assert self.renderer is not None
        return self.renderer.start() + wire.PING

    def keepalive(self, event: bytes) -> bytes:
        return wire.PING

    def whole(self, body: bytes) -> bytes:
        accepted = self.accepted
        if accepted is None:
            return body
        events = openai_chat.events_from_completion(orjson.loads(body))
        message = wire.render_message(
            accepted.request_id,
            accepted.chat.model_slug,
            events,
            accepted.prompt_tokens_estimate,
        )
        return orjson.dumps(message)

    async def error(self, error: GatewayError, request_id: str | None = None) -> None:
        # Every provider overloaded: Anthropic's own answer, 529 overloaded_error.
        status = 529 if error.code == OVERLOADED else error.status
        body = orjson.dumps(wire.error_body(status, error.message))
        await self.error_reply(error, status, body, request_id)


def betas(scope: dict[str, Any]) -> tuple[str, ...]:
    """The names in the ``anthropic-beta`` header (comma-separated)."""
    header = _header(scope, b"anthropic-beta") or ""
    return tuple(name.strip() for name in header.split(",") if name.strip())


def _raw_count(request: Any, names: tuple[str, ...]) -> int:
    return memory.knowledge.tokens.estimate(wire.count_text(request, names))


async def _count_tokens(
    request: Any, names: tuple[str, ...], body_bytes: int, out: MessagesResponder
) -> None:
    """``POST /v1/messages/count_tokens``: the gateway's estimate for the model."""
    raw = await per_message_work(body_bytes, _raw_count, request, names)
    slug = request["model"].partition(":")[0]
    if (model := await catalog_cache.get(slug)) is None:
        raise GatewayError(404, f"Unknown model '{slug}'.", code="model_not_found")
    slug = model.info.slug  # an alias counts as its catalog model
    tokens = round(raw * memory.knowledge.tokens.ratio(slug, raw))
    await out.json(200, orjson.dumps({"input_tokens": tokens}))


def _chat_request(request: Any, names: tuple[str, ...]) -> ChatRequest:
    return chat_request_from(wire.to_chat_body(request, names))


class MessagesApp(GatewayApp):
    """ASGI app for the Messages API: ``GatewayApp`` with Anthropic's replies, errors
    (529 when at capacity) and ``x-api-key``."""

    responder = MessagesResponder

    def overloaded(self) -> GatewayError:
        return GatewayError(529, "The gateway is at capacity; retry shortly.", retry_after_s=1)

    def authorization(self, scope: dict[str, Any]) -> str | None:
        return authorization(scope)

    async def accept(
        self, scope: dict[str, Any], principal: KeyPrincipal, body: bytes, out: Responder
    ) -> Accepted | None:
        assert isinstance(out, MessagesResponder)
        request = await load_request(body)
        names = betas(scope)
        try:
            if scope["path"].rstrip("/").endswith("/count_tokens"):
                await _count_tokens(request, names, len(body), out)
                return None
            chat = await per_message_work(len(body), _chat_request, request, names)
        except ProtocolError as exc:
            raise protocol_error(exc) from None
        accepted = await accept_chat(principal, chat, len(body))
        out.bind(accepted)
        return accepted


messages_app = MessagesApp()
