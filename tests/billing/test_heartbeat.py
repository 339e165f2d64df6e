"""Calls in flight checkpoint their row; a dead process's stream is closed by the
reconciler with the tokens it delivered billed (issue 12: one rule for partial calls)."""

from __future__ import annotations

import os
import signal
import threading
import time
from decimal import Decimal

import httpx
import pytest

from billing.ledger import activity_reconcile
from billing.models import Activity
from billing.pricing import call_cost

from ..support import TEST_MODEL, SubprocessGateway

pytestmark = pytest.mark.django_db(transaction=True)


def _stream_until_killed(api_url: str, key: str, chunks: list[str]) -> None:
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    try:
        with httpx.stream(
            "POST",
            f"{api_url}/chat/completions",
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {key}"},
        ) as response:
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    chunks.append(line)
    except httpx.HTTPError:
        chunks.append("cut")


def _wait(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not reached")


def test_a_killed_streams_delivered_tokens_are_billed(market, tenant, emulator):
    for slug in ("alpha", "bravo", "charlie"):  # slow streams: 60 tokens over 10 s
        emulator.control(slug, output_tokens_per_s=6.0, default_output_tokens=60)
    gateway = SubprocessGateway(env={"UBERLLM_LEDGER_HEARTBEAT_S": "0.2"}).start()
    chunks: list[str] = []
    thread = threading.Thread(
        target=_stream_until_killed, args=(gateway.api_url, tenant.key, chunks)
    )
    try:
        thread.start()
        # Checkpointed while alive: the row names the serving endpoint and its tokens.
        row = _wait(lambda: Activity.unscoped_objects.filter(completion_tokens__gte=3).first())
        assert row.status == "pending" and row.heartbeat_at is not None and row.cost_usd > 0
        time.sleep(1.0)
        # A live call is never reconciled: its heartbeat is fresher than the bound,
        # although it was created longer ago.
        assert activity_reconcile(older_than_s=0.8) == 0
        os.kill(gateway.proc.pid, signal.SIGKILL)
        gateway.proc.wait(10)
    finally:
        gateway.stop()
        thread.join(30)
    row.refresh_from_db()
    time.sleep(0.9)  # the dead process's last beat gets older than the bound
    assert activity_reconcile(older_than_s=0.8) == 1
    row.refresh_from_db()
    assert row.status == "error" and row.usage_estimated and "billed" in row.error_message
    assert row.completion_tokens >= 3
    prices = {name: Decimal(value) for name, value in row.prices.items()}
    expected = call_cost(
        prices=prices,
        prompt_tokens=row.prompt_tokens,
        cached_tokens=row.cached_tokens,
        completion_tokens=row.completion_tokens,
    )
    assert row.cost_usd == expected > 0
    assert activity_reconcile(older_than_s=0.8) == 0  # once
