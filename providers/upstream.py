"""The upstream client: one pooled ``aiohttp`` session per event loop.

aiohttp parses HTTP with its C extension (llhttp): measured here at 4.8 ms less CPU
per paced 50-chunk stream than httpx (docs/benchmarks.md), and the upstream call is the
gateway's hottest loop. httpx stays where a pure-Python client serves (admin tools,
tests).

``open_stream`` sends a streaming chat request and returns once the provider answered
with HTTP 200; reading the first event is bounded by the caller's first-token timeout,
later events by the idle timeout. Streams are always closed in ``finally``: a cancelled
caller leaves no connection behind, and the provider sees the disconnect at once (the
connection is closed, not returned to the pool); a stream that ended with ``[DONE]`` is
read to its end first, so its connection goes back to the pool.

SSE is split at the byte level (``SSESplitter``): one pass over each network read, and
every event that arrived in one read comes out together (``next_events``), so the relay
writes them to the client at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp

from providers.config import providers_config
from providers.netguard import guarded_connector

from . import protocols
from .redact import redact
from .refusals import Refusal, read_refusal

_sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
DONE = b"[DONE]"
# After [DONE], how long to wait for the end of the response body (normally already
# received) before closing the connection instead of returning it to the pool.
DRAIN_AFTER_DONE_S = 0.5
KEEPALIVE_S = 4.0
# A provider's stream or reply that exceeds these is refused as a protocol error (the
# attempt fails and is retried elsewhere) instead of growing this process's memory without
# bound. Generous: an event carrying an image as a data URL is a few MB.
MAX_EVENT_BYTES = 8 * 1024 * 1024
MAX_REPLY_BYTES = 64 * 1024 * 1024


class UpstreamError(Exception):
    """A failed upstream call. ``kind``: http, connect, timeout, protocol. A refused
    answer (``kind`` http) carries what the provider said beyond its status
    (``refusal``: its error code, ``Retry-After`` and rate-limit headers read,
    ``providers.refusals``)."""

    def __init__(
        self, kind: str, message: str, status: int | None = None, refusal: Refusal | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.refusal = refusal

    @property
    def retry_after_s(self) -> float | None:
        """When the provider said to try it again (seconds), if it said."""
        return self.refusal.retry_after_s if self.refusal is not None else None


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    url: str
    body: bytes = field(repr=False)
    authorization: str | None = field(repr=False)  # a secret: never in a repr or log
    protocol: str = "openai_chat"  # the upstream's wire format (providers/protocols)


def _new_session() -> aiohttp.ClientSession:
    conf = providers_config()
    # Every resolved address and every socket opened is checked against the egress rules
    # (DNS rebinding, IP-literal URLs): providers/netguard.py, docs/security.md.
    connector = guarded_connector(
        limit=conf.upstream_max_connections,
        limit_per_host=0,
        ttl_dns_cache=60,
        enable_cleanup_closed=False,
        # Below the usual servers' keep-alive (uvicorn 5 s): an idle pooled connection is
        # dropped here before the provider drops it under a new request.
        keepalive_timeout=KEEPALIVE_S,
    )
    read = max(conf.upstream_first_token_timeout_s, conf.upstream_idle_timeout_s)
    timeout = aiohttp.ClientTimeout(
        total=None, sock_connect=conf.upstream_connect_timeout_s, sock_read=read
    )
    # No cookie jar: a provider's Set-Cookie must not follow one tenant's call into the
    # next one's (and filtering and storing cookies cost every request a little).
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        auto_decompress=False,
        trust_env=False,
        skip_auto_headers=("User-Agent",),
        raise_for_status=False,
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def _session() -> aiohttp.ClientSession:
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        session = _sessions[loop] = _new_session()
    return session


def _headers(call: UpstreamCall) -> dict[str, str]:
    return protocols.upstream_headers(call.protocol, call.authorization)


def _error_message(body: bytes, status: int, authorization: str | None) -> str:
    """What the customer and the ledger see of a refusal: the start of the provider's
    error body, without the credential (a provider may echo it: providers/redact.py)."""
    text = redact(body[:500].decode("utf-8", "replace").strip(), authorization)
    return f"upstream HTTP {status}: {text}" if text else f"upstream HTTP {status}"


def _wrap(exc: BaseException) -> UpstreamError:
    if isinstance(exc, UpstreamError):
        return exc
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientConnectorDNSError):
        return UpstreamError("connect", f"cannot connect to upstream: {exc.__class__.__name__}")
    if isinstance(exc, asyncio.TimeoutError | TimeoutError | aiohttp.ServerTimeoutError):
        return UpstreamError("timeout", "upstream timed out")
    return UpstreamError("protocol", f"upstream failed: {exc.__class__.__name__}")


class SSESplitter:
    """Splits an SSE byte stream into the data of its events, per the WHATWG rules:
    lines end in LF, CRLF or CR; a blank line ends an event; its ``data`` lines are
    joined with LF; comments (``:``) and other fields are skipped; an event without data
    is not dispatched; an unfinished event at the end of the stream is dropped."""

    __slots__ = ("_buffer", "_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._cr = False  # the last read ended in CR: maybe the first half of a CRLF

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event completed by ``chunk``, in order."""
        if (
            not self._buffer
            and chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.find(b"\n") == len(chunk) - 2
            and not self._cr
            and b"\r" not in chunk
        ):
            # A read of one whole one-line event, as a paced stream's reads are: its data
            # without the general path's split and lists.
            return [chunk[6:-2]]
        if self._cr or b"\r" in chunk:
            if self._cr:
                chunk, self._cr = b"\r" + chunk, False
            if chunk.endswith(b"\r"):
                chunk, self._cr = chunk[:-1], True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        blocks = (self._buffer + chunk if self._buffer else chunk).split(b"\n\n")
        self._buffer = blocks.pop()
        if len(self._buffer) > MAX_EVENT_BYTES:
            raise UpstreamError("protocol", f"upstream event larger than {MAX_EVENT_BYTES} bytes")
        events = []
        for block in blocks:
            if block.startswith(b"data: ") and b"\n" not in block:  # the usual one-liner
                events.append(block[6:])
                continue
            data = []
            for line in block.split(b"\n"):
                name, _, value = line.partition(b":")
                if name == b"data":
                    data.append(value[1:] if value.startswith(b" ") else value)
            if data:
                events.append(b"\n".join(data))
        return events

    def flush(self) -> list[bytes]:
        """At the end of the stream: a CR held back ends its line after all."""
        if not self._cr:
            return []
        self._cr = False
        return self.feed(b"\n")


