"""The official openai client against the live gateway and the emulator over loopback."""

import time
from decimal import Decimal

import orjson
import pytest

from billing.models import Activity
from billing.pricing import call_cost

from ..support import TEST_MODEL, stream_chat

pytestmark = pytest.mark.django_db(transaction=True)
MESSAGES = [{"role": "user", "content": "Say hello in a few words."}]


def wait_finished(request_id: str, timeout: float = 5.0) -> Activity:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = Activity.unscoped_objects.filter(request_id=request_id).first()
        if row is not None and row.status != Activity.Status.PENDING:
            return row
        time.sleep(0.02)
    raise AssertionError(f"no finished Activity row for {request_id}")


def test_streaming_with_usage_and_cost(client, emulator):
    stream = client.chat.completions.create(
        model=TEST_MODEL, messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    final = chunks[-1]
    assert text.strip()
    assert final.choices == []
    assert final.usage.prompt_tokens > 0 and final.usage.completion_tokens == 8
    assert final.usage.prompt_tokens_details.cached_tokens == 0
    # Cheapest endpoint for this token mix (no speed data yet): alpha.
    assert {c.model_extra["provider"] for c in chunks} == {"alpha"}
    row = wait_finished(final.id)
    expected = call_cost(
        prices=row.prices_decimal(),
        prompt_tokens=final.usage.prompt_tokens,
        cached_tokens=0,
        completion_tokens=8,
    )
    assert row.cost_usd == expected
    assert Decimal(str(final.usage.model_extra["cost"])) == pytest.approx(expected)
    assert (row.status, row.provider_slug, row.stream, row.attempt_count) == (
        "success",
        "alpha",
        True,
        1,
    )
    assert row.ttft_ms is not None and row.total_ms >= row.ttft_ms
    assert (row.prompt_tokens, row.completion_tokens) == (final.usage.prompt_tokens, 8)


def test_non_streaming(client):
    reply = client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES, max_tokens=5)
    assert reply.choices[0].message.content
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 5
    assert reply.model_extra["provider"] == "alpha"
    assert reply.id.startswith("gen-")
    row = wait_finished(reply.id)
    assert (row.status, row.stream, row.completion_tokens) == ("success", False, 5)
    assert row.cost_usd > 0


def test_usage_chunk_stripped_when_not_asked(gateway, tenant, emulator):
    body = {"model": TEST_MODEL, "messages": MESSAGES, "stream": True}
    events = []
    with stream_chat(gateway.api_url, tenant.key, body, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
    assert events[-1] == "[DONE]"
    parsed = [orjson.loads(e) for e in events[:-1]]
    assert all("usage" not in chunk for chunk in parsed)
    assert parsed[-1]["choices"][0]["finish_reason"] == "stop"
    # ... but the gateway asked the upstream for usage, and recorded it.
    record = emulator.log("alpha")[-1]
    assert record["stream_options"] == {"include_usage": True}
    row = wait_finished(parsed[0]["id"])
    assert row.completion_tokens == 8 and not row.usage_estimated


def test_unknown_fields_pass_through(client, emulator):
    client.chat.completions.create(
        model=TEST_MODEL,
        messages=MESSAGES,
        temperature=0.2,
        extra_body={"top_k": 5, "some_vendor_flag": True, "provider": {"sort": "price"}},
    )
    keys = set(emulator.log("alpha")[-1]["request_body_keys"])
    assert {"top_k", "some_vendor_flag", "temperature"} <= keys
    assert "provider" not in keys  # ours, not the upstream's


def test_models_endpoint_lists_endpoint_prices(client):
    listing = client.models.list()
    model = next(m for m in listing.data if m.id == TEST_MODEL)
    # OpenAI's Model requires created (it was missing: None in the SDK; found with it)
    assert isinstance(model.created, int) and abs(model.created - time.time()) < 3600
    endpoints = {e["tag"]: e for e in model.model_extra["endpoints"]}
    assert set(endpoints) == {"alpha", "bravo", "charlie"}
    # OpenRouter's USD per token (strings), and per 1M beside them
    assert endpoints["bravo"]["pricing"]["prompt"] == "0.0000002"
    assert endpoints["alpha"]["pricing"]["input_cache_read"] == "0.00000001"
    assert endpoints["bravo"]["pricing_per_1m"]["prompt"] == "0.2"


def test_credential_sent_from_env_and_never_returned(client, emulator, monkeypatch):
    # The endpoint names an env variable; the emulator demands that key.
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", "sk-upstream-secret")
    emulator.control("alpha", api_key="sk-upstream-secret")
    reply = client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
    assert reply.model_extra["provider"] == "alpha"
    assert "sk-upstream-secret" not in reply.model_dump_json()
