"""The fleet on one machine (issue 14): two gateway instances (uvicorn, 2 workers each)
behind nginx, a Celery worker and beat, on PostgreSQL and Redis; the emulator as the
upstream market. Runs only on PostgreSQL + Redis (``make fleet-check``): skipped on the
embedded default. Prints its figures (``-s``)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from contextlib import closing
from decimal import Decimal

import httpx
import orjson
import pytest
from django.conf import settings
from openai import OpenAI

from lab.fleet import Fleet, FleetConfig

from ..ops.helpers import chat, dashboard_post, dashboard_session, status_within
from ..routing.test_smart_live import LONG, SHORT, _served, fresh
from ..support import (
    TEST_MODEL,
    close_other_connections,
    database_url,
    free_port,
    stream_chat,
    wait_finished_rows,
)

REDIS_URL = os.environ.get("REDIS_URL", "")
ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else "")
pytestmark = [
    pytest.mark.fleet,
    pytest.mark.skipif(
        not (ON_POSTGRES and REDIS_URL), reason="the fleet needs PostgreSQL + Redis"
    ),
    pytest.mark.skipif(not NGINX, reason="nginx is not installed (apt-get install -y nginx)"),
    pytest.mark.django_db(transaction=True),
]
PREFIX = f"fleet-{os.getpid()}"
FIGURES: dict[str, str] = {}


@pytest.fixture(scope="module")
def fleet(django_db_setup, django_db_blocker, emulator_server):
    with django_db_blocker.unblock():
        url = database_url()
    env = {
        "DATABASE_URL": url,
        "REDIS_URL": REDIS_URL,
        "UBERLLM_READ_DOT_ENV": "false",
        "UBERLLM_SHARED_KEY_PREFIX": PREFIX,
        "UBERLLM_ALLOW_PRIVATE_UPSTREAMS": "true",
        "UBERLLM_EXPLORATION_RATE": "0",
        "UBERLLM_PROBE_PERIOD_S": "3600",
        # Long caches: only the pushed events can explain a change seen within 1 s.
        "UBERLLM_API_KEY_CACHE_TTL_S": "60",
        "UBERLLM_CATALOG_CACHE_TTL_S": "60",
        "UBERLLM_SPEED_CACHE_TTL_S": "1",
        # The whole daily hedge budget from 00:00 (not paced over the day): the budget
        # test must not depend on the time of day it runs at.
        "UBERLLM_HEDGE_BUDGET_BURST_S": "86400",
        # Live rows heartbeat often, so the reconciler (beat) can close a killed
        # instance's rows within seconds without touching the streams still running.
        "UBERLLM_RECONCILE_AFTER_S": "3",
        "UBERLLM_LEDGER_HEARTBEAT_S": "0.3",
    }
    config = FleetConfig(
        run_dir=settings.VAR_DIR / "fleet" / f"test-{os.getpid()}",
        lb_port=free_port(),
        gateway_ports=[free_port(), free_port()],
        env=env,
        drain_timeout_s=30,
        nginx=NGINX,
    )
    started = time.monotonic()
    running = Fleet(config).start()
    FIGURES["fleet start (2 instances x 2 workers, worker, beat, nginx)"] = (
        f"{time.monotonic() - started:.1f} s"
    )
    yield running
    running.stop()
    with django_db_blocker.unblock():
        close_other_connections()
    print("\nFleet figures:")
    for name, value in FIGURES.items():
        print(f"  {name}: {value}")


@pytest.fixture
def shared(fleet, market, tenant, emulator):
    """The test process on the fleet's shared namespace (Redis keys and events)."""
    from common.events import CATALOG_CHANGED, publish

    settings.UBERLLM["SHARED_KEY_PREFIX"] = PREFIX
    configured = settings.REDIS_URL
    settings.REDIS_URL = REDIS_URL
    # The test's catalog was imported before this process published to the fleet's
    # Redis: tell the instances, as an import on a fleet member would have.
    publish(CATALOG_CHANGED, {"reason": "test catalog imported"})
    yield fleet
    settings.REDIS_URL = configured
    wait_database_quiet()


def wait_database_quiet(timeout: float = 10.0) -> None:
    """Until no other session runs a statement (the fleet's learning and ledger writes
    land after the responses): flushing the test database meanwhile would deadlock."""
    from django.db import connection

    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 3 and time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state <> 'idle'"
            )
            busy = cursor.fetchone()[0]
        quiet = 0 if busy else quiet + 1
        time.sleep(0.1)


def openai_client(base_url: str, key: str) -> OpenAI:
    return OpenAI(base_url=f"{base_url}/api/v1", api_key=key, max_retries=0, timeout=60)


