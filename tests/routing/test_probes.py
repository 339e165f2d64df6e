"""Probes (R5) against the emulator, called directly and through a real Celery worker."""

import os
import subprocess
import sys
import time

import pytest
from django.conf import settings

from routing.models import ProbeResult, SpeedSample
from routing.tasks import probe_endpoint_task, probe_endpoints_task
from uberllm.celery import app as celery_app

from ..support import database_url, wait_learnt
from .test_smart_live import LONG, SHORT, _served, fresh

pytestmark = pytest.mark.django_db(transaction=True)
SIZES = [2_000, 40_000, 150_000]  # one probe size per bucket we care about


@pytest.fixture
def probe_settings():
    conf = settings.UBERLLM
    saved = dict(conf)
    # Probes by volume off: these tests have no customer traffic (the rule is tested on
    # its own below).
    conf.update(PROBE_SIZES=SIZES, PROBE_CONCURRENCY=3, PROBE_SPEND_SHARE=0.0)
    yield conf
    conf.clear()
    conf.update(saved)


def run_cycle(cycle: int) -> dict[str, int]:
    """The beat task, its per-endpoint tasks run inline (eager); counts by status."""
    celery_app.conf.task_always_eager = True
    try:
        queued = probe_endpoints_task(cycle=cycle)
    finally:
        celery_app.conf.task_always_eager = False
    statuses = list(ProbeResult.objects.filter(cycle=cycle).values_list("status", flat=True))
    return {"queued": queued} | {status: statuses.count(status) for status in set(statuses)}


def test_probe_cycle_records_samples_per_size_and_is_idempotent(market, emulator, probe_settings):
    counts = run_cycle(1)
    # One task per endpoint: alpha and bravo x 3 sizes; charlie ($0.30: above the usual
    # $0.20 and not 50% below the $0.50 list price) can never be picked for speed, so it
    # is not probed (issue 10).
    assert counts == {"queued": 2, "ok": 6}
    rows = ProbeResult.objects.filter(cycle=1)
    assert sorted({r.prompt_tokens for r in rows}) == SIZES
    assert all(r.cost_usd > 0 and r.ttft_ms is not None for r in rows)
    samples = SpeedSample.objects.filter(is_probe=True)
    assert sorted({s.bucket for s in samples}) == ["32k-128k", "<8k", ">128k"]
    log = emulator.log()
    assert {r["max_tokens"] for r in log} == {1} and all(r["stream"] for r in log)
    assert all(r["cached_tokens"] == 0 for r in log)  # every probe prompt is new
    assert probe_endpoints_task(cycle=1) == 0  # the same cycle again queues nothing
    assert probe_endpoint_task(cycle=1, endpoint_id=market["alpha"].id) == {}
    assert ProbeResult.objects.count() == 6 and len(emulator.log()) == 6


def test_probe_skips_sizes_above_context_length(market, emulator, probe_settings):
    market["bravo"].context_length = 100_000
    market["bravo"].save()
    run_cycle(2)
    sizes = set(
        ProbeResult.objects.filter(endpoint=market["bravo"]).values_list("prompt_tokens", flat=True)
    )
    assert sizes == {2_000, 40_000}


def test_slowdown_at_one_size_moves_only_long_prompts(client, emulator, probe_settings):
    # Short and long calls measured: alpha is cheapest and fast everywhere.
    for slug in ("alpha", "bravo"):
        for messages in (LONG, SHORT):
            for _ in range(3):
                _served(client, fresh(messages), order=[slug], allow_fallbacks=False)
    wait_learnt()  # their samples are in the database before the probe cycle reads it
    probe_settings["PROBE_SIZES"] = [40_000]
    # the real calls above count as older than a probe period (else they stand in for
    # this cycle's probe: test_probes_skip_buckets_real_traffic_measured_this_period)
    probe_settings["PROBE_PERIOD_S"] = 0.001
    # alpha now prefills 10x slower, but only above 30k tokens (~1.6 s at 40k).
    emulator.control(
        "alpha", slow_above_tokens=30_000, slow_factor=10.0, prefill_tokens_per_s=250_000
    )
    run_cycle(10)  # one cycle: the slow probe is confirmed at once
    alpha = ProbeResult.objects.get(cycle=10, endpoint__provider__slug="alpha")
    assert (
        SpeedSample.objects.filter(
            endpoint__provider__slug="alpha", is_probe=True, restarts_window=True
        ).count()
        == 1
    )
    assert alpha.ttft_ms > 1000
    wait_learnt()
    assert _served(client, fresh(LONG)) == "bravo"
    assert _served(client, fresh(SHORT)) == "alpha"


