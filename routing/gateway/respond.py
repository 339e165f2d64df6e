"""Writing an HTTP response straight to the ASGI ``send``: JSON bodies in one message,
SSE streams one message per upstream read. Every error is OpenAI-shaped JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..errors import GatewayError

Send = Callable[[dict[str, Any]], Awaitable[None]]
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
SSE_HEADERS = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)
JSON_HEADERS = ((b"content-type", b"application/json"),)


class Responder:
    """One response over ASGI; ``started``/``ended`` say how far it got."""

    __slots__ = ("ended", "send", "started", "status")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False
        self.ended = False
        self.status = 0

    async def _start(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        self.started, self.status = True, status
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, *SECURITY_HEADERS],
            }
        )

    async def start_sse(self, request_id: str) -> None:
        await self._start(200, [*SSE_HEADERS, (b"x-generation-id", request_id.encode())])

    async def write(self, body: bytes, *, end: bool = False) -> None:
        if self.ended:
            return
        self.ended = end
        await self.send({"type": "http.response.body", "body": body, "more_body": not end})

    async def json(self, status: int, body: bytes, request_id: str | None = None) -> None:
        """A whole JSON reply (``x-generation-id``: the call's ``request_id``, if any)."""
        headers: Iterable[tuple[bytes, bytes]] = JSON_HEADERS
        if request_id:
            headers = (*JSON_HEADERS, (b"x-generation-id", request_id.encode()))
        await self._start(status, headers)
        await self.write(body, end=True)

    async def error(self, error: GatewayError, request_id: str | None = None) -> None:
        await self.error_reply(error, error.status, error.body(), request_id)

    async def error_reply(
        self, error: GatewayError, status: int, body: bytes, request_id: str | None
    ) -> None:
        """``error`` answered as ``status`` and ``body`` (a wire format's own form of it)
        with the error's headers (``Retry-After``, ``Allow``)."""
        headers = [*JSON_HEADERS, *error.headers()]
        if request_id:
            headers.append((b"x-generation-id", request_id.encode()))
        await self._start(status, headers)
        await self.write(body, end=True)