def test_routing_learnt_on_one_instance_is_used_by_the_other(shared, tenant, emulator):
    first, second = shared.gateway_url(0), shared.gateway_url(1)
    with openai_client(first, tenant.key) as client:
        assert _served(client, fresh(LONG)) == "alpha"  # no speed data: the cheapest
        emulator.control("alpha", prefill_tokens_per_s=20_000)  # alpha now slow on long prompts
        for slug in ("alpha", "bravo", "charlie"):
            for messages in (LONG, SHORT):
                for _ in range(3):
                    _served(client, fresh(messages), order=[slug], allow_fallbacks=False)
    wait_finished_rows(19)
    time.sleep(1.1)  # the other instance's speed cache (1 s) refreshes from the shared store
    with openai_client(second, tenant.key) as other:
        assert _served(other, fresh(LONG)) == "bravo"
        assert _served(other, fresh(SHORT)) == "alpha"


def test_a_revocation_on_one_instance_is_enforced_on_the_other_within_1s(shared, tenant):
    first, second = shared.gateway_url(0), shared.gateway_url(1)
    assert chat(second, tenant.key).status_code == 200  # cached there for 60 s
    with closing(dashboard_session(first, tenant.user.username)) as session:
        dashboard_post(session, f"/keys/{tenant.api_key.id}/revoke/")
    assert status_within(second, tenant.key, 401) == 401
    assert chat(shared.lb_url, tenant.key).status_code == 401


def test_a_monthly_limit_holds_across_instances(shared, tenant):
    from billing.models import Activity
    from billing.services import api_key_set_monthly_limit

    # A long prompt costs ~$0.0035 on alpha, and reserves its worst case first (~$0.013:
    # 1.25x the prompt at charlie's price): about five are served, then a 402.
    limit = Decimal("0.03")
    api_key_set_monthly_limit(api_key=tenant.api_key, limit_usd=limit)
    urls = [shared.gateway_url(0), shared.gateway_url(1)]
    long_body = {"messages": fresh(LONG), "max_tokens": 2}
    served = 0
    for attempt in range(40):  # alternate instances until one refuses
        status = chat(urls[attempt % 2], tenant.key, **long_body).status_code
        if status == 402:
            break
        assert status == 200
        served += 1
    assert served >= 2, "the limit refused before any spend"
    wait_finished_rows(served)
    spent = sum(row.cost_usd for row in Activity.unscoped_objects.all())
    assert spent <= limit  # a hard limit (billing.limits): reserved before each call
    # Both instances refuse the same request (they share the Redis budget; a smaller
    # one whose worst case fits in what is left would still be served).
    for url in urls:
        assert status_within(url, tenant.key, 402, seconds=2.5, **long_body) == 402
    FIGURES["monthly limit $0.03: spent when refused"] = f"${spent:.4f} ({served} calls)"


def test_the_hedge_budget_is_never_overspent_across_instances(shared, tenant, emulator):
    """Long streams through the load balancer to both instances (4 processes) while the
    cheapest provider stalls: every one wants a hedge leg, the day's budget pays for
    about two, and the shared row is never overspent."""
    from concurrent.futures import ThreadPoolExecutor

    from routing.budget import hedge_budget_open_day, nano
    from routing.models import HedgeBudgetDay

    with openai_client(shared.lb_url, tenant.key) as client:
        for slug in ("alpha", "bravo", "charlie"):  # speed data: all fast enough
            for _ in range(3):
                _served(client, fresh(LONG), order=[slug], allow_fallbacks=False)
    wait_finished_rows(9)
    time.sleep(1.1)  # every instance's speed snapshot (1 s) has the samples
    day = hedge_budget_open_day()
    budget = nano(Decimal("0.02"))  # a hedge of ~35k tokens reserves ~$0.007-0.011
    HedgeBudgetDay.objects.filter(id=day.id).update(budget_nanousd=budget, spent_nanousd=0)
    emulator.control("alpha", ttft_base_s=2.0)  # the cheapest stalls: hedges are wanted

    def stream_one(_: int) -> int:
        body = {"model": TEST_MODEL, "messages": fresh(LONG), "stream": True, "max_tokens": 2}
        with stream_chat(f"{shared.lb_url}/api/v1", tenant.key, body, timeout=60) as response:
            for _ in response.iter_lines():
                pass
            return response.status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(stream_one, range(12)))
    assert statuses == [200] * 12
    wait_finished_rows(21)
    wait_database_quiet()
    day.refresh_from_db()
    assert day.hedges >= 1, "no hedge was started: the test proves nothing"
    assert day.spent_nanousd <= day.budget_nanousd
    FIGURES["hedge budget $0.02 across 4 processes, 12 stalled long streams"] = (
        f"{day.hedges} hedges reserved, spent ${day.spent_usd:.6f}"
    )