def test_a_lone_stall_in_a_probe_does_not_restart_the_window(client, emulator, probe_settings):
    for _ in range(3):
        _served(client, fresh(LONG), order=["alpha"], allow_fallbacks=False)
    wait_learnt()  # their samples are in the database: alpha is not cold (no <8k probe)
    probe_settings["PROBE_SIZES"] = [40_000]
    probe_settings["PROBE_PERIOD_S"] = 0.001  # the real calls above: older than a period
    emulator.control("alpha", stall={"probability": 1.0, "extra_s": [1.5, 1.5]})
    emulator.control("bravo", ttft_base_s=0.01)

    import threading

    def unstall():  # only the first probe stalls; its confirmations are fast
        emulator.wait_for(lambda r: r["stalled"], provider="alpha", timeout=10)
        emulator.control("alpha", stall={"probability": 0.0})

    thread = threading.Thread(target=unstall)
    thread.start()
    run_cycle(20)
    thread.join()
    assert SpeedSample.objects.filter(endpoint__provider__slug="alpha", is_probe=True).count() == 3
    assert not SpeedSample.objects.filter(restarts_window=True).exists()


def test_probe_task_through_a_real_celery_worker(market, emulator, probe_settings):
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "UBERLLM_READ_DOT_ENV": "false",
        "UBERLLM_ALLOW_PRIVATE_UPSTREAMS": "true",
        "UBERLLM_PROBE_SIZES": "2000",
        "UBERLLM_PROBE_SPEND_SHARE": "0",  # no customer traffic here: probe by need only
        "UBERLLM_SHARED_KEY_PREFIX": settings.UBERLLM["SHARED_KEY_PREFIX"],
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "uberllm",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "warning",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
        ],
        env=env,
        cwd=settings.BASE_DIR,
    )
    try:
        probe_endpoints_task.apply_async(kwargs={"cycle": 99})
        deadline = time.monotonic() + 60  # the worker runs the fan-out, then its tasks
        # alpha (the cheapest) is always probed; bravo only while it is the faster one
        # (probes by need: once the worker's cold-start probes measured both at 2k, a
        # dearer and slower bravo could not take <8k traffic), charlie never (R2.9)
        while not ProbeResult.objects.filter(cycle=99, endpoint=market["alpha"]).exists():
            assert time.monotonic() < deadline, "the worker did not run the probe task"
            assert worker.poll() is None, "the worker died"
            time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(20)
    assert set(ProbeResult.objects.filter(cycle=99).values_list("status", flat=True)) == {"ok"}


def _targets(cycle: int, **kwargs) -> set[tuple[str, int]]:
    from routing.probes import probe_targets

    return {(t.route.provider_slug, t.prompt_tokens) for t in probe_targets(cycle, **kwargs)}


def test_cold_endpoints_are_probed_at_once_below_8k_too(market, probe_settings):
    from routing.probes import COLD_PROBE_TOKENS

    probe_settings.update(PROBE_SIZES=[40_000])
    assert _targets(5, cold_only=True) == {
        (slug, size)
        for slug in ("alpha", "bravo")  # charlie is never picked for speed: not probed
        for size in (40_000, COLD_PROBE_TOKENS)
    }
    SpeedSample.objects.create(endpoint=market["alpha"], bucket="<8k", ttft_ms=500)
    cold = _targets(5, cold_only=True)
    assert not any(slug == "alpha" for slug, _ in cold)  # it has data: not cold any more
    assert ("alpha", 40_000) in _targets(5)  # the regular cycle still probes it


