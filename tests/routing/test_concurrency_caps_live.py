"""Learnt concurrency caps (O3, issue 10) live: the emulator's ``concurrency_cap`` fault
refuses a second call at alpha with a 429; the gateway learns alpha's cap from it and,
while its own call still holds alpha's slot, sends the next request elsewhere without
asking alpha first (no second 429); once the slot is free, alpha (cheapest) is back."""

import threading
import time

import pytest
from django.conf import settings

from routing.memory import memory

from .test_smart_live import SHORT, _served, fresh

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def caps_on():
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(ROUTING_CONCURRENCY_CAPS=True, EXPLORATION_RATE=0.0)
    yield conf
    conf.clear()
    conf.update(saved)


def _refusals(emulator) -> int:
    return sum(r["http_status"] == 429 for r in emulator.log("alpha"))


def _holder(gateway, tenant, out: dict) -> threading.Thread:
    """A request in a thread of its own, with a client of its own (alpha's one slot)."""
    from openai import OpenAI

    def run() -> None:
        with OpenAI(base_url=gateway.api_url, api_key=tenant.key, max_retries=0) as own:
            out["slug"] = _served(own, fresh(SHORT))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_a_429_teaches_a_cap_and_traffic_spills_over_before_the_next_refusal(
    client, gateway, tenant, emulator, market, caps_on
):
    alpha = market["alpha"].id
    # volume first: among many successes one 429 does not mark alpha unusable (R2.7 by
    # rate), so what moves the next request is the cap, not a mark
    for _ in range(12):
        assert _served(client, fresh(SHORT)) == "alpha"
    emulator.control("alpha", concurrency_cap=1, ttft_base_s=3)  # one slot, held ~3 s
    first: dict[str, str] = {}
    holder = _holder(gateway, tenant, first)
    _wait(lambda: memory.knowledge.inflight[alpha] == 1)
    # alpha refuses one more (429): retried elsewhere, and the cap is learnt
    assert _served(client, fresh(SHORT)) != "alpha"
    assert _refusals(emulator) == 1
    assert memory.knowledge.caps.cap(alpha, time.time()) == pytest.approx(1.0, abs=0.1)
    # not marked: the cap decides
    assert alpha not in memory.knowledge.marks.unusable_ids(time.time())
    # alpha still busy with our call: the next request goes elsewhere at once
    assert _served(client, fresh(SHORT)) != "alpha"
    assert _refusals(emulator) == 1
    holder.join(timeout=30)
    assert first["slug"] == "alpha"
    assert memory.knowledge.inflight[alpha] == 0
    emulator.control("alpha", ttft_base_s=0)
    assert _served(client, fresh(SHORT)) == "alpha"  # the slot is free: cheapest again
    assert _refusals(emulator) == 1


@pytest.fixture
def caps_off():
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(ROUTING_CONCURRENCY_CAPS=False)  # on by default (issue 43)
    yield conf
    conf.clear()
    conf.update(saved)


def test_without_the_setting_nothing_is_learnt(client, gateway, tenant, emulator, market, caps_off):
    alpha = market["alpha"].id
    emulator.control("alpha", concurrency_cap=1, ttft_base_s=2)
    holder = _holder(gateway, tenant, {})
    _wait(lambda: memory.knowledge.inflight[alpha] == 1)
    assert _served(client, fresh(SHORT)) != "alpha"  # refused, retried elsewhere
    holder.join(timeout=30)
    assert memory.knowledge.caps.cap(alpha, time.time()) is None
    assert memory.knowledge.inflight[alpha] == 0


def test_a_provider_that_sheds_load_keeps_its_share_up_to_its_cap(
    client, gateway, tenant, emulator, market, caps_on
):
    """Issue 43, caps on by default: alpha (cheapest) takes 2 calls at once and 429s
    above; of 4 concurrent requests, twice in a row, it serves 2 each time, is never
    marked, and the second round meets no new 429 (the cap spills the rest)."""
    alpha = market["alpha"].id
    for _ in range(12):  # volume first, as a busy provider has
        assert _served(client, fresh(SHORT)) == "alpha"
    emulator.control("alpha", concurrency_cap=2, ttft_base_s=2)
    for round_no in range(2):
        outs: list[dict[str, str]] = [{} for _ in range(4)]
        threads = []
        for out in outs:
            threads.append(_holder(gateway, tenant, out))
            time.sleep(0.15)
        for thread in threads:
            thread.join(timeout=30)
        assert sum(out["slug"] == "alpha" for out in outs) == 2, round_no
        assert alpha not in memory.knowledge.marks.unusable_ids(time.time())
        if round_no == 0:
            refusals = _refusals(emulator)
            assert 1 <= refusals <= 2
    assert _refusals(emulator) == refusals  # round 2: the cap spilled, no new 429


def test_calls_in_flight_are_counted_down_when_the_client_goes_away(
    gateway, tenant, market, emulator
):
    """The in-flight count behind the caps never leaks: a stream the client abandons
    mid-way, a served call and a hedge-free refusal all end at 0."""
    from tests.gateway.test_disconnect import _raw_request, _read_until

    from ..support import TEST_MODEL

    alpha = market["alpha"].id
    emulator.control("alpha", output_tokens_per_s=10, default_output_tokens=200)
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    sock = _raw_request(gateway, tenant.key, body)
    _read_until(sock, b'"content":"')
    assert memory.knowledge.inflight[alpha] == 1
    sock.close()
    _wait(lambda: memory.knowledge.inflight[alpha] == 0)
