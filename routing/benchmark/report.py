"""The benchmark's printed table and its check against the issue's targets."""

from __future__ import annotations

from .run import DIRECT, LITELLM, MODES, PACED, UBERLLM


def _f(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None, digits: int = 2) -> str:
    if a is None or not b:
        return "-"
    return f"{a / b:.{digits}f}"


def added_ttft(cell: dict, name: str, q: str) -> float | None:
    mine, base = cell[name]["ttft_ms"][q], cell[DIRECT]["ttft_ms"][q]
    return None if mine is None or base is None else mine - base


def table(data: dict) -> str:
    results = data["results"]
    header = (
        f"{'c':>4} {'target':8} {'req/s':>8} {'x direct':>8} {'TTFT p50':>9} {'p99':>8} "
        f"{'+p50':>7} {'+p99':>7} {'x TTFT50':>8} {'CPU ms/req':>10} {'RSS MB':>7} "
        f"{'errors':>6} {'loadgen%':>8} {'busy%':>6}"
    )
    lines = []
    for mode, cells in results.items():
        lines += ["", f"{mode}: {MODES[mode]}", header, "-" * len(header)]
        for concurrency, cell in cells.items():
            direct = cell[DIRECT]
            for name, r in cell.items():
                server = r["watch"].get("server", {})
                added = (None, None) if name == DIRECT else (
                    added_ttft(cell, name, "p50"), added_ttft(cell, name, "p99"))  # fmt: skip
                lines.append(
                    f"{concurrency:>4} {name:8} {r['rps']:8.1f} "
                    f"{_ratio(r['rps'], direct['rps']):>8} {_f(r['ttft_ms']['p50'], 2):>9} "
                    f"{_f(r['ttft_ms']['p99'], 1):>8} {_f(added[0], 2):>7} {_f(added[1], 1):>7} "
                    f"{_ratio(r['ttft_ms']['p50'], direct['ttft_ms']['p50']):>8} "
                    f"{_f(server.get('cpu_ms_per_req'), 2):>10} "
                    f"{_f(server.get('peak_rss_mb'), 0):>7} {sum(r['errors'].values()):>6} "
                    f"{r['loadgen_cpu_pct']:8.0f} {r['machine_busy_pct']:6.0f}"
                )
    lines += ["", *comparison(data)]
    return "\n".join(lines)


def comparison(data: dict) -> list[str]:
    """UberLLM against the issue's targets (and against LiteLLM when it ran)."""
    results = data["results"]
    lines = ["Targets (UberLLM):"]

    def check(label: str, ok: bool | None, detail: str) -> None:
        mark = "n/a " if ok is None else ("MET " if ok else "MISS")
        lines.append(f"  [{mark}] {label}: {detail}")

    for mode, cells in results.items():
        for concurrency, cell in cells.items():
            if UBERLLM not in cell:
                continue
            a50, a99 = added_ttft(cell, UBERLLM, "p50"), added_ttft(cell, UBERLLM, "p99")
            ours_cpu = cell[UBERLLM]["watch"]["server"]["cpu_ms_per_req"]
            prefix = f"{mode} c={concurrency}"
            if LITELLM in cell:
                l50 = added_ttft(cell, LITELLM, "p50")
                lit_cpu = cell[LITELLM]["watch"]["server"]["cpu_ms_per_req"]
                if concurrency == "1" and a50 is not None and l50:
                    check(f"{prefix} added TTFT p50 <= 1/10 of LiteLLM's", a50 <= l50 / 10,
                          f"{a50:.2f} ms vs {l50:.2f} ms")  # fmt: skip
                if ours_cpu and lit_cpu:
                    check(f"{prefix} CPU/request <= 1/20 of LiteLLM's", ours_cpu <= lit_cpu / 20,
                          f"{ours_cpu:.2f} ms vs {lit_cpu:.2f} ms "
                          f"(1/{lit_cpu / ours_cpu:.1f})")  # fmt: skip
            if concurrency == "128" and a50 is not None:
                check(f"{prefix} added TTFT p50 < 15 ms", a50 < 15, f"{a50:.2f} ms")
                check(f"{prefix} added TTFT p99 < 60 ms", a99 < 60, f"{a99:.1f} ms")
                if mode == PACED:
                    ratio = cell[UBERLLM]["rps"] / cell[DIRECT]["rps"]
                    check(f"{prefix} throughput >= 0.95 of direct", ratio >= 0.95, f"{ratio:.3f}")
    if not data.get("litellm"):
        lines.append("  (LiteLLM comparisons skipped: LiteLLM did not run)")
    return lines
