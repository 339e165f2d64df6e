"""The upstream client's read timeout on an SSE stream (providers.upstream): a stream
that goes quiet for ``sock_read`` seconds fails as a timeout, and one whose events keep
coming (each gap shorter than that, the whole stream longer) does not."""

import asyncio

import pytest
from django.conf import settings

from providers.upstream import UpstreamCall, UpstreamError, close_client, open_stream

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def serve(gaps: list[float]) -> tuple[asyncio.Server, str]:
    """An upstream that answers headers, then one event after each gap (seconds)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(HEAD)
        for n, gap in enumerate(gaps):
            await asyncio.sleep(gap)
            writer.write(chunk(b'data: {"n": %d}\n\n' % n))
        await asyncio.sleep(10)  # then silence
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions"


@pytest.fixture
def read_timeout_s():
    conf = settings.UBERLLM
    saved = conf["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"], conf["UPSTREAM_IDLE_TIMEOUT_S"]
    conf["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"] = conf["UPSTREAM_IDLE_TIMEOUT_S"] = 0.4
    yield 0.4
    conf["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"], conf["UPSTREAM_IDLE_TIMEOUT_S"] = saved


async def test_a_stream_quiet_for_the_read_timeout_fails_as_a_timeout(read_timeout_s):
    # Six events 0.15 s apart (0.9 s in all, over twice the timeout), then silence.
    server, url = await serve([0.0] + [0.15] * 5)
    try:
        stream = await open_stream(UpstreamCall(url, b"{}", None))
        received = []
        loop = asyncio.get_running_loop()
        with pytest.raises(UpstreamError) as failed:
            while (events := await stream.next_events()) is not None:
                received += events
                last = loop.time()
        quiet = loop.time() - last
        await stream.aclose()
        assert failed.value.kind == "timeout"
        assert len(received) == 6
        assert read_timeout_s - 0.05 <= quiet < read_timeout_s + 0.5
    finally:
        server.close()
        await close_client()


async def test_the_read_timeout_is_set_again_for_the_next_request(read_timeout_s):
    """The pooled connection's next response is bounded by aiohttp's own timeout again."""
    server, url = await serve([0.0])
    try:
        for _ in range(2):
            stream = await open_stream(UpstreamCall(url, b"{}", None))
            assert await stream.next_events() == [b'{"n": 0}']
            with pytest.raises(UpstreamError):
                await stream.next_events()
            await stream.aclose()
    finally:
        server.close()
        await close_client()


async def test_bytes_received_but_not_read_yet_are_no_idle_time(read_timeout_s):
    """A slow reader (a slow client behind the relay) does not time out a stream whose
    provider keeps sending: as with aiohttp's own timer, receipt counts."""
    server, url = await serve([0.0] + [0.1] * 9)  # ten events over 0.9 s
    try:
        stream = await open_stream(UpstreamCall(url, b"{}", None))
        received = list(await stream.next_events())
        await asyncio.sleep(2 * read_timeout_s)  # not reading, while events arrive
        while len(received) < 10:
            received += await stream.next_events()
        await stream.aclose()
        assert received == [b'{"n": %d}' % n for n in range(10)]
    finally:
        server.close()
        await close_client()