def stream_lines(base_url: str, key: str, lines: list[str], started: threading.Event) -> None:
    body = {
        "model": TEST_MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": f"{time.time_ns()} tell me"}],
    }
    try:
        with stream_chat(f"{base_url}/api/v1", key, body, timeout=60) as response:
            lines.append(f"status {response.status_code}")
            lines.append(f"id {response.headers.get('X-Generation-Id', '')}")
            lines.append(f"upstream {response.headers.get('X-Upstream', '')}")
            for line in response.iter_lines():
                if line.startswith("data: "):
                    lines.append(line[6:])
                    started.set()
    except httpx.HTTPError as exc:
        lines.append(f"cut {type(exc).__name__}")
    finally:
        lines.append(f"ended {time.monotonic()}")
        started.set()


def slow_streams(emulator, seconds: float = 3.0, tokens: int = 60) -> None:
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, output_tokens_per_s=tokens / seconds, default_output_tokens=tokens)


def complete(lines: list[str]) -> bool:
    """Answered 200 and ended with [DONE], never cut (the last line is "ended <t>")."""
    return (
        lines[:1] == ["status 200"]
        and lines[-2:-1] == ["[DONE]"]
        and not any(line.startswith("cut") for line in lines)
    )


def ended_at(lines: list[str]) -> float:
    return float(lines[-1].removeprefix("ended "))


def test_killing_an_instance_mid_stream_loses_no_ledger_row(shared, tenant, emulator):
    from billing.models import Activity
    from billing.tasks import activity_reconcile_task

    slow_streams(emulator, seconds=10)
    lines: list[str] = []
    started = threading.Event()
    thread = threading.Thread(
        target=stream_lines, args=(shared.gateway_url(1), tenant.key, lines, started)
    )
    thread.start()
    assert started.wait(20) and lines[0] == "status 200"
    request_id = lines[1].removeprefix("id ")
    try:
        # A stream's pending row is written within milliseconds of acceptance
        # (billing/ledger_writer.py URGENT_LINGER_S); "mid-stream" is after that.
        deadline = time.monotonic() + 5
        while not Activity.unscoped_objects.filter(request_id=request_id).exists():
            assert time.monotonic() < deadline, "the stream's pending row was never written"
            time.sleep(0.05)
        shared.kill_gateway(1)
        thread.join(30)
        assert not complete(lines), "the stream outlived a SIGKILL"
        row = Activity.unscoped_objects.get(request_id=request_id)
        # The worker's reconciler closes it (no heartbeat for RECONCILE_AFTER_S = 3 s).
        deadline = time.monotonic() + 30
        while row.status == Activity.Status.PENDING and time.monotonic() < deadline:
            activity_reconcile_task.apply_async()
            time.sleep(1.0)
            row.refresh_from_db()
        assert row.status == Activity.Status.ERROR, row.status
        assert "stopped before the call ended" in row.error_message
    finally:  # the next tests need both instances, whatever happened here
        if shared.procs["gateway-1"].poll() is not None:
            shared.start_gateway(1)
        shared.wait_gateway_ready(1)


def test_a_rolling_restart_cuts_no_stream(shared, tenant, emulator):
    from billing.models import Activity

    slow_streams(emulator, seconds=8)
    streams = [([], threading.Event()) for _ in range(8)]
    threads = [
        threading.Thread(target=stream_lines, args=(shared.lb_url, tenant.key, lines, started))
        for lines, started in streams
    ]
    for thread in threads:
        thread.start()
    assert all(started.wait(20) for _, started in streams)
    during: list[int] = []
    stop = threading.Event()

    def new_requests_during_the_restart() -> None:
        while not stop.is_set():
            during.append(chat(shared.lb_url, tenant.key, max_tokens=2).status_code)

    traffic = threading.Thread(target=new_requests_during_the_restart)
    traffic.start()
    sigterm_at = time.monotonic()
    drained_s = shared.restart_gateway(0)
    stop.set()
    traffic.join(30)
    for thread in threads:
        thread.join(60)
    cut = [lines for lines, _ in streams if not complete(lines)]
    port = str(shared.config.gateway_ports[0])
    on_restarted = [lines for lines, _ in streams if lines[2].endswith(f":{port}")]
    outlived = [lines for lines in on_restarted if ended_at(lines) > sigterm_at]
    FIGURES["rolling restart"] = (
        f"{len(streams)} streams in flight ({len(on_restarted)} on the restarted instance, "
        f"{len(outlived)} of them ending after its SIGTERM), {len(cut)} cut; drained and "
        f"exited in {drained_s:.1f} s; {len(during)} new requests during it, "
        f"{sum(s != 200 for s in during)} failed"
    )
    assert not cut, cut[0][-3:]
    assert outlived, "no stream was in flight on the restarted instance: nothing tested"
    assert during and set(during) == {200}
    ids = [lines[1].removeprefix("id ") for lines, _ in streams]
    rows = wait_finished_rows(len(ids) + len(during))
    by_id = {row.request_id: row for row in rows}
    assert all(by_id[i].status == Activity.Status.SUCCESS for i in ids)
    text = b"".join(orjson.dumps(lines) for lines, _ in streams)
    assert b"error" not in text
