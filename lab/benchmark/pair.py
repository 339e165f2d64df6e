"""Paired A/B of two gateway versions on this machine (``manage.py bench_ab``).

Both versions run at once, each with its own emulator, SQLite file and uvicorn
gateway (``Bench`` of ``run.py``, started in its own directory); the cells alternate
between them (A B, then B A in the next round) with a direct-to-emulator cell first in
each pair. On a shared machine whose load changes from minute to minute, figures
measured seconds apart under the same load compare better than two whole runs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from .run import DIRECT, PACED, UBERLLM, Bench, Options

Cell = tuple[str, int]  # (mode, concurrency)
DEFAULT_CELLS: list[Cell] = [
    ("paced", 1),
    ("paced", 32),
    ("paced", 128),
    ("unpaced", 1),
    ("unpaced", 32),
]


def parse_cell(text: str) -> Cell:
    mode, _, concurrency = text.partition(":")
    return mode, int(concurrency)


def run_pair(
    dirs: dict[str, Path],
    cells: list[Cell],
    repeats: int,
    duration: float,
    workers: int,
    log: Callable[[str], None],
) -> dict[tuple[str, int, str], list[dict]]:
    """Load-generator results per (mode, concurrency, side or "direct")."""
    benches: dict[str, Bench] = {}
    results: dict[tuple[str, int, str], list[dict]] = {}
    try:
        for side, base in dirs.items():
            db = base / "var" / "bench" / "pair.sqlite3"
            db.parent.mkdir(parents=True, exist_ok=True)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            options = Options(
                duration=duration,
                workers=workers,
                idle_s=0.0,
                database_url=f"sqlite:///{db}",
                log=log,
            )
            benches[side] = Bench(options, base)
            log(f"starting {side} ({base}) ...")
            benches[side].start()
        sides = list(dirs)
        for round_no in range(repeats):
            order = sides if round_no % 2 == 0 else sides[::-1]
            for mode, concurrency in cells:
                for index, side in enumerate(order):
                    bench = benches[side]
                    bench.set_mode(mode)
                    if index == 0:
                        direct = bench.cell(DIRECT, concurrency)
                        results.setdefault((mode, concurrency, DIRECT), []).append(direct)
                    outcome = bench.cell(UBERLLM, concurrency)
                    results.setdefault((mode, concurrency, side), []).append(outcome)
                    added = (
                        outcome["ttft_ms"]["p50"]
                        - results[(mode, concurrency, DIRECT)][-1]["ttft_ms"]["p50"]
                    )
                    log(
                        f"  round {round_no + 1} {mode} c={concurrency} {side}: "
                        f"{_cpu(outcome):.2f} ms CPU/req, +TTFT p50 {added:.2f} ms"
                    )
    finally:
        for bench in benches.values():
            bench.stop()
    return results


def _cpu(outcome: dict) -> float:
    return outcome["watch"]["server"]["cpu_ms_per_req"] or 0.0


def summarise(
    results: dict[tuple[str, int, str], list[dict]], cells: list[Cell], sides: list[str]
) -> list[dict]:
    """Medians over the rounds: CPU per request, added TTFT p50/p99 (against the direct
    cells of the same rounds), throughput (x direct for paced cells, req/s unpaced)."""
    rows = []
    for mode, concurrency in cells:
        direct = results[(mode, concurrency, DIRECT)]
        d50 = statistics.median(r["ttft_ms"]["p50"] for r in direct)
        d99 = statistics.median(r["ttft_ms"]["p99"] for r in direct)
        drps = statistics.median(r["rps"] for r in direct)
        for side in sides:
            runs = results[(mode, concurrency, side)]
            rps = statistics.median(r["rps"] for r in runs)
            rows.append(
                {
                    "mode": mode,
                    "concurrency": concurrency,
                    "side": side,
                    "cpu_ms_per_req": statistics.median(_cpu(r) for r in runs),
                    "added_ttft_p50_ms": statistics.median(r["ttft_ms"]["p50"] for r in runs) - d50,
                    "added_ttft_p99_ms": statistics.median(r["ttft_ms"]["p99"] for r in runs) - d99,
                    "throughput": rps / drps if mode == PACED else rps,
                    "busy_pct": statistics.median(r["machine_busy_pct"] for r in runs),
                }
            )
    return rows


def render(rows: list[dict], sides: list[str]) -> str:
    """The summary table, with each side's CPU as a ratio to the first side's."""
    head = (
        f"{'mode':8} {'c':>4} {'side':10} {'CPU ms/req':>10} {'ratio':>6} {'+TTFT p50':>9} "
        f"{'+p99':>8} {'x direct | req/s':>16} {'busy%':>6}"
    )
    lines = [head, "-" * len(head)]
    first = {
        (r["mode"], r["concurrency"]): r["cpu_ms_per_req"] for r in rows if r["side"] == sides[0]
    }
    for r in rows:
        base = first[(r["mode"], r["concurrency"])]
        ratio = r["cpu_ms_per_req"] / base if base else float("nan")
        throughput = f"{r['throughput']:.2f}" if r["mode"] == PACED else f"{r['throughput']:.1f}"
        lines.append(
            f"{r['mode']:8} {r['concurrency']:>4} {r['side']:10} {r['cpu_ms_per_req']:>10.2f} "
            f"{ratio:>6.2f} {r['added_ttft_p50_ms']:>9.2f} {r['added_ttft_p99_ms']:>8.1f} "
            f"{throughput:>16} {r['busy_pct']:>6.0f}"
        )
    return "\n".join(lines)
