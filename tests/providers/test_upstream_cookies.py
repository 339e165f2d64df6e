"""The upstream client keeps no cookies (providers.upstream): a provider's Set-Cookie
on one tenant's call must not come back on the next call, whoever makes it."""

import asyncio

from providers.upstream import UpstreamCall, close_client, open_stream

REPLY = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"set-cookie: session=tenant-a; Path=/\r\ncontent-length: %d\r\n\r\n%s"
)
BODY = b'data: {"choices": []}\n\ndata: [DONE]\n\n'


async def serve(heads: list[bytes]) -> tuple[asyncio.Server, str]:
    """An upstream that records each request's head and sets a cookie on every reply."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            heads.append(head.lower())
            writer.write(REPLY % (len(BODY), BODY))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    # A host name, not an IP literal: a cookie jar keeps cookies of names only.
    return server, f"http://localhost:{port}/v1/chat/completions"


async def test_a_provider_cookie_is_never_sent_back():
    heads: list[bytes] = []
    server, url = await serve(heads)
    try:
        for _ in range(2):
            stream = await open_stream(UpstreamCall(url, b"{}", None))
            while await stream.next_events() is not None:
                pass
            await stream.aclose()
    finally:
        await close_client()
        server.close()
    assert len(heads) == 2
    assert all(b"\r\ncookie:" not in head for head in heads)
