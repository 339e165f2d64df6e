"""bench_sizing: the load generator's JSON (non-streamed) mode against the real emulator,
and the sizing table's medians, spread and per-core figures."""

from __future__ import annotations

import json
import subprocess
import sys

from lab.benchmark.sizing import render

from ..support import TEST_MARKET, TEST_MODEL


def _loadgen(url: str, body: dict, *extra: str) -> dict:
    argv = [
        sys.executable,
        "-m",
        "lab.benchmark.loadgen",
        "--url",
        url,
        "--body",
        json.dumps(body),
        "-c",
        "2",
        "--warmup",
        "0.2",
        "--duration",
        "0.5",
        *extra,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def test_loadgen_counts_json_replies_only_with_plain(emulator_server) -> None:
    provider = next(iter(TEST_MARKET["providers"]))
    url = f"{emulator_server.provider_url(provider)}/chat/completions"
    body = {
        "model": TEST_MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
        "max_tokens": 4,
    }
    plain = _loadgen(url, body, "--plain")
    assert plain["completed"] > 0 and plain["errors"] == {}
    assert plain["ttft_ms"]["p50"] is not None  # the reply's "content" was seen
    strict = _loadgen(url, body)  # a JSON reply has no [DONE]: not a complete stream
    assert strict["completed"] == 0 and strict["errors"].get("stream without [DONE]", 0) > 0
    streamed = _loadgen(url, {**body, "stream": True})
    assert streamed["completed"] > 0 and streamed["errors"] == {}


def _row(workers: int, kind: str, run: int, rps: float, cpu_pct: float) -> dict:
    return {
        "workers": workers,
        "kind": kind,
        "run": run,
        "rps": rps,
        "gateway_cpu_pct": cpu_pct,
        "rps_per_core": rps / (cpu_pct / 100),
        "cpu_ms_per_req": 10 * cpu_pct / rps,
        "ttft_p50": 5.0,
        "ttft_p99": 9.0,
        "errors": 0,
        "machine_busy_pct": 100.0,
        "loadgen_cpu_pct": 20.0,
        "emulator_cpu_pct": 10.0,
    }


def test_sizing_summary_medians_spread_and_per_core() -> None:
    rows = [
        _row(1, "stream", 1, 100.0, 50.0),
        _row(1, "stream", 2, 120.0, 60.0),
        _row(1, "stream", 3, 80.0, 50.0),
        _row(2, "json", 1, 150.0, 100.0),
    ]
    text = render(rows)
    summary = text.split("\n\n")[1].splitlines()
    one = summary[1].split()
    # median 100 req/s, 80-120 (40 % spread), median per core of (200, 200, 160) = 200
    assert one[:3] == ["1", "stream", "100.0"] and one[3] == "80.0-120.0"
    assert one[4:] == ["40", "200.0", "100.0"]
    two = summary[2].split()
    assert two[2] == "150.0" and two[-2:] == ["150.0", "75.0"]  # per worker: 150 / 2