class UpstreamStream:
    """An open SSE stream: ``next_events()`` (or ``next_data()``) until None; always
    ``aclose()``.

    Events come out as OpenAI chat chunks whatever the upstream speaks: with a
    ``reader`` (an upstream of another protocol, ``providers.protocols``) each event is
    translated, and a whole JSON reply (an upstream that did not stream) is read as the
    chunks a stream of it would give."""

    __slots__ = (
        "_idle",
        "_idle_s",
        "_last_read",
        "_loop",
        "_reader",
        "_ready",
        "_response",
        "_seen",
        "_splitter",
        "saw_done",
    )

    def __init__(self, response: aiohttp.ClientResponse, reader=None) -> None:
        self._response = response
        self._splitter = SSESplitter()
        self._ready: list[bytes] = []
        self._reader = reader
        self.saw_done = False
        self._idle: asyncio.TimerHandle | None = None
        self._idle_s: float | None = None
        self._loop = asyncio.get_running_loop()
        self._last_read = self._loop.time()
        if reader is None:
            self._watch_idle()

    def _watch_idle(self) -> None:
        """The socket read timeout (``sock_read``) of an SSE stream, kept here with one
        timer re-armed once per timeout period instead of aiohttp's, which cancels and
        re-creates a timer on every network read (~5 % of the relay's CPU at one event
        per read). Same bound: a read waiting ``sock_read`` seconds since the last data
        fails with aiohttp's ``SocketTimeoutError`` (an UpstreamError "timeout"). Bytes
        received but not read yet (the client is slow) count as activity, as in aiohttp,
        which resets its timer on receipt: such a stream times out ``sock_read`` to twice
        that after its last byte, never earlier."""
        connection = self._response.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is None or not protocol.read_timeout:
            return  # nothing left to read, or no timeout configured
        self._idle_s = protocol.read_timeout
        self._seen = self._response.content.total_bytes
        # The timer aiohttp armed at the headers stays until the next read cancels it.
        protocol.read_timeout = None
        self._idle = self._loop.call_at(self._last_read + self._idle_s, self._check_idle)

    def _check_idle(self) -> None:
        assert self._idle_s is not None
        now = self._loop.time()
        received = self._response.content.total_bytes
        if received != self._seen:  # bytes came in that were not read yet (a slow client)
            self._seen, self._last_read = received, max(self._last_read, now)
        due = self._last_read + self._idle_s
        if now < due:
            self._idle = self._loop.call_at(due, self._check_idle)
            return
        self._idle = None
        self._response.content.set_exception(
            aiohttp.SocketTimeoutError("Timeout on reading data from socket")
        )

    def _translate(self, events: list[bytes]) -> list[bytes]:
        reader = self._reader
        return [chunk for data in events for chunk in reader.feed(data)]

    async def _whole_reply(self) -> list[bytes] | None:
        content, parts, size = self._response.content, [], 0
        try:
            while part := await content.read(1024 * 1024):
                size += len(part)
                if size > MAX_REPLY_BYTES:
                    raise UpstreamError(
                        "protocol", f"upstream reply larger than {MAX_REPLY_BYTES} bytes"
                    )
                parts.append(part)
        except Exception as exc:
            raise _wrap(exc) from exc
        body = b"".join(parts)
        events = self._reader.message(body) if body else []
        self.saw_done = True
        return events or None

    async def next_events(self) -> list[bytes] | None:
        """The data of the events received so far but not yet returned (at least one,
        waiting for the network if need be); None at the end of the stream."""
        if self._ready:
            ready, self._ready = self._ready, []
            return ready
        content = self._response.content
        if self._reader is not None and self._response.content_type == "application/json":
            if self.saw_done:
                return None
            return await self._whole_reply()
        while True:
            try:
                chunk = await content.readany()
            except Exception as exc:
                raise _wrap(exc) from exc
            self._last_read = self._loop.time()
            if not chunk:
                events = self._splitter.flush()
                if events and self._reader is not None:
                    events = self._translate(events)
                return events or None
            events = self._splitter.feed(chunk)
            if events and self._reader is not None:
                events = self._translate(events)
            if events:
                if DONE in events:
                    self.saw_done = True
                return events

    def push_back(self, events: list[bytes]) -> None:
        """Return unread events: the next ``next_events()`` starts with them."""
        self._ready = events + self._ready

    async def next_data(self) -> str | None:
        """The next event's data, or None at the end of the stream."""
        if not self._ready:
            events = await self.next_events()
            if events is None:
                return None
            self._ready = events
        return self._ready.pop(0).decode("utf-8", "replace")

    async def data(self) -> AsyncIterator[str]:
        while (data := await self.next_data()) is not None:
            yield data

    def abort(self) -> None:
        """Close the connection now, without waiting (the client is gone: the provider
        should see the disconnect before this loop gets round to the caller's cleanup)."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self._response.close()

    async def aclose(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        response = self._response
        if response.closed:
            return  # aborted
        if self.saw_done and not response.content.at_eof():
            # Read the end of the body (normally already here) so the connection goes
            # back to the pool instead of being closed.
            try:
                async with asyncio.timeout(DRAIN_AFTER_DONE_S):
                    while await response.content.readany():
                        pass
            except Exception:  # noqa: S110 - closing below is the fallback
                pass
        if self.saw_done and response.content.at_eof():
            response.release()
        else:
            response.close()  # the provider sees the disconnect now


async def open_stream(call: UpstreamCall) -> UpstreamStream:
    """POST a streaming request; raises ``UpstreamError`` unless the provider says 200."""
    for reused in (True, False):
        try:
            response = await _session().post(call.url, data=call.body, headers=_headers(call))
            break
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            # A pooled connection the provider had just closed (keep-alive race): the
            # request never reached it; once more on a fresh connection.
            if not reused:
                raise _wrap(exc) from exc
        except Exception as exc:
            raise _wrap(exc) from exc
    if response.status != 200:
        try:
            body = await response.content.read(4096)
        except Exception:
            body = b""
        finally:
            response.close()
        message = _error_message(body, response.status, call.authorization)
        refusal = read_refusal(response.status, response.headers, body)
        raise UpstreamError("http", message, response.status, refusal)
    return UpstreamStream(response, protocols.upstream_reader(call.protocol))


async def close_client() -> None:
    """Close this loop's pooled session (a short-lived loop, e.g. a Celery task's)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()