def test_probes_skip_buckets_real_traffic_measured_this_period(market, probe_settings):
    alpha = market["alpha"]
    SpeedSample.objects.create(endpoint=alpha, bucket="32k-128k", ttft_ms=900)  # a real call
    SpeedSample.objects.create(endpoint=alpha, bucket=">128k", ttft_ms=900, is_probe=True)
    SpeedSample.objects.create(endpoint=alpha, bucket="<8k", ttft_ms=300, cached=True)
    alpha_sizes = {size for slug, size in _targets(6) if slug == "alpha"}
    # 40k (32k-128k) was measured by real uncached traffic; a probe or a cached call
    # (not comparable with an uncached probe) does not count
    assert alpha_sizes == {2_000, 150_000}
    assert {size for slug, size in _targets(6) if slug == "bravo"} == set(SIZES)


def test_probe_of_an_anthropic_endpoint(market, emulator, probe_settings):
    """An endpoint speaking Messages is probed in its protocol."""
    alpha = market["alpha"]
    alpha.protocol = "anthropic_messages"
    alpha.save()
    assert run_cycle(1)["ok"] == 6
    alpha_log = emulator.log("alpha")
    assert len(alpha_log) == 3 and all(r["protocol"] == "anthropic_messages" for r in alpha_log)
    rows = ProbeResult.objects.filter(cycle=1, endpoint_id=alpha.id)
    assert len(rows) == 3 and all(r.ttft_ms is not None for r in rows)


