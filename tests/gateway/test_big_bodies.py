"""A body over ``OFF_LOOP_BODY_BYTES`` does its per-message work (validation, token
estimate, prefix hashes) in the big-request thread (``routing.gateway.big``): the event
loop serves other calls meanwhile, a client who leaves meanwhile never reaches a provider,
and the results are the ones the inline path gives."""

from __future__ import annotations

import asyncio
import threading

import httpx
import orjson
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings

from billing.models import Activity

from ..support import TEST_MODEL
from .test_cancellation import _scope

pytestmark = pytest.mark.django_db(transaction=True)

# ~2,000 short turns, ~90 KB: over the default 64 KiB
MANY = [{"role": "user", "content": f"turn {i}"} for i in range(2000)]
SMALL = [{"role": "user", "content": "Say hello."}]


class HeldMeasure:
    """``measure_prompt`` that waits for ``release`` on a long conversation (and says where
    it ran), then does the real work."""

    def __init__(self, real) -> None:
        self.real = real
        self.entered = threading.Event()
        self.release = threading.Event()
        self.threads: list[str] = []

    def __call__(self, messages):
        self.threads.append(threading.current_thread().name)
        if len(messages) > 1000:
            self.entered.set()
            assert self.release.wait(20), "never released"
        return self.real(messages)


@pytest.fixture
def held(monkeypatch):
    from routing.gateway import accept

    spy = HeldMeasure(accept.measure_prompt)
    monkeypatch.setattr(accept, "measure_prompt", spy)
    yield spy
    spy.release.set()


def test_other_calls_are_served_while_a_big_body_is_measured(gateway, tenant, emulator, held):
    headers = {"Authorization": f"Bearer {tenant.key}"}
    url = f"{gateway.api_url}/chat/completions"
    big: dict = {}

    def send_big() -> None:
        big["response"] = httpx.post(
            url, headers=headers, timeout=30, json={"model": TEST_MODEL, "messages": MANY}
        )

    sender = threading.Thread(target=send_big)
    sender.start()
    assert held.entered.wait(10)
    # Inline, the loop would be stuck in the held measure and this call could not finish.
    small = httpx.post(
        url, headers=headers, timeout=10, json={"model": TEST_MODEL, "messages": SMALL}
    )
    assert small.status_code == 200 and "response" not in big
    held.release.set()
    sender.join(30)
    assert big["response"].status_code == 200
    assert held.threads[0].startswith("big-request")  # the big body's
    assert not held.threads[1].startswith("big-request")  # the small one's, inline


def test_a_client_gone_while_its_big_body_is_measured_reaches_no_provider(
    gateway_server, tenant, emulator, held
):
    body = orjson.dumps({"model": TEST_MODEL, "stream": True, "messages": MANY})
    assert len(body) > settings.UBERLLM["OFF_LOOP_BODY_BYTES"]

    async def run() -> list[dict]:
        from routing.gateway.asgi import ChatApp

        parts = [{"type": "http.request", "body": body, "more_body": False}]
        sent: list[dict] = []

        async def receive() -> dict:
            if parts:
                return parts.pop()
            while not held.entered.is_set():  # noqa: ASYNC110 - set from the lane's thread
                await asyncio.sleep(0.005)
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        await asyncio.wait_for(ChatApp()(_scope(tenant.key, len(body)), receive, send), 10)
        return sent

    sent = async_to_sync(run)()
    held.release.set()
    assert [m for m in sent if m["type"] == "http.response.start"] == []
    assert emulator.log() == []  # no upstream request was made
    assert not Activity.unscoped_objects.exists()


@pytest.mark.parametrize("path", ["/messages", "/messages/count_tokens"])
def test_the_messages_api_gives_the_same_answer_off_the_loop(
    gateway, tenant, emulator, monkeypatch, path
):
    body = {"model": TEST_MODEL, "max_tokens": 5, "messages": MANY}
    answers = []
    for limit in (10**9, 1024):  # inline, then off the loop
        monkeypatch.setitem(settings.UBERLLM, "OFF_LOOP_BODY_BYTES", limit)
        response = httpx.post(
            f"{gateway.api_url}{path}", headers={"x-api-key": tenant.key}, json=body, timeout=30
        )
        assert response.status_code == 200, response.text
        reply = response.json()
        usage = reply.get("usage", reply)  # count_tokens: {"input_tokens": n}
        # The whole prompt (the second call may be read from the provider's cache)
        answers.append(
            sum(
                usage.get(name, 0)
                for name in (
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                )
            )
        )
    assert answers[0] == answers[1] > len(MANY)
