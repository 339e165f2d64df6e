"""Shared stores going away degrade routing, never calls (README "When a store is down").

- Redis stopped: a gateway (its own process, on a private redis-server) keeps serving
  from its snapshot; a lesson learnt during the outage (an unusable mark) reaches Redis
  once it is back.
- The database unavailable for writes (the Activity table locked): calls are still
  served; their rows are written once the lock is gone, each exactly once; once the
  rows waiting reach ``LEDGER_BACKLOG_MAX`` new calls get a JSON 503 with Retry-After
  (the backlog never grows without bound), and are served again once it is written.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import httpx
import pytest

from billing.models import Activity
from lab.benchmark.run import redis_argv

from ..support import TEST_MODEL, SubprocessGateway, free_port, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)


def _chat(api_url: str, key: str, stream: bool = False) -> httpx.Response:
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return httpx.post(
        f"{api_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=20,
    )


class PrivateRedis:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        self.proc = subprocess.Popen(
            redis_argv(self.port),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.ping():
                return self
            time.sleep(0.05)
        raise RuntimeError("private redis-server did not start")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def keys(self, pattern: str) -> list[bytes]:
        import redis

        return redis.Redis.from_url(self.url).keys(pattern)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_redis_stopped_calls_still_served_and_learning_catches_up(market, tenant, emulator):
    redis_server = PrivateRedis().start()
    gateway = SubprocessGateway(
        env={"REDIS_URL": redis_server.url, "UBERLLM_SHARED_KEY_PREFIX": "outage"}
    )
    gateway.start()
    try:
        assert _chat(gateway.api_url, tenant.key).status_code == 200
        redis_server.stop()
        # The cheapest endpoint refuses while Redis is down: the gateway retries
        # elsewhere, serves, and marks alpha (in its memory now, in Redis later).
        emulator.control("alpha", status_override=500)
        statuses = [
            _chat(gateway.api_url, tenant.key, stream=i % 2 == 0).status_code for i in range(20)
        ]
        assert statuses == [200] * 20
        redis_server.start()
        deadline = time.monotonic() + 15
        while not redis_server.keys("outage:unusable:*") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert redis_server.keys("outage:unusable:*"), "the mark never reached Redis"
    finally:
        gateway.stop()
        redis_server.stop()


def _lock_activity_table(seconds: float, locked: threading.Event) -> None:
    from django.db import connections

    conn = connections.create_connection("default")
    try:
        with conn.cursor() as cursor:
            if conn.vendor == "sqlite":
                cursor.execute("BEGIN EXCLUSIVE")
            else:
                cursor.execute("BEGIN")
                cursor.execute("LOCK TABLE billing_activity IN ACCESS EXCLUSIVE MODE")
            locked.set()
            time.sleep(seconds)
            cursor.execute("COMMIT")
    finally:
        conn.close()


def test_database_locked_calls_served_rows_written_once_after(gateway, tenant, emulator):
    assert _chat(gateway.api_url, tenant.key).status_code == 200  # warm: key, catalog
    wait_finished_rows(1)
    locked = threading.Event()
    locker = threading.Thread(target=_lock_activity_table, args=(6.0, locked))
    locker.start()
    assert locked.wait(5)
    statuses = [_chat(gateway.api_url, tenant.key, stream=i % 2 == 0).status_code for i in range(6)]
    answered_while_locked = locker.is_alive()
    locker.join()
    assert statuses == [200] * 6
    assert answered_while_locked, "the calls waited for the locked table"
    rows = wait_finished_rows(7)
    assert len(rows) == 7 and all(r.status == Activity.Status.SUCCESS for r in rows)


def test_a_ledger_backlog_at_its_limit_answers_503_until_written(gateway, tenant, emulator):
    """Round 13: the backlog of unwritten ledger rows had no bound but the queue's
    (a million items, then rows dropped); past ``LEDGER_BACKLOG_MAX`` calls are refused
    before they start, so no row is lost and memory stays bounded."""
    from django.conf import settings

    from billing.ledger_writer import ledger_writer

    assert _chat(gateway.api_url, tenant.key).status_code == 200  # warm: key, catalog
    wait_finished_rows(1)
    saved = settings.UBERLLM["LEDGER_BACKLOG_MAX"]
    settings.UBERLLM["LEDGER_BACKLOG_MAX"] = 4
    locked = threading.Event()
    locker = threading.Thread(target=_lock_activity_table, args=(6.0, locked))
    locker.start()
    try:
        assert locked.wait(5)
        replies = [_chat(gateway.api_url, tenant.key, stream=True) for _ in range(4)]
        statuses = [reply.status_code for reply in replies]
        assert locker.is_alive(), "the calls waited for the locked table"
        served = statuses.count(200)
        assert 1 <= served < 4 and statuses == [200] * served + [503] * (4 - served)
        refused = replies[-1]
        assert refused.json()["error"]["code"] == "overloaded"
        assert int(refused.headers["retry-after"]) >= 1
        assert ledger_writer.pending() >= 4
        locker.join()
        rows = wait_finished_rows(1 + served)
        assert len(rows) == 1 + served  # the refused calls have none
        assert all(r.status == Activity.Status.SUCCESS for r in rows)
        assert _chat(gateway.api_url, tenant.key).status_code == 200  # written: admitted
        assert len(wait_finished_rows(2 + served)) == 2 + served
    finally:
        settings.UBERLLM["LEDGER_BACKLOG_MAX"] = saved
        locker.join()
