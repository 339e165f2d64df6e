"""The load test's client: one connection per request, optionally cut, every reply classified.

Plain asyncio and httptools' C parser (as ``loadgen``), no Django. Each request records
what the customer saw: status, content type, ``X-Generation-Id``, tokens received, whether
the stream ended with ``[DONE]``, and, for a cut, the wall-clock time (``time.time()``,
comparable with the emulator's log) at which the client closed the connection.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httptools
import orjson

from .loadgen import ParsedResponses

TOKEN = re.compile(rb'"content"\s*:\s*"[^"]')  # an event carrying a non-empty token
DONE = b"data: [DONE]"


@dataclass
class Cut:
    """When the client goes away: after ``tokens`` tokens, ``delay_s`` after sending, or
    ``after_headers_s`` after the response headers (if no token came first)."""

    tokens: int | None = None
    delay_s: float | None = None
    after_headers_s: float | None = None


@dataclass
class Reply:
    """What one request got (filled in as the response arrives)."""

    index: int
    cut: Cut | None = None
    sent_at: float = 0.0  # time.time()
    status: int = 0
    content_type: str = ""
    generation_id: str = ""
    retry_after: str = ""
    headers_at: float | None = None
    first_token_at: float | None = None
    ended_at: float | None = None
    cut_at: float | None = None  # when the client closed the connection on purpose
    tokens: int = 0
    done: bool = False  # a 200 stream that ended with [DONE]
    body_head: bytes = b""  # the first bytes of a non-stream body
    json_body: bool | None = None  # a complete non-stream body parsed as JSON
    error: str = ""  # connect / connection / timeout
    _pending: bytes = field(default=b"", repr=False)
    _body: bytearray = field(default_factory=bytearray, repr=False)

    @property
    def kind(self) -> str:
        """``sse``, ``json``, ``other`` (neither: e.g. an HTML 500) or ``none`` (no reply)."""
        if not self.status:
            return "none"
        if self.content_type.startswith("text/event-stream"):
            return "sse"
        if self.content_type.startswith("application/json") and self.json_body is not False:
            return "json"
        return "other"

    @property
    def served(self) -> bool:
        return self.status == 200 and self.done


class _Exchange(ParsedResponses):
    def __init__(self, reply: Reply, finished: asyncio.Future) -> None:
        super().__init__()
        self.reply = reply
        self.finished = finished
        self.headers: dict[bytes, bytes] = {}

    def parse_error(self, exc: httptools.HttpParserError) -> None:
        self._finish(f"parse: {exc}")

    def connection_lost(self, exc) -> None:
        if self.reply.ended_at is None and self.reply.cut_at is None:
            self._finish("connection closed")

    def _finish(self, error: str = "") -> None:
        if self.reply.ended_at is None:
            self.reply.ended_at = time.time()
        if error and not self.reply.error:
            self.reply.error = error
        if not self.finished.done():
            self.finished.set_result(None)
        if self.transport is not None:
            self.transport.close()

    def cut_now(self) -> None:
        if self.reply.ended_at is None and self.reply.cut_at is None:
            self.reply.cut_at = time.time()
            self._finish()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.lower()] = value

    def on_headers_complete(self) -> None:
        reply = self.reply
        reply.status = self.parser.get_status_code()
        reply.headers_at = time.time()
        reply.content_type = self.headers.get(b"content-type", b"").decode("latin-1")
        reply.generation_id = self.headers.get(b"x-generation-id", b"").decode("latin-1")
        reply.retry_after = self.headers.get(b"retry-after", b"").decode("latin-1")
        cut = reply.cut
        if cut is not None and cut.after_headers_s is not None:
            asyncio.get_running_loop().call_later(cut.after_headers_s, self._cut_if_no_token)

    def _cut_if_no_token(self) -> None:
        if self.reply.tokens == 0:
            self.cut_now()

    def on_body(self, body: bytes) -> None:
        reply = self.reply
        if not reply.content_type.startswith("text/event-stream"):
            reply._body += body
            return
        events = (reply._pending + body).split(b"\n\n")
        reply._pending = events.pop()
        for event in events:
            if TOKEN.search(event):
                reply.tokens += 1
                if reply.first_token_at is None:
                    reply.first_token_at = time.time()
            elif event.startswith(DONE):
                reply.done = True
        cut = reply.cut
        if cut is not None and cut.tokens is not None and reply.tokens >= cut.tokens:
            self.cut_now()

    def on_message_complete(self) -> None:
        reply = self.reply
        if reply._body:
            reply.body_head = bytes(reply._body[:120])
            try:
                orjson.loads(reply._body)
                reply.json_body = True
            except orjson.JSONDecodeError:
                reply.json_body = False
            reply._body = bytearray()
        self._finish()


def encode_request(url: str, body: bytes, api_key: str) -> bytes:
    parts = urlsplit(url)
    head = [
        f"POST {parts.path} HTTP/1.1",
        f"Host: {parts.hostname}:{parts.port}",
        "Content-Type: application/json",
        "Accept: text/event-stream",
        f"Authorization: Bearer {api_key}",
        "Connection: close",
        f"Content-Length: {len(body)}",
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def connect(url: str, reply: Reply) -> tuple[_Exchange, asyncio.Future] | None:
    """Open the request's own connection; None (and ``reply.error``) if it failed."""
    loop = asyncio.get_running_loop()
    finished = loop.create_future()
    parts = urlsplit(url)
    try:
        _, exchange = await loop.create_connection(
            lambda: _Exchange(reply, finished), parts.hostname, parts.port
        )
    except OSError as exc:
        reply.error = f"connect: {exc.__class__.__name__}"
        return None
    return exchange, finished


async def exchange(
    connected: tuple[_Exchange, asyncio.Future], reply: Reply, request: bytes, limit_s: float
) -> Reply:
    """Send ``request`` on an open connection and wait for the end, the cut or ``limit_s``."""
    protocol, finished = connected
    reply.sent_at = time.time()
    protocol.transport.write(request)
    cut = reply.cut
    deadline = limit_s
    if cut is not None and cut.delay_s is not None:
        try:
            await asyncio.wait_for(asyncio.shield(finished), cut.delay_s)
            return reply
        except TimeoutError:
            protocol.cut_now()
            return reply
    try:
        await asyncio.wait_for(finished, deadline)
    except TimeoutError:
        reply.error = "timeout"
        protocol._finish("timeout")
    return reply


async def request(url: str, body: bytes, api_key: str, reply: Reply, limit_s: float) -> Reply:
    """One request on its own connection (see ``Reply``)."""
    connected = await connect(url, reply)
    if connected is None:
        return reply
    return await exchange(connected, reply, encode_request(url, body, api_key), limit_s)
