"""`make run`'s cold start (issue 10, "Live"): ``manage.py run_demo``, what `make run`
starts after migrating, on a bare machine's embedded default (SQLite, the filesystem
Celery broker, no Redis) in a var folder of its own, with the demo's emulated providers.
Within 2 minutes of the start a 150k-token stream goes to a provider that is fast enough
for 150k (by the cold-start probes; the request is in that provider's emulator log), and
``provider.sort: latency`` picks the fastest one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
from django.conf import settings
from openai import OpenAI

from ..support import free_port

# Every emulated delay x 0.5: the providers keep their order, twice as soon. Not lower:
# R2.4's "under 1 second" would then let a provider in that is slow at full speed.
TIME_SCALE = 0.5
START_TO_STREAM_S = 120.0  # the "within 2 minutes"
PROMPT = "lorem ipsum dolor " * 33_334  # ~150k tokens
STORES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")  # CI's: a bare machine has none


def _env(var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in STORES}
    return {**env, "UBERLLM_VAR_DIR": str(var), "UBERLLM_READ_DOT_ENV": "false"}


def _probes_at_150k(database: Path, deadline: float) -> dict[str, int]:
    """{provider slug: TTFT ms} of the cold-start probes at 150k, once every probed
    endpoint has its 150k probe (the 2k probe of cold endpoints lands in the same run)."""
    query = """select p.slug, r.prompt_tokens, r.ttft_ms from routing_proberesult r
               join providers_endpoint e on e.id = r.endpoint_id
               join providers_provider p on p.id = e.provider_id where r.status = 'ok'"""
    while time.monotonic() < deadline:
        with sqlite3.connect(database) as connection:
            rows = connection.execute(query).fetchall()
        probed = {slug for slug, _, _ in rows}
        at_150k = {slug: ttft for slug, size, ttft in rows if size >= 128_000}
        if probed and set(at_150k) == probed:
            return at_150k
        time.sleep(0.5)
    raise AssertionError(f"no cold-start probes at 150k within {START_TO_STREAM_S} s")


def _wait_healthy(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("the demo gateway did not answer")


def _served(client: OpenAI, model: str, **provider) -> str:
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": f"{time.time_ns()} {PROMPT}"}],
        max_tokens=5,
        stream=True,
        extra_body={"provider": provider} if provider else {},
    )
    served = {(chunk.model_extra or {}).get("provider") for chunk in stream}
    served.discard(None)
    assert len(served) == 1, served
    return served.pop()


def _fast_enough(ttft_ms: int, fastest_ms: int) -> bool:
    """R2.4 on the probes: within 2x of the fastest, or under 1 second."""
    return ttft_ms <= 2 * fastest_ms or ttft_ms < 1_000


def _long_calls(emulator: str, slug: str) -> int:
    """Streamed calls of >140k tokens in the provider's emulator log (probes included)."""
    log = httpx.get(f"{emulator}/_log", params={"provider": slug}).json()
    return sum(1 for call in log if call["prompt_tokens"] > 140_000 and call["stream"])


def _stop(demo: subprocess.Popen) -> None:
    if demo.poll() is None:
        demo.send_signal(signal.SIGTERM)  # run_demo stops its children
        try:
            demo.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)


def test_a_fresh_demo_sends_a_150k_stream_to_a_fast_enough_provider(tmp_path):
    var, base = tmp_path / "var", settings.BASE_DIR
    env = _env(var)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, cwd=base, check=True)
    port, emulator_port = free_port(), free_port()
    started = time.monotonic()
    demo = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "run_demo",
            "--port",
            str(port),
            "--emulator-port",
            str(emulator_port),
            "--time-scale",
            str(TIME_SCALE),
        ],
        env=env,
        cwd=base,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = started + START_TO_STREAM_S
        _wait_healthy(port, deadline)
        probes = _probes_at_150k(var / "db.sqlite3", deadline)
        key = (var / "demo_api_key.txt").read_text().strip()
        client = OpenAI(base_url=f"http://127.0.0.1:{port}/api/v1", api_key=key, max_retries=0)
        model = client.models.list().data[0].id
        # The gateway's first chat call waits at most 2 s for its routing snapshot's first
        # refresh, then routes on what it has; on a loaded machine that refresh can take
        # longer. One short call starts the refresher; the snapshot is then refreshed while
        # calls keep coming, and the wait below covers two refreshes.
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=1
        )
        time.sleep(2 * settings.UBERLLM["SPEED_CACHE_TTL_S"] + 1)  # the gateway's snapshot
        emulator = f"http://127.0.0.1:{emulator_port}"
        probe_calls = {slug: _long_calls(emulator, slug) for slug in probes}

        served = _served(client, model)  # sent before the deadline: the waits above end there
        fastest = min(probes, key=probes.__getitem__)
        fast_enough = {slug for slug, ms in probes.items() if _fast_enough(ms, probes[fastest])}
        assert served in fast_enough, (served, probes)
        assert len(fast_enough) < len(probes)  # the demo has slow ones to avoid at 150k
        assert _long_calls(emulator, served) == probe_calls[served] + 1  # it reached there

        assert _served(client, model, sort="latency") == fastest
    finally:
        _stop(demo)
