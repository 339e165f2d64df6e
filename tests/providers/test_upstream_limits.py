"""A provider cannot grow the gateway's memory without bound: an SSE event that never
ends (no blank line) or a whole reply beyond the limit fails the attempt as a protocol
error (retried elsewhere) once the limit is passed; events up to it pass whole."""

import asyncio

import pytest

from providers import upstream
from providers.upstream import UpstreamCall, UpstreamError, close_client, open_stream

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)
JSON_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
)
LIMIT = 256 * 1024


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def serve(head: bytes, pieces: list[bytes]) -> tuple[asyncio.Server, str, list[int]]:
    """An upstream that answers ``head`` then ``pieces`` (each one chunk), then waits;
    returns how many bytes it managed to send before the gateway hung up."""
    sent = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head)
        try:
            for piece in pieces:
                writer.write(chunk(piece))
                await writer.drain()
                sent[0] += len(piece)
            await asyncio.sleep(10)
        except (ConnectionError, OSError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions", sent


@pytest.fixture
def small_limits(monkeypatch):
    monkeypatch.setattr(upstream, "MAX_EVENT_BYTES", LIMIT)
    monkeypatch.setattr(upstream, "MAX_REPLY_BYTES", LIMIT)


async def test_an_event_that_never_ends_fails_the_attempt(small_limits):
    endless = [b"data: " + b"x" * 16_000] + [b"x" * 16_000] * 2_000  # 32 MB, no blank line
    server, url, sent = await serve(SSE_HEAD, endless)
    try:
        stream = await open_stream(UpstreamCall(url, b"{}", None))
        with pytest.raises(UpstreamError) as failed:
            while await stream.next_events() is not None:
                pass
        await stream.aclose()
        assert failed.value.kind == "protocol" and "larger than" in failed.value.message
        await asyncio.sleep(0.1)
        assert sent[0] < 16_000_000  # it stopped reading (the rest: socket buffers)
    finally:
        server.close()
        await close_client()


async def test_an_event_up_to_the_limit_passes_whole(small_limits):
    big = b"data: " + b"y" * (LIMIT - 100) + b"\n\n"
    server, url, _ = await serve(SSE_HEAD, [big[: LIMIT // 2], big[LIMIT // 2 :]])
    try:
        stream = await open_stream(UpstreamCall(url, b"{}", None))
        events = await stream.next_events()
        await stream.aclose()
        assert events == [b"y" * (LIMIT - 100)]
    finally:
        server.close()
        await close_client()


async def test_a_whole_reply_beyond_the_limit_fails_the_attempt(small_limits):
    """An upstream of another wire format that answers one JSON body, not a stream."""
    server, url, _ = await serve(JSON_HEAD, [b'{"content": "' + b"z" * 16_000] * 40)
    try:
        call = UpstreamCall(url, b"{}", None, protocol="anthropic_messages")
        stream = await open_stream(call)
        with pytest.raises(UpstreamError) as failed:
            await stream.next_events()
        await stream.aclose()
        assert failed.value.kind == "protocol" and "larger than" in failed.value.message
    finally:
        server.close()
        await close_client()
