"""What a hard limit costs the hot path: admit + settle of one request against two
budgets and three rate limits, in process memory and in Redis.

    python -m lab.benchmark.quota                         # in-process store
    python -m lab.benchmark.quota redis://127.0.0.1:6379/11  # Redis store (that db)

Prints p50 / p99 of the awaited ``admit`` (the only step on the request path; ``settle``
runs in the background) and of ``settle``. Keys and organisations without a limit make
no call at all. No Django needed.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime

from billing.quota import Budget, LocalQuota, RateLimits, RedisQuota, Ticket


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


async def run(url: str | None, n: int = 2000) -> None:
    store = RedisQuota(url) if url else LocalQuota()
    ns = f"ullm-bench-{uuid.uuid4().hex[:8]}"
    start = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    expire = int(time.time()) + 3600
    budgets = tuple(
        Budget(
            key=f"{ns}:spend:{s}",
            scope=s,
            period="month",
            period_start=start,
            limit_nano=10**15,
            expire_at=expire,
        )
        for s in ("key:1", "org:1")
    )
    rates = RateLimits(
        rpm=10**9,
        tpm=10**12,
        concurrent=10**6,
        rpm_key=f"{ns}:rpm",
        tpm_key=f"{ns}:tpm",
        concurrent_key=f"{ns}:inflight",
        window_reset_s=60.0,
    )
    admit_us, settle_us = [], []
    seeds = {0: 0, 1: 0}
    for i in range(n):
        ticket = Ticket(
            request_id=f"r{i}", budgets=budgets, reserved_nano=5_000_000, rates=rates, tokens=1000
        )
        t0 = time.perf_counter()
        refusal = await store.admit(ticket, seeds)
        t1 = time.perf_counter()
        assert refusal is None, refusal
        await store.settle(ticket, 1_000_000, 200)
        t2 = time.perf_counter()
        admit_us.append((t1 - t0) * 1e6)
        settle_us.append((t2 - t1) * 1e6)
    kind = f"Redis ({url})" if url else "in-process"
    print(f"{kind}, {n} requests, 2 budgets + RPM/TPM/concurrency:")
    for name, values in (("admit", admit_us), ("settle", settle_us)):
        print(f"  {name}: p50 {statistics.median(values):.1f} us, p99 {_pct(values, 99):.1f} us")
    if url:
        import redis

        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(f"{ns}:*"))
        if keys:
            client.delete(*keys)


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1] if len(sys.argv) > 1 else None))
