"""Hedging long streaming prompts (R3) against the emulator: the race, the loser's
cancellation, who pays for what, the daily budget, keep-alive comments."""

from decimal import Decimal

import httpx
import pytest
from django.conf import settings

from billing.models import Activity
from routing import budget
from routing.models import HedgeBudgetDay

from ..support import TEST_MODEL, wait_background_idle, wait_finished_rows, wait_learnt
from .test_smart_live import LONG, fresh

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hedge_settings():
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(
        HEDGE_DELAY_S=0.3,
        KEEPALIVE_AFTER_S=5.0,
        HEDGE_DAILY_BUDGET_USD=1.0,
        HEDGE_BUDGET_BURST_S=86_400.0,
    )  # not paced: independent of the time of day
    yield conf
    conf.clear()
    conf.update(saved)


def _measure_both_fast(client):
    """Give alpha and bravo (fast) speed data in the 32k-128k bucket: both fast enough."""
    for slug in ("alpha", "bravo", "charlie"):
        for _ in range(3):
            client.chat.completions.create(
                model=TEST_MODEL,
                messages=fresh(LONG),
                max_tokens=1,
                extra_body={"provider": {"order": [slug], "allow_fallbacks": False}},
            )
    wait_finished_rows(9)
    wait_learnt()


def _stream_text(client, messages) -> tuple[str, str, str]:
    chunks = list(
        client.chat.completions.create(
            model=TEST_MODEL,
            messages=messages,
            stream=True,
            max_tokens=4,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return chunks[-1].id, {c.model_extra["provider"] for c in chunks}.pop(), text


def _last_row() -> Activity:
    rows = wait_finished_rows(Activity.unscoped_objects.count())
    return max(rows, key=lambda r: r.id)


def test_delayed_hedge_wins_when_first_choice_stalls(client, emulator, hedge_settings):
    _measure_both_fast(client)
    emulator.reset()
    emulator.control("alpha", ttft_base_s=5.0)  # the cheapest fast provider stalls this time
    request_id, provider, text = _stream_text(client, fresh(LONG))
    assert provider == "bravo" and text
    wait_background_idle()  # the ledger writer has written the call's row
    row = Activity.unscoped_objects.get(request_id=request_id)
    attempts = {a.provider_slug: a for a in row.attempts.all()}
    assert attempts["alpha"].outcome == "hedge_lost" and not attempts["alpha"].hedge_leg
    assert attempts["bravo"].outcome == "success" and attempts["bravo"].hedge_leg
    # The customer pays for bravo's call only, at bravo's prices; alpha's cost is platform cost.
    assert row.hedged and row.provider_slug == "bravo"
    assert row.prices["input"] == "0.200000"
    assert row.hedge_cost_usd == attempts["alpha"].platform_cost_usd > 0
    day = HedgeBudgetDay.objects.get()
    assert day.spent_usd == row.hedge_cost_usd and day.hedges == 1
    # The loser's connection was closed as soon as bravo's first token arrived.
    alpha_log = emulator.wait_for(lambda r: r["status"] == "cancelled", provider="alpha")
    bravo_log = emulator.log("bravo")[-1]
    assert alpha_log["first_token_at"] is None
    assert alpha_log["ended_at"] - bravo_log["first_token_at"] < 0.5


def test_no_hedge_below_32k_or_without_stream(client, emulator, hedge_settings):
    emulator.control("alpha", ttft_base_s=0.6)
    _, provider, _ = _stream_text(client, [{"role": "user", "content": "short"}])
    assert provider == "alpha"
    reply = client.chat.completions.create(model=TEST_MODEL, messages=fresh(LONG), max_tokens=2)
    assert reply.model_extra["provider"] == "alpha"
    assert len(emulator.log("bravo")) == 0
    assert not any(r.hedged for r in wait_finished_rows(2))


def test_immediate_hedge_starts_both_legs_at_once(client, emulator, hedge_settings):
    hedge_settings["HEDGE_IMMEDIATE_FROM_TOKENS"] = 32_000  # so a 35k prompt counts as ">128k"
    _measure_both_fast(client)
    emulator.reset()
    emulator.control("alpha", ttft_base_s=1.0)
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "bravo"
    alpha, bravo = emulator.log("alpha")[-1], emulator.log("bravo")[-1]
    assert abs(alpha["received_at"] - bravo["received_at"]) < hedge_settings["HEDGE_DELAY_S"]
    assert emulator.wait_for(lambda r: r["status"] == "cancelled", provider="alpha")


def test_failed_leg_does_not_end_the_race(client, emulator, hedge_settings):
    hedge_settings["HEDGE_IMMEDIATE_FROM_TOKENS"] = 32_000
    _measure_both_fast(client)
    emulator.reset()
    emulator.control("alpha", ttft_base_s=0.5)
    emulator.control("bravo", status_override=500)
    _, provider, text = _stream_text(client, fresh(LONG))
    assert provider == "alpha" and text
    row = _last_row()
    outcomes = {a.provider_slug: a.outcome for a in row.attempts.all()}
    assert outcomes == {"alpha": "success", "bravo": "http_error"}
    assert row.hedged and row.hedge_cost_usd == 0  # nothing was cancelled: nothing to pay


def test_exhausted_budget_stops_hedging_until_the_next_day(
    client, emulator, hedge_settings, monkeypatch
):
    _measure_both_fast(client)
    emulator.reset()
    day = budget.utc_today()
    HedgeBudgetDay.objects.create(day=day, budget_nanousd=10**9, spent_nanousd=10**9)
    emulator.control("alpha", ttft_base_s=0.8)
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "alpha" and len(emulator.log("bravo")) == 0  # no budget: no hedge
    # 00:00 UTC: the beat task opens the new day's budget and hedging resumes.
    from datetime import timedelta

    from routing.tasks import hedge_budget_open_day_task

    monkeypatch.setattr(budget, "utc_today", lambda: day + timedelta(days=1))
    hedge_budget_open_day_task()
    assert HedgeBudgetDay.objects.get(day=day + timedelta(days=1)).spent_usd == 0
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "bravo"
    assert HedgeBudgetDay.objects.get(day=day).spent_usd == Decimal(1)  # untouched


def test_keepalive_comments_while_waiting_for_the_first_token(gateway, tenant, emulator):
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(KEEPALIVE_AFTER_S=0.1, KEEPALIVE_INTERVAL_S=0.1)
    try:
        emulator.control("alpha", ttft_base_s=0.6)
        lines = []
        with httpx.stream(
            "POST",
            f"{gateway.api_url}/chat/completions",
            json={
                "model": TEST_MODEL,
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
            },
            headers={"Authorization": f"Bearer {tenant.key}"},
            timeout=10,
        ) as response:
            assert response.status_code == 200
            lines = [line for line in response.iter_lines() if line]
    finally:
        conf.clear()
        conf.update(saved)
    first_data = next(i for i, line in enumerate(lines) if line.startswith("data: "))
    assert first_data >= 2 and all(line == ": PROCESSING" for line in lines[:first_data])
    assert lines[-1] == "data: [DONE]"


def test_admin_shows_daily_hedge_spend_against_budget(admin_client):
    HedgeBudgetDay.objects.create(
        day=budget.utc_today(), budget_nanousd=4 * 10**9, spent_nanousd=10**9, hedges=3
    )
    page = admin_client.get("/admin/routing/hedgebudgetday/").content.decode()
    assert "25%" in page and "$4.00" in page and "$1.00" in page


def test_two_processes_never_overspend_the_budget(transactional_db):
    """Two OS processes reserve from one day's budget at once: exactly what fits."""
    import os
    import subprocess
    import sys

    from ..support import database_url

    HedgeBudgetDay.objects.create(day=budget.utc_today(), budget_nanousd=10**9)
    script = (
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        "settings.UBERLLM['HEDGE_BUDGET_BURST_S'] = 86400.0\n"  # not paced: the whole $1 now
        "from decimal import Decimal\n"
        "from routing.budget import hedge_budget_try_reserve\n"
        "print(sum(hedge_budget_try_reserve(Decimal('0.01')) for _ in range(80)))\n"
    )
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "UBERLLM_READ_DOT_ENV": "false",
        "DJANGO_SETTINGS_MODULE": "uberllm.settings",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            cwd=settings.BASE_DIR,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    granted = sum(int(proc.communicate(timeout=120)[0].strip()) for proc in procs)
    day = HedgeBudgetDay.objects.get()
    assert granted == 100 and day.spent_usd == Decimal("1.00") and day.hedges == 100


def test_hedge_race_across_protocols(client, emulator, hedge_settings, market):
    """The stalled primary speaks Anthropic, the hedge leg OpenAI chat: the hedge wins and
    the Messages stream upstream is closed."""
    from routing.catalog import catalog_cache

    alpha = market["alpha"]
    alpha.protocol = "anthropic_messages"
    alpha.save()
    catalog_cache.invalidate()
    _measure_both_fast(client)
    emulator.reset()
    emulator.control("alpha", ttft_base_s=5.0)
    request_id, provider, text = _stream_text(client, fresh(LONG))
    assert provider == "bravo" and text
    wait_background_idle()
    row = Activity.unscoped_objects.get(request_id=request_id)
    attempts = {a.provider_slug: a.outcome for a in row.attempts.all()}
    assert attempts == {"alpha": "hedge_lost", "bravo": "success"}
    alpha_log = emulator.wait_for(lambda r: r["status"] == "cancelled", provider="alpha")
    assert alpha_log["protocol"] == "anthropic_messages"


def test_paced_budget_keeps_the_rest_of_the_day_for_later(
    client, emulator, hedge_settings, monkeypatch
):
    """Issue 10: the daily budget accrues over the UTC day (HEDGE_BUDGET_BURST_S). With
    the share accrued by now spent, a stalling primary gets no hedge although half of
    the day's budget is left; unpaced, the same request is hedged."""
    from datetime import UTC, datetime, time
    from types import SimpleNamespace

    hedge_settings.update(HEDGE_DAILY_BUDGET_USD=10.0, HEDGE_BUDGET_BURST_S=0.0)
    _measure_both_fast(client)
    emulator.reset()
    day = budget.utc_today()
    noon = datetime.combine(day, time(12), tzinfo=UTC).timestamp()
    monkeypatch.setattr(budget, "time", SimpleNamespace(time=lambda: noon))  # budget's clock
    assert budget.paced_allowance(Decimal(10), day) == Decimal(5)  # half the day: half
    HedgeBudgetDay.objects.create(day=day, budget_nanousd=10 * 10**9, spent_nanousd=5 * 10**9)
    assert budget.hedge_budget_left_usd(day) == 0  # paced: nothing left at noon
    wait_learnt()
    emulator.control("alpha", ttft_base_s=5.0)  # the cheapest fast provider stalls
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "alpha" and len(emulator.log("bravo")) == 0  # not hedged
    hedge_settings["HEDGE_BUDGET_BURST_S"] = 86_400.0  # not paced: the day's budget
    assert budget.hedge_budget_left_usd(day) == Decimal(5)
    wait_learnt()
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert len(emulator.log("bravo")) == 1  # hedged after 0.3 s
    assert provider == "bravo"  # and bravo answered first


def _measure_all_slow(client, emulator, ttft_s: float) -> None:
    """Every provider's normal long prefill takes ``ttft_s``: all three are fast enough
    (alpha, the cheapest, leads) and their typical 32k-128k TTFT is ``ttft_s``."""
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, ttft_base_s=ttft_s)
    _measure_both_fast(client)
    emulator.reset()


def _hedge_leg(row: Activity):
    return next(a for a in row.attempts.all() if a.hedge_leg)


def test_late_trigger_hedges_a_stall_not_a_normal_slow_prefill(client, emulator, hedge_settings):
    """R3.1 (issue 43): the hedge starts once alpha's first token is late for alpha: a
    0.8 s prefill is normal there (no hedge, although later than the 0.3 s floor); the
    same prompt stalled 4 s more is raced, and bravo wins."""
    _measure_all_slow(client, emulator, 0.8)
    request_id, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "alpha" and len(emulator.log("bravo")) == 0
    assert not _last_row().hedged
    emulator.control("alpha", stall={"probability": 1.0, "extra_s": [4.0, 4.0]})
    request_id, provider, text = _stream_text(client, fresh(LONG))
    assert provider == "bravo" and text
    wait_background_idle()
    row = Activity.unscoped_objects.get(request_id=request_id)
    assert row.hedged and _hedge_leg(row).reason.startswith("hedge: primary stalled")


def test_flat_trigger_hedges_a_normal_slow_prefill(client, emulator, hedge_settings):
    """The seed's trigger (HEDGE_TRIGGER=flat) races the same normal 0.8 s prefill after
    0.3 s; alpha still wins, and the hedge leg says its primary was not stalled."""
    hedge_settings["HEDGE_TRIGGER"] = "flat"
    _measure_all_slow(client, emulator, 0.8)
    _, provider, _ = _stream_text(client, fresh(LONG))
    assert provider == "alpha" and len(emulator.log("bravo")) == 1
    row = _last_row()
    assert row.hedged and _hedge_leg(row).reason.startswith("hedge: primary not stalled")
