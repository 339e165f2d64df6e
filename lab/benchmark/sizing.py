"""Sizing: requests per second per gateway worker and per core (docs/operations.md,
"Sizing"). For each worker count, starts the emulator and the gateway (``Bench``), then
runs closed-loop unpaced load (the emulator answers at once, so the gateway's CPU is the
limit) with short streamed and non-streamed replies, ``repeats`` times each, and reports
req/s, the gateway's CPU (its whole process tree, from /proc) and req/s per core of
gateway CPU. The machine is shared: every figure carries the machine's busy share, and
repeats show the noise."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

from .run import REQUEST, UBERLLM, UNPACED, Bench, Options

SHORT = {**REQUEST, "max_tokens": 16}
KINDS = {"stream": {**SHORT, "stream": True}, "json": {**SHORT, "stream": False}}


def run_sizing(
    options: Options, base_dir: Path, *, workers: list[int], repeats: int, concurrency: int
) -> list[dict]:
    """One row per (workers, kind, repeat)."""
    rows = []
    for count in workers:
        bench = Bench(replace(options, workers=count, litellm=None, idle_s=0), base_dir)
        try:
            bench.start()
            bench.set_mode(UNPACED)
            for repeat in range(1, repeats + 1):
                for kind, body in KINDS.items():
                    options.log(f"  workers={count} {kind:6} run {repeat}/{repeats} ...")
                    cell = bench.cell(UBERLLM, concurrency, body)
                    server = cell["watch"].get("server", {})
                    cpu_pct = server.get("cpu_pct") or 0.0
                    rows.append(
                        {
                            "workers": count,
                            "kind": kind,
                            "run": repeat,
                            "rps": cell["rps"],
                            "gateway_cpu_pct": cpu_pct,
                            "rps_per_core": cell["rps"] / (cpu_pct / 100) if cpu_pct else None,
                            "cpu_ms_per_req": server.get("cpu_ms_per_req"),
                            "ttft_p50": cell["ttft_ms"]["p50"],
                            "ttft_p99": cell["ttft_ms"]["p99"],
                            "errors": sum(cell["errors"].values()),
                            "machine_busy_pct": cell["machine_busy_pct"],
                            "loadgen_cpu_pct": cell["loadgen_cpu_pct"],
                            "emulator_cpu_pct": cell["watch"].get("emulator", {}).get("cpu_pct"),
                        }
                    )
        finally:
            bench.stop()
    return rows


def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(rows: list[dict]) -> str:
    """The runs, then per (workers, kind): median req/s, spread, median req/s per core."""
    head = (
        f"{'workers':>7} {'reply':6} {'run':>3} {'req/s':>7} {'gw CPU%':>7} "
        f"{'req/s/core':>10} {'CPU ms/req':>10} {'TTFT p50':>8} {'p99':>7} {'err':>4} "
        f"{'busy%':>5} {'loadgen%':>8} {'emu%':>5}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['workers']:>7} {r['kind']:6} {r['run']:>3} {_f(r['rps']):>7} "
            f"{_f(r['gateway_cpu_pct']):>7} {_f(r['rps_per_core']):>10} "
            f"{_f(r['cpu_ms_per_req'], 2):>10} {_f(r['ttft_p50']):>8} {_f(r['ttft_p99']):>7} "
            f"{r['errors']:>4} {_f(r['machine_busy_pct'], 0):>5} "
            f"{_f(r['loadgen_cpu_pct'], 0):>8} {_f(r['emulator_cpu_pct'], 0):>5}"
        )
    lines += [
        "",
        f"{'workers':>7} {'reply':6} {'req/s median':>12} {'min-max':>13} "
        f"{'spread %':>8} {'req/s per gw core':>17} {'per worker':>10}",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["workers"], r["kind"]), []).append(r)
    for (workers, kind), group in groups.items():
        rps = [r["rps"] for r in group]
        per_core = [r["rps_per_core"] for r in group if r["rps_per_core"]]
        median = statistics.median(rps)
        spread = 100 * (max(rps) - min(rps)) / median if median else 0.0
        lines.append(
            f"{workers:>7} {kind:6} {median:>12.1f} {min(rps):>6.1f}-{max(rps):<6.1f} "
            f"{spread:>8.0f} {_f(statistics.median(per_core) if per_core else None):>17} "
            f"{median / workers:>10.1f}"
        )
    return "\n".join(lines)
