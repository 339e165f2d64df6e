"""The benchmark's printed table and its check against the issue's targets."""

from __future__ import annotations

from .run import DIRECT, LITELLM, MODES, PACED, UBERLLM, UNPACED


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
                added = (
                    (None, None)
                    if name == DIRECT
                    else (added_ttft(cell, name, "p50"), added_ttft(cell, name, "p99"))
                )
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


# Issue 9's "Done when" (paced: 50 tokens at 20 ms; 1 worker).
ADDED_TTFT_P50_C1_MS = 2.0
LITELLM_TTFT_SHARE = 1 / 10
LITELLM_CPU_SHARE = 1 / 10
THROUGHPUT_SHARE_C128 = 0.95
ADDED_TTFT_P99_C128_MS = 50.0
UNPACED_CPU_MS = 2.0
IDLE_CPU_PCT = 1.0


def _cell(data: dict, mode: str, concurrency: str) -> dict | None:
    cell = data["results"].get(mode, {}).get(concurrency)
    return cell if cell and UBERLLM in cell and DIRECT in cell else None


def _cpu(cell: dict, name: str) -> float | None:
    return cell[name]["watch"].get("server", {}).get("cpu_ms_per_req") if name in cell else None


def targets(data: dict) -> list[tuple[str, bool | None, str]]:
    """(label, met or None when not measured, detail) for each target of issue 9."""
    found: list[tuple[str, bool | None, str]] = []

    def add(label: str, ok: bool | None, detail: str) -> None:
        found.append((label, ok, detail))

    if cell := _cell(data, PACED, "1"):
        a50, l50 = added_ttft(cell, UBERLLM, "p50"), _litellm_added(cell, "p50")
        add(
            f"paced c=1 added TTFT p50 <= {ADDED_TTFT_P50_C1_MS:g} ms",
            None if a50 is None else a50 <= ADDED_TTFT_P50_C1_MS,
            f"{_f(a50, 2)} ms",
        )
        add(
            "paced c=1 added TTFT p50 <= 1/10 of LiteLLM's",
            None if a50 is None or l50 is None else a50 <= l50 * LITELLM_TTFT_SHARE,
            f"{_f(a50, 2)} ms vs LiteLLM {_f(l50, 2)} ms",
        )
    for concurrency in ("32", "128"):
        if cell := _cell(data, PACED, concurrency):
            ours, theirs = _cpu(cell, UBERLLM), _cpu(cell, LITELLM)
            ok = None if not ours or not theirs else ours <= theirs * LITELLM_CPU_SHARE
            share = f" (1/{theirs / ours:.1f})" if ours and theirs else ""
            add(
                f"paced c={concurrency} CPU per stream <= 1/10 of LiteLLM's",
                ok,
                f"{_f(ours, 2)} ms vs LiteLLM {_f(theirs, 2)} ms{share}",
            )
    if cell := _cell(data, PACED, "128"):
        ratio = cell[UBERLLM]["rps"] / cell[DIRECT]["rps"] if cell[DIRECT]["rps"] else None
        a99 = added_ttft(cell, UBERLLM, "p99")
        add(
            f"paced c=128 throughput >= {THROUGHPUT_SHARE_C128} of direct",
            None if ratio is None else ratio >= THROUGHPUT_SHARE_C128,
            _f(ratio, 3),
        )
        add(
            f"paced c=128 added TTFT p99 <= {ADDED_TTFT_P99_C128_MS:g} ms",
            None if a99 is None else a99 <= ADDED_TTFT_P99_C128_MS,
            f"{_f(a99, 1)} ms",
        )
    for concurrency, cell in data["results"].get(UNPACED, {}).items():
        ours = _cpu(cell, UBERLLM) if UBERLLM in cell else None
        add(
            f"unpaced c={concurrency} CPU per request <= {UNPACED_CPU_MS:g} ms",
            None if ours is None else ours <= UNPACED_CPU_MS,
            f"{_f(ours, 2)} ms",
        )
    idle = data.get("idle", {})
    if UBERLLM in idle:
        detail = f"{idle[UBERLLM]:.2f}% of a core"
        if LITELLM in idle:
            detail += f" (LiteLLM {idle[LITELLM]:.2f}%)"
        add(
            f"idle CPU of the gateway < {IDLE_CPU_PCT:g}% of a core",
            idle[UBERLLM] < IDLE_CPU_PCT,
            detail,
        )
    return found


def _litellm_added(cell: dict, q: str) -> float | None:
    return added_ttft(cell, LITELLM, q) if LITELLM in cell else None


def comparison(data: dict) -> list[str]:
    """UberLLM against issue 9's targets (n/a: not measured in this run)."""
    lines = ["Targets (issue 9, Done when; UberLLM):"]
    for label, ok, detail in targets(data):
        mark = "n/a " if ok is None else ("MET " if ok else "MISS")
        lines.append(f"  [{mark}] {label}: {detail}")
    if not data.get("litellm"):
        lines.append("  (LiteLLM comparisons n/a: LiteLLM did not run)")
    return lines
