"""Gateway overhead benchmark (``manage.py bench_overhead``, ``make bench``).

Starts the provider emulator, the gateway (uvicorn, as ``make run`` does) and, when it
is installed, the LiteLLM proxy; drives each with a separate load-generator process
and reports the gateway's cost as ratios to calling the emulator directly. See
``docs/benchmarks.md``.

Only ``run`` and ``seed`` import Django; ``loadgen`` and ``procs`` are plain asyncio
and ``/proc`` readers, so the load generator stays light.
"""
