"""bench_overhead's verdicts on issue 9's targets, from recorded load-generator results,
and the server commands it starts."""

from __future__ import annotations

from lab.benchmark.report import comparison, targets
from lab.benchmark.run import gateway_argv


def result(rps: float, ttft_p50: float, ttft_p99: float, cpu_ms: float | None = None) -> dict:
    watch = {"server": {"cpu_ms_per_req": cpu_ms}} if cpu_ms is not None else {}
    return {"rps": rps, "ttft_ms": {"p50": ttft_p50, "p99": ttft_p99}, "watch": watch}


def data(ours_c1_p50: float, ours_cpu: float, litellm: bool, idle: float) -> dict:
    def cell(concurrency: int) -> dict:
        found = {
            "direct": result(100.0, 10.0, 12.0),
            "uberllm": result(96.0, 10.0 + ours_c1_p50, 40.0, ours_cpu),
        }
        if litellm:
            found["litellm"] = result(50.0, 30.0, 300.0, 60.0)
        return found

    paced = {str(c): cell(c) for c in (1, 32, 128)}
    unpaced = {"1": {"direct": result(900, 1, 2), "uberllm": result(500, 2, 3, 1.5)}}
    idle_found = {"uberllm": idle, **({"litellm": 3.0} if litellm else {})}
    return {"results": {"paced": paced, "unpaced": unpaced}, "litellm": litellm, "idle": idle_found}


def verdicts(found: dict) -> dict[str, bool | None]:
    return {label: ok for label, ok, _ in targets(found)}


def test_all_targets_met() -> None:
    found = verdicts(data(ours_c1_p50=1.5, ours_cpu=5.0, litellm=True, idle=0.4))
    assert found == {
        "paced c=1 added TTFT p50 <= 2 ms": True,
        "paced c=1 added TTFT p50 <= 1/10 of LiteLLM's": True,  # 1.5 vs 20 ms
        "paced c=32 CPU per stream <= 1/10 of LiteLLM's": True,  # 5 vs 60 ms
        "paced c=128 CPU per stream <= 1/10 of LiteLLM's": True,
        "paced c=128 throughput >= 0.95 of direct": True,
        "paced c=128 added TTFT p99 <= 50 ms": True,
        "unpaced c=1 CPU per request <= 2 ms": True,
        "idle CPU of the gateway < 1% of a core": True,
    }


def test_misses_and_not_measured() -> None:
    found = verdicts(data(ours_c1_p50=13.0, ours_cpu=19.0, litellm=False, idle=2.5))
    assert found["paced c=1 added TTFT p50 <= 2 ms"] is False
    assert found["paced c=1 added TTFT p50 <= 1/10 of LiteLLM's"] is None
    assert found["paced c=32 CPU per stream <= 1/10 of LiteLLM's"] is None
    assert found["idle CPU of the gateway < 1% of a core"] is False
    lines = comparison(data(13.0, 19.0, False, 2.5))
    assert any(line.startswith("  [MISS] paced c=1 added TTFT p50 <= 2 ms") for line in lines)
    assert any("n/a" in line and "LiteLLM did not run" in line for line in lines)


def test_gateway_commands() -> None:
    granian = gateway_argv("granian", "uberllm.asgi:application", 8001, 2)
    assert (
        granian[1:3] == ["-m", "granian"]
        and "asginl" in granian
        and granian[-1].endswith(":application")
    )
    assert granian[granian.index("--workers") + 1] == "2"
    uvicorn = gateway_argv("uvicorn", "uberllm.asgi:application", 8001, 1)
    assert uvicorn[1:4] == ["-m", "uvicorn", "uberllm.asgi:application"]


def test_a_paced_cell_runs_long_enough_for_its_minimum_of_streams(tmp_path):
    from lab.benchmark.run import PACED, UNPACED, Bench, Options

    bench = Bench(Options(duration=5.0, min_paced_streams=30, log=lambda _: None), tmp_path)
    bench.mode = PACED
    assert bench.duration(1) == 30.0  # one stream a second: 30 s for 30 streams
    assert bench.duration(32) == 5.0  # 32 streams a second: --duration is enough
    bench.mode = UNPACED
    assert bench.duration(1) == 5.0


def test_bench_prompt_times_each_step_of_a_conversation_of_the_size_asked():
    from lab.benchmark.prompt import STEPS, conversation, measure, render

    assert 45_000 <= len(conversation(50)) <= 55_000
    (row,) = measure([50], repeats=1)
    assert row["kb"] == round(len(conversation(50)) / 1000) and row["messages"] >= 3
    assert all(row[step] > 0 for step in STEPS)
    assert row["total"] == sum(row[step] for step in STEPS)
    assert render([row]).splitlines()[-1].split()[0] == str(row["kb"])


def test_the_bench_header_names_the_cpu_and_its_reference_loop():
    from lab.benchmark.procs import cpu_model, cpu_reference_ms

    assert cpu_reference_ms(20_000) > 0  # milliseconds, a float (no time is asserted)
    with open("/proc/cpuinfo") as f:
        named = any(line.startswith("model name") for line in f)
    assert bool(cpu_model()) == named
