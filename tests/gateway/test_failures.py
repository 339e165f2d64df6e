"""Failures before the first byte are retried elsewhere (R4); after it, an error chunk."""

import httpx
import orjson
import pytest

from ..support import TEST_MODEL, stream_chat, wait_finished_rows, wait_learnt
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}]}


def _stream_events(gateway, key, body) -> tuple[int, list[str]]:
    events = []
    with stream_chat(gateway.api_url, key, {**body, "stream": True}, timeout=10) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
        return response.status_code, events


def test_upstream_error_retried_on_next_endpoint(client, emulator):
    emulator.control("alpha", error_rate=1.0)
    reply = client.chat.completions.create(model=TEST_MODEL, messages=BODY["messages"])
    assert reply.model_extra["provider"] == "bravo"
    row = wait_finished(reply.id)
    attempts = list(row.attempts.values_list("provider_slug", "outcome", "http_status"))
    assert attempts == [("alpha", "http_error", 500), ("bravo", "success", None)]
    assert row.attempt_count == 2 and row.provider_slug == "bravo"


def test_429_retried_and_endpoint_skipped_afterwards(client, emulator):
    emulator.control("alpha", status_override=429)
    first = client.chat.completions.create(model=TEST_MODEL, messages=BODY["messages"])
    assert first.model_extra["provider"] == "bravo"
    second = client.chat.completions.create(model=TEST_MODEL, messages=BODY["messages"])
    assert second.model_extra["provider"] == "bravo"
    # alpha was marked unusable after the 429, so the second call did not try it.
    assert len(emulator.log("alpha")) == 1
    assert wait_finished(second.id).attempt_count == 1


def test_every_attempt_fails_returns_last_error_and_costs_nothing(gateway, tenant, emulator):
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, status_override=503)
    status, events = _stream_events(gateway, tenant.key, BODY)
    assert status == 503 and events == []  # overloaded, not broken: a 503 (it was 502)
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json=BODY,
        headers={"Authorization": f"Bearer {tenant.key}"},
    )
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == "upstream_overloaded"
    assert "3 upstream attempt" in response.json()["error"]["message"]
    # The Messages API answers it as Anthropic does (found with the anthropic SDK).
    messages = httpx.post(
        f"{gateway.api_url}/messages",
        headers={"x-api-key": tenant.key},
        json={"model": TEST_MODEL, "max_tokens": 5, "messages": BODY["messages"]},
    )
    assert messages.status_code == 529
    assert messages.json()["error"]["type"] == "overloaded_error"
    assert response.headers["x-generation-id"].startswith("gen-")  # the failed call's record
    rows = wait_finished_rows(3)
    assert len(rows) == 3
    assert all(r.status == "error" and r.cost_usd == 0 for r in rows)
    # When every endpoint is marked unusable they are still tried, as a last resort.
    assert [r.attempt_count for r in rows] == [3, 3, 3]


def test_cut_stream_ends_with_error_chunk_not_done(gateway, tenant, emulator):
    emulator.control("alpha", fail_after_tokens=3, default_output_tokens=20)
    status, events = _stream_events(gateway, tenant.key, BODY)
    assert status == 200
    assert events[-1] != "[DONE]"
    last = orjson.loads(events[-1])
    assert last["error"]["message"]
    assert last["choices"][0]["finish_reason"] == "error"
    # OpenAI's chunk type requires `created` (the SDK read None; found with the SDK).
    assert abs(last["created"] - orjson.loads(events[0])["created"]) <= 2
    row = wait_finished(last["id"])
    assert row.status == "error" and row.provider_slug == "alpha"
    assert row.attempts.get().outcome == "cut"
    # Served tokens were delivered and are billed, marked as an estimate.
    assert row.usage_estimated and row.completion_tokens == 3 and row.cost_usd > 0


def test_a_gateway_bug_while_serving_answers_visibly_and_finishes_the_row(
    gateway, tenant, emulator, monkeypatch
):
    """Round 21: the leg that has the first token serves it from its own task
    (``LiveCall._first``). A bug met there still ends the stream with an error chunk and
    the row with a 500, as when the call's own task served it."""
    from routing.gateway import call

    def broken(chunks):
        raise RuntimeError("a bug in the relay")

    monkeypatch.setattr(call, "encode_all", broken)
    status, events = _stream_events(gateway, tenant.key, BODY)
    assert status == 200  # the stream had started: the error comes as its last chunk
    last = orjson.loads(events[-1])
    assert last["choices"][0]["finish_reason"] == "error"
    row = wait_finished(last["id"])
    assert (row.status, row.http_status) == ("error", 500)
    assert row.error_message == "gateway error: RuntimeError"


def test_the_leg_that_has_the_first_token_serves_it_from_its_own_task(
    gateway, tenant, emulator, monkeypatch
):
    """Round 21: when the call's task waits with nothing queued, the leg that read the
    first token relays it itself (one task hop less: docs/benchmarks.md, round 21)."""
    import asyncio

    from routing.gateway import call

    relayed_from: list[str] = []
    relay = call.LiveCall._relay

    async def watched_relay(self, leg, attempt):
        task = asyncio.current_task()
        relayed_from.append("leg" if task is self.tasks.get(leg.no) else "call")
        return await relay(self, leg, attempt)

    monkeypatch.setattr(call.LiveCall, "_relay", watched_relay)
    status, events = _stream_events(gateway, tenant.key, BODY)
    assert status == 200 and events[-1] == "[DONE]"
    assert relayed_from == ["leg"]
    assert wait_finished(orjson.loads(events[0])["id"]).status == "success"


def test_a_provider_that_cuts_every_stream_loses_the_traffic(gateway, tenant, emulator):
    """Issue 10: a provider cutting every stream after 3 tokens was never demoted (only
    failures before the first token marked) and its cut calls gave healthy TTFT samples.
    A cut counts as a failure (``Router.on_cut``), with few calls one marks the endpoint,
    and no cut call teaches a speed."""
    from routing.models import SpeedSample

    emulator.control("alpha", fail_after_tokens=3, default_output_tokens=20)
    served = []
    for _ in range(4):
        _, events = _stream_events(gateway, tenant.key, BODY)
        served.append(orjson.loads(events[0])["provider"])
    assert served[0] == "alpha"  # the cheapest, not yet known to cut
    assert served[1:] == ["bravo"] * 3  # marked after its cut: the next streams go on
    wait_finished_rows(4)
    wait_learnt()  # the speed samples are written beside the calls
    assert not SpeedSample.objects.filter(endpoint__provider__slug="alpha").exists()
    assert SpeedSample.objects.filter(endpoint__provider__slug="bravo").count() == 3
