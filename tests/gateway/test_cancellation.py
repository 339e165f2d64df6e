"""Cancellation safety of the chat path: the client disconnects at every await point of
a request, from the body read to the relay, and in every case the upstream connection is
closed, the row (if the request was accepted) says cancelled, and nothing is left
pending or written twice.

The ASGI app is driven directly (real emulator upstream over loopback, real database):
the disconnect is delivered after the app has yielded to the event loop ``k`` times,
for a spread of ``k`` that lands it at each await of the path in turn."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import orjson
import pytest
from asgiref.sync import async_to_sync

from billing.models import Activity

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)

YIELDS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 13, 17, 22, 30, 40, 55, 75, 100, 140, 200, 300, 500]
HELLO = orjson.dumps(
    {"model": TEST_MODEL, "stream": True, "messages": [{"role": "user", "content": "hello"}]}
)


def _scope(key: str, length: int) -> dict:
    return {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/chat/completions",
        "headers": [
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(length).encode()),
        ],
    }


async def _call_with_disconnect(key: str, body: bytes, yields: int) -> list[dict]:
    """Run one request; ``http.disconnect`` arrives after ``yields`` loop turns (the
    body in two parts first, so the body read itself has awaits)."""
    from routing.gateway.asgi import ChatApp

    parts = [body[: len(body) // 2], body[len(body) // 2 :]]
    sent: list[dict] = []
    turns = 0

    async def receive() -> dict:
        nonlocal turns
        if parts:
            part = parts.pop(0)
            return {"type": "http.request", "body": part, "more_body": bool(parts)}
        while turns < yields:
            turns += 1
            await asyncio.sleep(0)
        await asyncio.sleep(0.002 * max(0, yields - 200))  # the slow tail: real time
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    await ChatApp()(_scope(key, len(body)), receive, send)
    return sent


def _receive_then_leave(body: bytes, leave: asyncio.Event) -> Callable[[], Awaitable[dict]]:
    """An ASGI ``receive``: ``body`` in one message, then ``http.disconnect`` once ``leave``
    is set."""
    parts = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if parts:
            return parts.pop()
        await leave.wait()
        return {"type": "http.disconnect"}

    return receive


@pytest.mark.parametrize("stream", [True, False])
def test_disconnect_at_every_await_point(gateway_server, tenant, emulator, stream):
    # Slow enough that no call can finish before its disconnect arrives.
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, output_tokens_per_s=20, default_output_tokens=400)
    body = orjson.dumps(
        {
            "model": TEST_MODEL,
            "stream": stream,
            "messages": [{"role": "user", "content": "hello " * 50}],
        }
    )

    async def every_point() -> None:
        from common.aio import background_idle

        for yields in YIELDS:
            sent = await _call_with_disconnect(tenant.key, body, yields)
            statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
            assert statuses in ([], [200]), (yields, sent)
        while not background_idle():  # noqa: ASYNC110 - the ledger writer runs on this loop
            await asyncio.sleep(0.01)

    async_to_sync(every_point)()
    rows = list(Activity.unscoped_objects.all())
    assert all(r.status == Activity.Status.CANCELLED for r in rows), [
        (r.status, r.error_message) for r in rows
    ]
    assert len({r.request_id for r in rows}) == len(rows) <= len(YIELDS)
    # Every upstream request the gateway made was closed before its reply ended.
    records = emulator.log()
    assert records, "no disconnect landed after an upstream call started"
    for record in records:
        final = emulator.wait_for(
            lambda r, rid=record["id"]: r["id"] == rid and r["status"] != "in_progress", timeout=3
        )
        assert final["status"] == "cancelled", final


def test_disconnect_while_the_key_is_read_never_reaches_the_provider(
    gateway_server, tenant, emulator
):
    """A burst of new keys queues their database reads (at most MAX_UNKNOWN_LOOKUPS in
    flight per process): a client that leaves while its read waits is cancelled there,
    with no upstream call and no row, and its key is still cached by the read."""
    from billing import auth

    async def run() -> tuple[list[dict], bool, bool]:
        from routing.gateway.asgi import ChatApp

        auth._cache.clear()
        auth._unknown.clear()
        slots = auth._lookup_slots()
        for _ in range(auth.MAX_UNKNOWN_LOOKUPS):  # every read slot taken by others
            await slots.acquire()
        sent: list[dict] = []
        left = asyncio.Event()

        async def send(message: dict) -> None:
            sent.append(message)

        receive = _receive_then_leave(HELLO, left)
        call = asyncio.ensure_future(ChatApp()(_scope(tenant.key, len(HELLO)), receive, send))
        await asyncio.sleep(0.2)
        assert not call.done()  # waiting for its key's read
        left.set()
        await asyncio.wait({call}, timeout=5)
        ended_while_waiting = call.done()  # the disconnect ended it, reads still blocked
        for _ in range(auth.MAX_UNKNOWN_LOOKUPS):
            slots.release()
        for _ in range(200):  # the shielded read goes on and fills the cache
            if auth._cache:
                break
            await asyncio.sleep(0.01)
        await call
        return sent, bool(auth._cache), ended_while_waiting

    sent, cached, ended_while_waiting = async_to_sync(run)()
    assert ended_while_waiting
    assert sent == []  # nobody left to answer
    assert cached
    assert emulator.log() == []
    assert not Activity.unscoped_objects.exists()


def test_a_disconnect_closes_the_upstream_before_the_call_unwinds(
    gateway_server, tenant, emulator, monkeypatch
):
    """The watcher closes the serving leg's upstream connection synchronously, before it
    cancels the call; the attempt is recorded cancelled, not as the provider's failure."""
    from billing.models import Attempt
    from routing.gateway.call import LiveCall

    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, output_tokens_per_s=20, default_output_tokens=400)
    closed_at_abort: list[bool] = []
    abort = LiveCall.abort_upstreams

    def watched_abort(call) -> None:
        abort(call)
        closed_at_abort.extend(
            leg.data.stream._response.closed
            for leg in call.session.legs
            if leg.data is not None and leg.data.stream is not None
        )

    monkeypatch.setattr(LiveCall, "abort_upstreams", watched_abort)

    async def run() -> None:
        from common.aio import background_idle
        from routing.gateway.asgi import ChatApp

        tokens = asyncio.Event()

        async def send(message: dict) -> None:
            if b'"content"' in message.get("body", b""):
                tokens.set()

        receive = _receive_then_leave(HELLO, tokens)
        await ChatApp()(_scope(tenant.key, len(HELLO)), receive, send)
        while not background_idle():  # noqa: ASYNC110 - the ledger writer runs on this loop
            await asyncio.sleep(0.01)

    async_to_sync(run)()
    assert closed_at_abort == [True]  # closed before the cancellation reached the call
    [record] = emulator.log()
    final = emulator.wait_for(lambda r: r["id"] == record["id"] and r["status"] != "in_progress")
    assert final["status"] == "cancelled"
    row = Activity.unscoped_objects.get()
    assert row.status == Activity.Status.CANCELLED
    assert list(Attempt.unscoped_objects.values_list("outcome", flat=True)) == ["cancelled"]
