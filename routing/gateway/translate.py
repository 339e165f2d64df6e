"""The shared half of the gateway's other wire formats (Messages, Responses): a request
read into JSON, and a ``Responder`` that translates what ``LiveCall`` writes in OpenAI
chat's wire format (whole SSE events, or one ``chat.completion``) into that format."""

from __future__ import annotations

from typing import Any

import orjson

from providers.protocols import openai_chat
from providers.protocols.types import ProtocolError

from ..config import live_config
from ..errors import GatewayError
from ..request import loads
from .big import per_message_work
from .respond import Responder


async def load_request(body: bytes) -> Any:
    """The request body as JSON (nested no deeper than the gateway allows)."""
    return await per_message_work(len(body), loads, body, live_config().max_json_depth)


def protocol_error(exc: ProtocolError) -> GatewayError:
    """A request the wire format's translation refused: the client's 400 (or 4xx)."""
    return GatewayError(exc.status, exc.message, param=exc.param)


class TranslatingResponder(Responder):
    """A ``Responder`` whose stream, once started, is rendered by ``renderer`` (set when
    the request is bound), and whose whole 200 reply by ``whole``. A subclass says what
    opens its stream (``opening``), what a keep-alive comment becomes (``keepalive``)
    and how a whole reply reads (``whole``)."""

    __slots__ = ("renderer", "sse")

    def __init__(self, send) -> None:
        super().__init__(send)
        self.sse = False  # a stream started: writes are chat SSE events to translate
        self.renderer: Any = None  # the format's stream renderer, once bound

    def opening(self) -> bytes:
        return self.renderer.start()

    def keepalive(self, event: bytes) -> bytes:
        return event + b"\n\n"  # a keep-alive comment as it came: SSE clients skip it

    def whole(self, body: bytes) -> bytes:
        """A whole ``chat.completion`` (status 200) in this format; as it is unbound."""
        return body

    async def start_sse(self, request_id: str) -> None:
        await super().start_sse(request_id)
        self.sse = True
        assert self.renderer is not None
        await Responder.write(self, self.opening())

    def _translate(self, body: bytes) -> bytes:
        renderer = self.renderer
        assert renderer is not None
        out = []
        for event in body.split(b"\n\n"):
            if not event:
                continue
            if event.startswith(b":"):
                out.append(self.keepalive(event))
            elif event == b"data: [DONE]":
                out.append(renderer.finish())
            elif event.startswith(b"data: "):
                chunk = orjson.loads(event[6:])
                out += [renderer.render(e) for e in openai_chat.events_from_chunk(chunk)]
        return b"".join(out)

    async def write(self, body: bytes, *, end: bool = False) -> None:
        await Responder.write(self, self._translate(body) if self.sse else body, end=end)

    async def json(self, status: int, body: bytes, request_id: str | None = None) -> None:
        if status == 200:
            body = self.whole(body)
        await Responder.json(self, status, body, request_id)
