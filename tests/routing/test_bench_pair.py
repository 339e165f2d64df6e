"""The paired A/B benchmark's summary (lab.benchmark.pair): medians over rounds,
added TTFT against the direct cells, CPU ratios to the first side."""

from lab.benchmark.pair import parse_cell, render, summarise


def outcome(cpu: float, p50: float, p99: float, rps: float) -> dict:
    return {
        "watch": {"server": {"cpu_ms_per_req": cpu}},
        "rps": rps,
        "ttft_ms": {"p50": p50, "p99": p99},
        "machine_busy_pct": 50.0,
    }


def test_medians_added_ttft_and_ratios():
    cells = [parse_cell("paced:32"), parse_cell("unpaced:1")]
    results = {
        ("paced", 32, "direct"): [outcome(0, 10, 12, 32), outcome(0, 11, 14, 32)],
        ("paced", 32, "base"): [outcome(10, 20, 40, 30), outcome(12, 22, 44, 31)],
        ("paced", 32, "this"): [outcome(5, 13, 20, 32), outcome(6, 14, 22, 32)],
        ("unpaced", 1, "direct"): [outcome(0, 0.2, 1, 2000), outcome(0, 0.2, 1, 2000)],
        ("unpaced", 1, "base"): [outcome(4, 4.2, 9, 150), outcome(4, 4.2, 9, 170)],
        ("unpaced", 1, "this"): [outcome(2, 2.2, 5, 250), outcome(2, 2.2, 5, 250)],
    }
    rows = summarise(results, cells, ["base", "this"])
    this = next(r for r in rows if r["side"] == "this" and r["mode"] == "paced")
    assert this["cpu_ms_per_req"] == 5.5
    assert this["added_ttft_p50_ms"] == 13.5 - 10.5
    assert this["added_ttft_p99_ms"] == 21 - 13
    assert this["throughput"] == 1.0
    unpaced = next(r for r in rows if r["side"] == "base" and r["mode"] == "unpaced")
    assert unpaced["throughput"] == 160
    table = render(rows, ["base", "this"])
    assert "paced      32 this             5.50   0.50" in table
