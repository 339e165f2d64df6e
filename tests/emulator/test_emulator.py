"""Provider emulator over real HTTP on loopback (no mocks, no Django)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
from openai import OpenAI

from lab.emulator import EmulatorServer, estimate_prompt_tokens, load_config
from lab.emulator.timing import prefill_s
from lab.emulator.tokens import reply_text

MODEL = "deepseek/deepseek-v4.1-flash"
KEY = "sk-emu-test-secret"
DEMO = Path(__file__).resolve().parents[2] / "providers" / "fixtures" / "emulator_demo.json"

# The profiles the module's emulator serves (the `emu` fixture, tests/emulator/conftest.py).
PROFILES: dict[str, Any] = {
    "seed": 7,
    "time_scale": 0.01,
    "providers": {
        "fast": {"models": [MODEL], "ttft_base_s": 0.2, "output_tokens_per_s": 1000},
        "keyed": {"models": [MODEL], "api_key": KEY, "ttft_base_s": 0.1},
        "slow": {"models": [MODEL], "ttft_base_s": 0.1, "prefill_tokens_per_s": 8000},
        "noisy": {
            "models": [MODEL],
            "time_scale": 0,
            "jitter": {"kind": "lognormal", "sigma": 0.5},
            "stall": {"probability": 0.3, "extra_s": [3.0, 8.0]},
        },
    },
}


def msgs(text: str = "Hello there", n: int = 1) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{text} #{i}"} for i in range(n)]


def client(emu: EmulatorServer, slug: str = "fast", key: str = "unused") -> OpenAI:
    return OpenAI(base_url=emu.provider_url(slug), api_key=key, max_retries=0, timeout=10)


HTTP = httpx.Client(timeout=10)  # one client: building one per call costs ~30 ms


def post(emu: EmulatorServer, slug: str, body: dict[str, Any]) -> httpx.Response:
    return HTTP.post(f"{emu.provider_url(slug)}/chat/completions", json=body)


def sse_events(text: str) -> list[Any]:
    lines = [line[6:] for line in text.split("\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [orjson.loads(line) for line in lines[:-1]]


# --- shapes -------------------------------------------------------------------------------


def test_stream_with_usage_via_openai_client(emu: EmulatorServer) -> None:
    stream = client(emu).chat.completions.create(
        model=MODEL, messages=msgs(), stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply_text(24)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    usage = chunks[-1].usage
    assert usage.completion_tokens == 24 and usage.prompt_tokens == estimate_prompt_tokens(msgs())
    assert usage.total_tokens == usage.prompt_tokens + 24
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert all(c.usage is None for c in chunks[:-1])
    assert len({c.id for c in chunks}) == 1
    assert emu.log("fast")[0]["id"] == chunks[0].id


def test_stream_raw_shape_with_and_without_usage(emu: EmulatorServer) -> None:
    body = {"model": MODEL, "messages": msgs(), "stream": True, "max_tokens": 3}
    plain = post(emu, "fast", body)
    assert plain.headers["content-type"].startswith("text/event-stream")
    events = sse_events(plain.text)
    assert all("usage" not in e and e["choices"] for e in events)
    assert events[0]["object"] == "chat.completion.chunk"
    assert events[0]["choices"][0] == {
        "index": 0,
        "delta": {"role": "assistant", "content": ""},
        "finish_reason": None,
        "logprobs": None,
    }
    assert [e["choices"][0]["delta"].get("content") for e in events[1:4]] == [
        "lorem",
        " ipsum",
        " dolor",
    ]
    assert events[-1]["choices"][0]["delta"] == {}
    assert events[-1]["choices"][0]["finish_reason"] == "length"

    with_usage = sse_events(
        post(emu, "fast", {**body, "stream_options": {"include_usage": True}}).text
    )
    assert all(e["usage"] is None for e in with_usage[:-1])
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["completion_tokens"] == 3


@pytest.mark.parametrize(
    ("dialect", "keys"),
    [
        ("openai", {"prompt_tokens", "prompt_tokens_details", "completion_tokens"}),
        ("deepseek", {"prompt_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens"}),
        ("anthropic", {"input_tokens", "cache_read_input_tokens", "output_tokens"}),
        ("none", set()),
    ],
)
def test_usage_in_each_dialect(emu: EmulatorServer, dialect: str, keys: set) -> None:
    emu.control("fast", usage_dialect=dialect)
    body = {"model": MODEL, "messages": msgs(n=2), "max_tokens": 3}
    post(emu, "fast", body)  # the first message is cached next time
    whole = post(emu, "fast", {**body, "messages": [*msgs(n=2), *msgs("More")]}).json()
    streamed = sse_events(
        post(emu, "fast", {**body, "stream": True, "stream_options": {"include_usage": True}}).text
    )
    usages = [u for u in (whole.get("usage"), streamed[-1].get("usage")) if u]
    assert len(usages) == (0 if dialect == "none" else 2)
    for usage in usages:
        assert keys <= usage.keys()
        assert "prompt_tokens_details" not in usage or dialect == "openai"
    if dialect == "deepseek":
        record = emu.log("fast")[1]
        assert usages[0]["prompt_cache_hit_tokens"] == record["cached_tokens"] > 0
        assert (
            usages[0]["prompt_cache_miss_tokens"]
            == record["prompt_tokens"] - record["cached_tokens"]
        )
    with pytest.raises(httpx.HTTPStatusError):
        emu.control("fast", usage_dialect="cobol")


def test_non_stream_shape(emu: EmulatorServer) -> None:
    reply = client(emu).chat.completions.create(model=MODEL, messages=msgs(), max_tokens=5)
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.content == reply_text(5)
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 5
    record = emu.log("fast")[0]
    assert record["status"] == "completed" and record["http_status"] == 200
    assert record["completion_tokens_sent"] == 5 and record["stream"] is False


def test_models_route(emu: EmulatorServer) -> None:
    ids = [m.id for m in client(emu).models.list()]
    assert ids == [MODEL]


# --- caching and timing ---------------------------------------------------------------


def test_cached_tokens_on_second_call_with_same_prefix(emu: EmulatorServer) -> None:
    history = msgs("agent context " * 50, n=3)
    first = client(emu).chat.completions.create(model=MODEL, messages=history)
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    longer = [*history, {"role": "user", "content": "and one more thing"}]
    second = client(emu).chat.completions.create(model=MODEL, messages=longer)
    assert second.usage.prompt_tokens_details.cached_tokens == estimate_prompt_tokens(history)
    assert second.usage.prompt_tokens == estimate_prompt_tokens(longer)
    other = client(emu, "slow").chat.completions.create(model=MODEL, messages=longer)
    assert other.usage.prompt_tokens_details.cached_tokens == 0  # caches are per provider


def test_cache_expires_after_scaled_ttl(emu: EmulatorServer) -> None:
    emu.control("fast", cache_ttl_s=30)  # x time_scale 0.01 = 0.3 s real
    body = {"model": MODEL, "messages": msgs(), "max_tokens": 1}
    post(emu, "fast", body)
    assert post(emu, "fast", body).json()["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    time.sleep(0.4)
    assert post(emu, "fast", body).json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_token_estimate() -> None:
    parts = [{"type": "text", "text": "abcde"}, {"type": "image_url", "image_url": {}}]
    messages = [{"role": "system", "content": "abcd"}, {"role": "user", "content": parts}]
    assert estimate_prompt_tokens(messages) == (1 + 4) + (2 + 4)


def test_ttft_grows_with_prompt_size(emu: EmulatorServer) -> None:
    small = msgs("x" * 400)  # ~100 tokens
    big = msgs("y" * 400_000)  # ~100k tokens: 12.5 s simulated prefill -> 125 ms real
    for messages in (small, big):
        client(emu, "slow").chat.completions.create(model=MODEL, messages=messages, max_tokens=1)
    rec_small, rec_big = emu.log("slow")
    assert rec_big["prompt_tokens"] > 100 * rec_small["prompt_tokens"]
    assert rec_big["planned_ttft_s"] > 10 * rec_small["planned_ttft_s"]
    waited = [r["first_token_at"] - r["received_at"] for r in (rec_small, rec_big)]
    assert waited[1] > waited[0]


def test_determinism_same_seed_same_ttft_sequence(emu: EmulatorServer) -> None:
    def run(server: EmulatorServer) -> list[float]:
        for i in range(12):
            post(server, "noisy", {"model": MODEL, "messages": msgs(n=i + 1)})
        return [r["planned_ttft_s"] for r in server.log("noisy")]

    first = run(emu)
    with EmulatorServer(PROFILES) as twin:
        assert run(twin) == first
    emu.reset()
    assert run(emu) == first  # /_reset reseeds
    with EmulatorServer(PROFILES, seed=8) as other:
        assert run(other) != first
    assert len(set(first)) > 1 and any(r["stalled"] for r in emu.log("noisy"))


# --- errors -------------------------------------------------------------------------------


def test_wrong_or_missing_key_is_401_and_key_never_logged(emu: EmulatorServer) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(emu, "keyed", key="sk-wrong").chat.completions.create(model=MODEL, messages=msgs())
    assert post(emu, "keyed", {"model": MODEL, "messages": msgs()}).status_code == 401
    ok = client(emu, "keyed", key=KEY).chat.completions.create(model=MODEL, messages=msgs())
    assert ok.choices[0].message.content
    records = emu.log("keyed")
    assert [r["http_status"] for r in records] == [401, 401, 200]
    assert "authorization" in records[2]["headers_seen"]
    assert "authorization" not in records[2]["headers"]
    assert KEY not in httpx.get(f"{emu.base_url}/_log").text


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"model": MODEL}, 400),
        ({"model": MODEL, "messages": []}, 400),
        ({"model": "other/model", "messages": msgs()}, 404),
    ],
)
def test_bad_requests(emu: EmulatorServer, body: dict[str, Any], status: int) -> None:
    response = post(emu, "fast", body)
    assert response.status_code == status
    assert set(response.json()["error"]) == {"message", "type", "code", "param"}


def test_context_length_exceeded(emu: EmulatorServer) -> None:
    emu.control("fast", context_length=100)
    response = post(emu, "fast", {"model": MODEL, "messages": msgs("z" * 1000)})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"


def test_invalid_json_and_unknown_provider(emu: EmulatorServer) -> None:
    bad = httpx.post(f"{emu.provider_url('fast')}/chat/completions", content=b"{nope")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_json"
    assert post(emu, "nosuch", {"model": MODEL, "messages": msgs()}).status_code == 404


def test_status_override_and_error_rate(emu: EmulatorServer) -> None:
    body = {"model": MODEL, "messages": msgs(), "stream": True}
    emu.control("fast", status_override=429)
    limited = post(emu, "fast", body)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    emu.control("fast", status_override=503)
    assert post(emu, "fast", body).status_code == 503
    emu.control("fast", status_override=None, error_rate=1.0)
    with pytest.raises(openai.InternalServerError):
        client(emu).chat.completions.create(model=MODEL, messages=msgs())
    statuses = [(r["status"], r["http_status"]) for r in emu.log("fast")]
    assert statuses == [("rate_limited", 429), ("error", 503), ("error", 500)]


def test_concurrency_cap_gives_429(emu: EmulatorServer) -> None:
    emu.control("slow", concurrency_cap=1, ttft_base_s=100)  # first token after 1 s real
    body = {"model": MODEL, "messages": msgs(), "stream": True}
    with httpx.Client(timeout=10) as http:
        url = f"{emu.provider_url('slow')}/chat/completions"
        with http.stream("POST", url, json=body) as first:
            assert first.status_code == 200  # headers come at once, token later
            second = post(emu, "slow", body)
            assert second.status_code == 429 and second.headers["retry-after"] == "1"
    emu.wait_for(lambda r: r["status"] == "cancelled", provider="slow")
    emu.control("slow", ttft_base_s=0)
    assert post(emu, "slow", body).status_code == 200  # slot released


def test_fail_after_tokens_error_event_and_abort(emu: EmulatorServer) -> None:
    emu.control("fast", fail_after_tokens=3)
    with pytest.raises(openai.APIError):
        list(client(emu).chat.completions.create(model=MODEL, messages=msgs(), stream=True))
    emu.control("fast", fail_mode="abort")
    with pytest.raises(httpx.RemoteProtocolError):
        post(emu, "fast", {"model": MODEL, "messages": msgs(), "stream": True})
    assert post(emu, "fast", {"model": MODEL, "messages": msgs()}).status_code == 500
    records = emu.log("fast")
    assert [r["status"] for r in records] == ["cut", "cut", "cut"]
    assert [r["completion_tokens_sent"] for r in records[:2]] == [3, 3]


# --- disconnects ----------------------------------------------------------------------


def test_disconnect_mid_stream_is_cancelled_promptly(emu: EmulatorServer) -> None:
    emu.control("slow", output_tokens_per_s=10, default_output_tokens=1000)  # 1 ms/token real
    body = {"model": MODEL, "messages": msgs(), "stream": True}
    with httpx.Client(timeout=10) as http:
        url = f"{emu.provider_url('slow')}/chat/completions"
        with http.stream("POST", url, json=body) as response:
            lines = response.iter_lines()
            got = [next(lines) for _ in range(6)]
            assert any('"content":"lorem"' in line for line in got)
        closed_at = time.time()
    record = emu.wait_for(lambda r: r["status"] == "cancelled", provider="slow")
    assert record["first_token_at"] is not None
    assert 0 < record["completion_tokens_sent"] < 1000
    assert record["ended_at"] - closed_at < 0.1


def test_disconnect_during_ttft_wait_is_cancelled(emu: EmulatorServer) -> None:
    emu.control("slow", ttft_base_s=500)  # 5 s real: nothing is sent meanwhile
    body = {"model": MODEL, "messages": msgs(), "stream": True}
    with httpx.Client(timeout=10) as http:
        url = f"{emu.provider_url('slow')}/chat/completions"
        with http.stream("POST", url, json=body) as response:
            assert response.status_code == 200
            time.sleep(0.05)
        closed_at = time.time()
    record = emu.wait_for(lambda r: r["status"] == "cancelled", provider="slow")
    assert record["first_token_at"] is None and record["completion_tokens_sent"] == 0
    assert record["ended_at"] - closed_at < 0.1


def test_disconnect_during_non_stream_wait_is_cancelled(emu: EmulatorServer) -> None:
    emu.control("slow", ttft_base_s=500)
    payload = orjson.dumps({"model": MODEL, "messages": msgs()})
    request = (
        f"POST /slow/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    ).encode() + payload
    with socket.create_connection(("127.0.0.1", emu.port)) as sock:
        sock.sendall(request)
        emu.wait_for(lambda r: r["status"] == "in_progress", provider="slow")
    closed_at = time.time()
    record = emu.wait_for(lambda r: r["status"] == "cancelled", provider="slow")
    assert record["http_status"] is None and record["ended_at"] - closed_at < 0.1


# --- control, reset, log --------------------------------------------------------------


def test_control_reset_and_log(emu: EmulatorServer) -> None:
    live = emu.control("fast", error_rate=0.5, jitter={"kind": "lognormal"})
    assert live["error_rate"] == 0.5 and live["jitter"] == {"kind": "lognormal", "sigma": 0.25}
    assert httpx.get(f"{emu.base_url}/_control/fast").json()["error_rate"] == 0.5
    assert emu.control("fast", reset=True)["error_rate"] == 0.0
    bad = httpx.post(f"{emu.base_url}/_control/fast", json={"eror_rate": 1})
    assert bad.status_code == 400
    assert httpx.post(f"{emu.base_url}/_control/nosuch", json={}).status_code == 404

    body = {"model": MODEL, "messages": msgs(), "custom_field": {"a": 1}, "max_tokens": 2}
    post(emu, "fast", {**body, "stream": True, "stream_options": {"include_usage": True}})
    post(emu, "slow", body)
    record = emu.log("fast")[0]
    assert record["request_body_keys"] == [
        "custom_field",
        "max_tokens",
        "messages",
        "model",
        "stream",
        "stream_options",
    ]
    assert record["stream_options"] == {"include_usage": True} and record["max_tokens"] == 2
    assert len(emu.log()) == 2 and len(emu.log("slow")) == 1
    assert httpx.get(f"{emu.base_url}/_health").json() == {"ok": True}
    emu.reset()
    assert emu.log() == []


def test_emulator_server_lifecycle_and_threads() -> None:
    before = threading.active_count()
    server = EmulatorServer({"providers": {"p": {"models": [MODEL]}}}, time_scale=0).start()
    assert httpx.get(f"{server.base_url}/_health").status_code == 200
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.base_url}/_health", timeout=1)
    assert threading.active_count() <= before


# --- demo market ----------------------------------------------------------------------


def test_demo_fixture_is_calibrated_to_product_facts() -> None:
    providers = load_config(DEMO).providers
    assert {"novacloud", "swiftinfer", "cachemart", "steadyai", "deepseek"} <= set(providers)

    def ttft(slug: str, tokens: int) -> float:
        profile = providers[slug]
        return profile["ttft_base_s"] + prefill_s(profile, tokens, 0)

    assert 12 <= ttft("novacloud", 64_000) <= 18 and 30 <= ttft("novacloud", 150_000) <= 38
    assert 1.5 <= ttft("swiftinfer", 100_000) <= 2.0 and ttft("swiftinfer", 128_000) <= 2.0
    assert abs(ttft("deepseek", 31) - 1.7) < 0.1 and abs(ttft("deepseek", 105_000) - 15.5) < 0.3
    assert providers["swiftinfer"]["stall"]["probability"] > 0
    assert all(MODEL in p["models"] for p in providers.values())


def test_log_record_keeps_the_head_of_the_last_message(emu: EmulatorServer) -> None:
    tag = "loadtest run-7 #42: " + "x" * 200
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": tag}]
    post(emu, "fast", {"model": MODEL, "messages": messages})
    post(emu, "fast", {"model": MODEL, "messages": [{"role": "user", "content": [{"a": 1}]}]})
    heads = [record["last_message_head"] for record in emu.log(provider="fast")]
    assert heads == [tag[:80], None]