def test_a_bare_role_chunk_is_not_the_first_token():
    """``message_start`` becomes a role chunk before any token: not the probe's TTFT."""
    from routing.probes import _has_token

    assert not _has_token({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
    assert _has_token({"choices": [{"delta": {"content": "a"}}]})
    assert _has_token({"choices": [{"delta": {}, "finish_reason": "length"}]})


def test_daily_probe_budget_stops_probes_until_the_next_utc_day(market, emulator, probe_settings):
    from datetime import timedelta
    from decimal import Decimal

    from django.db.models import Sum
    from django.utils import timezone

    from routing.health import probe_spend_today

    # every probe of each cycle, whatever the first cycle measured (by need, a dearer and
    # slower endpoint's probes would be skipped: tested apart)
    probe_settings["PROBE_BY_NEED"] = False
    probe_settings["PROBE_DAILY_BUDGET_USD"] = 0  # no limit: the whole cycle
    assert run_cycle(1) == {"queued": 2, "ok": 6}
    spent = probe_spend_today()
    assert spent == ProbeResult.objects.aggregate(total=Sum("cost_usd"))["total"] > 0
    calls = len(emulator.log())
    # a budget the day has already used up (the cheapest probe costs more than what is
    # left): the next cycle sends nothing, the emulator sees no call
    cheapest = min(ProbeResult.objects.values_list("cost_usd", flat=True))
    probe_settings["PROBE_DAILY_BUDGET_USD"] = float(spent + cheapest * 2)
    assert run_cycle(2) == {"queued": 0}
    assert len(emulator.log()) == calls
    # a budget with room for some probes (each reserves 3 calls: its confirmations):
    # they are sent, and the day stays within it
    probe_settings["PROBE_DAILY_BUDGET_USD"] = float(spent + cheapest * Decimal("3.5"))
    counts = run_cycle(3)
    assert 1 <= counts.get("ok", 0) < 6
    assert probe_spend_today() <= spent + cheapest * Decimal("3.5")
    # the next UTC day: the spend starts from 0 again
    ProbeResult.objects.update(created_at=timezone.now() - timedelta(days=1))
    assert probe_spend_today() == 0
    probe_settings["PROBE_DAILY_BUDGET_USD"] = float(spent * 4)  # 3x reserved a probe
    assert run_cycle(4)["ok"] == 6


def test_probes_by_need_skip_a_dearer_slower_endpoint(market, probe_settings):
    """Issue 10: bravo is dearer than alpha and slower at >128k, where alpha is fast
    enough: bravo getting faster would not take that traffic, so it is not probed there
    (alpha, the pick and the fastest, is); at sizes where bravo is the fastest, or
    without data, it is. With PROBE_BY_NEED off, every size again."""
    for slug, ms in (("alpha", 2_000), ("bravo", 3_000)):  # both probe samples (not real)
        SpeedSample.objects.create(endpoint=market[slug], bucket=">128k", ttft_ms=ms, is_probe=True)
    SpeedSample.objects.create(
        endpoint=market["alpha"], bucket="32k-128k", ttft_ms=9_000, is_probe=True
    )
    SpeedSample.objects.create(
        endpoint=market["bravo"], bucket="32k-128k", ttft_ms=1_000, is_probe=True
    )
    targets = _targets(7)
    assert {size for slug, size in targets if slug == "alpha"} == set(SIZES)
    # 2k: no data, probed; 40k: bravo is the fastest (alpha 9 s is too slow); 150k: skipped
    assert {size for slug, size in targets if slug == "bravo"} == {2_000, 40_000}
    probe_settings["PROBE_BY_NEED"] = False
    assert {size for slug, size in _targets(7) if slug == "bravo"} == set(SIZES)


def _customer_spend(tenant, *, prompt_tokens: int, cost) -> None:
    from django.utils import timezone

    from billing.models import Activity

    from ..support import TEST_MODEL

    Activity.objects.create(
        request_id=f"gen-{time.time_ns()}",
        organisation=tenant.organisation,
        api_key=tenant.api_key,
        model_slug=TEST_MODEL,
        status="success",
        prompt_tokens=prompt_tokens,
        cost_usd=cost,
        created_at=timezone.now(),
    )


def test_probes_by_volume_follow_what_customers_spend_per_size(market, tenant, probe_settings):
    """PROBE_SPEND_SHARE (issue 10, probe economy): over the last hour the probes of a
    model's size bucket cost at most that share of what its customers paid for requests
    of that size; an endpoint without data in a bucket is probed anyway."""
    from routing.probes import probe_cost, probe_targets

    for slug in ("alpha", "bravo"):
        for bucket in ("<8k", "32k-128k", ">128k"):
            SpeedSample.objects.create(
                endpoint=market[slug], bucket=bucket, ttft_ms=1_000, is_probe=True
            )
    probe_settings.update(PROBE_BY_NEED=False, PROBE_SPEND_SHARE=0.0)
    costs = {(t.route.provider_slug, t.prompt_tokens): probe_cost(t) for t in probe_targets(8)}
    assert len(costs) == 6  # off: every endpoint and size
    probe_settings.update(PROBE_SPEND_SHARE=0.25)
    assert _targets(8) == set()  # no customer paid for anything: nothing is worth probing
    # customers paid 4x alpha's 150k probe for >128k requests: that probe, not bravo's too
    _customer_spend(tenant, prompt_tokens=150_000, cost=4 * costs[("alpha", 150_000)])
    _customer_spend(tenant, prompt_tokens=1_000, cost=costs[("alpha", 2_000)])  # 1x: too little
    assert _targets(8) == {("alpha", 150_000)}
    # what probes of that size cost in the last hour counts against it
    ProbeResult.objects.create(
        cycle=7,
        endpoint=market["bravo"],
        prompt_tokens=150_000,
        status="ok",
        ttft_ms=900,
        cost_usd=costs[("bravo", 150_000)],
    )
    assert _targets(8) == set()
    # no data in a bucket: probed whatever the spend (a cold start must learn)
    SpeedSample.objects.filter(endpoint=market["bravo"], bucket="<8k").delete()
    assert _targets(8) == {("bravo", 2_000)}
