"""/metrics: the functions the hot path calls show up in a real scrape, behind a token,
and multiprocess mode sums what separate processes recorded."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from common import metrics

from ..support import SubprocessGateway

TOKEN = "scrape-token-for-tests"


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in an exposition, or None when absent."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return None


@pytest.fixture
def metrics_token():
    settings.UBERLLM["METRICS_TOKEN"] = TOKEN
    yield TOKEN
    settings.UBERLLM["METRICS_TOKEN"] = ""


def scrape(base_url: str, token: str = TOKEN) -> httpx.Response:
    return httpx.get(f"{base_url}/metrics", headers={"Authorization": f"Bearer {token}"})


def record_one_call(provider: str = "alpha") -> None:
    metrics.observe_call(
        model="test/model-a",
        provider=provider,
        status="success",
        protocol="stream",
        bucket="lt32k",
        ttft_s=0.3,
        total_s=1.5,
        attempts=3,
        retries=1,
        hedged=True,
        hedge_won=True,
        cancelled=False,
        cost_usd=0.002,
        platform_cost_usd=0.0005,
    )


def test_scrape_shows_what_the_functions_recorded(gateway, metrics_token):
    before = scrape(gateway.base_url).text
    record_one_call()
    metrics.observe_upstream_attempt("alpha", "timeout")
    metrics.observe_unusable_mark("alpha")
    metrics.set_hedge_budget_remaining(4.25)
    metrics.set_inflight(3)
    metrics.observe_ledger_lag(0.02)
    metrics.set_queue_size("celery", 7)
    response = scrape(gateway.base_url)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    after = response.text

    def delta(name: str, **labels: str) -> float:
        return (sample(after, name, **labels) or 0) - (sample(before, name, **labels) or 0)

    call = {"model": "test/model-a", "provider": "alpha", "status": "success", "protocol": "stream"}
    assert delta("uberllm_requests_total", **call) == 1
    assert delta("uberllm_ttft_seconds_count", provider="alpha", bucket="lt32k") == 1
    assert delta("uberllm_ttft_seconds_bucket", provider="alpha", bucket="lt32k", le="0.5") == 1
    assert delta("uberllm_ttft_seconds_bucket", provider="alpha", bucket="lt32k", le="0.25") == 0
    assert delta("uberllm_request_duration_seconds_sum", provider="alpha", bucket="lt32k") == 1.5
    assert delta("uberllm_retries_total", model="test/model-a") == 1
    assert delta("uberllm_hedges_total", provider="alpha", result="won") == 1
    assert delta("uberllm_cost_usd_total", provider="alpha") == pytest.approx(0.002)
    assert delta("uberllm_platform_cost_usd_total", provider="alpha", kind="hedge") == (
        pytest.approx(0.0005)
    )
    assert delta("uberllm_upstream_attempts_total", provider="alpha", outcome="timeout") == 1
    assert delta("uberllm_unusable_marks_total", provider="alpha") == 1
    assert delta("uberllm_ledger_write_lag_seconds_count") == 1
    assert sample(after, "uberllm_hedge_budget_remaining_usd") == 4.25
    assert sample(after, "uberllm_inflight_requests") == 3
    assert sample(after, "uberllm_queue_size", queue="celery") == 7


def test_metrics_need_the_token(gateway, metrics_token):
    assert scrape(gateway.base_url, token="wrong").status_code == 401
    assert httpx.get(f"{gateway.base_url}/metrics").status_code == 401


def test_metrics_do_not_exist_without_a_configured_token(gateway):
    settings.UBERLLM["METRICS_TOKEN"] = ""
    response = scrape(gateway.base_url, token="anything")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == 404


WRITER = """
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")
django.setup()
from common import metrics
metrics.observe_call(model="test/model-a", provider="bravo", status="success", protocol="json",
    bucket="lt32k", ttft_s=None, total_s=0.7, cost_usd=0.25)
metrics.set_inflight(2)
"""


def test_multiprocess_scrape_sums_every_process(transactional_db, tmp_path):
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder), "UBERLLM_READ_DOT_ENV": "false"}
    for _ in range(2):  # two separate processes record one call each, then exit
        subprocess.run([sys.executable, "-c", WRITER], env=env, cwd=settings.BASE_DIR, check=True)
    gateway = SubprocessGateway(
        workers=2, env={"PROMETHEUS_MULTIPROC_DIR": str(folder), "UBERLLM_METRICS_TOKEN": TOKEN}
    ).start()
    try:
        text = scrape(f"http://127.0.0.1:{gateway.port}").text
    finally:
        gateway.stop()
    call = {"model": "test/model-a", "provider": "bravo", "status": "success", "protocol": "json"}
    assert sample(text, "uberllm_requests_total", **call) == 2
    assert sample(text, "uberllm_cost_usd_total", provider="bravo") == pytest.approx(0.5)
    # In-flight is a live sum: the writers have exited, so they no longer count.
    assert sample(text, "uberllm_inflight_requests") == 0


def test_grafana_dashboard_loads_and_shows_every_defined_metric():
    import json
    import re

    dashboard = json.loads((settings.BASE_DIR / "deploy/grafana/uberllm.json").read_text())
    defined = {
        family.name
        for family in text_string_to_metric_families(metrics.render().decode())
        if family.name.startswith("uberllm_")
    }
    shown = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"uberllm_[a-z_]+", target["expr"])
    }
    assert defined, "no metric is defined"
    assert shown == defined, (shown - defined, defined - shown)


def test_celery_task_runs_are_counted_and_timed(db):
    from routing.tasks import hedge_budget_open_day_task

    def count(state: str) -> float:
        text = metrics.render().decode()
        labels = {"task": "routing.hedge_budget_open_day"}
        return sample(text, "uberllm_celery_tasks_total", state=state, **labels) or 0

    def timed() -> float:
        text = metrics.render().decode()
        name = "uberllm_celery_task_duration_seconds_count"
        return sample(text, name, task="routing.hedge_budget_open_day") or 0

    runs, durations = count("success"), timed()
    hedge_budget_open_day_task.apply()
    assert count("success") == runs + 1
    assert timed() == durations + 1


def test_queue_sizes_are_read_from_the_broker():
    from routing.tasks import prune_history_task, sample_queue_sizes_task
    from uberllm.celery import app

    before = sample_queue_sizes_task()["celery"]
    with app.connection_for_write() as connection:  # two messages nobody consumes
        for _ in range(2):
            prune_history_task.apply_async(connection=connection, expires=60)
    try:
        assert sample_queue_sizes_task() == {"celery": before + 2}
        assert sample(metrics.render().decode(), "uberllm_queue_size", queue="celery") == before + 2
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge("celery")
