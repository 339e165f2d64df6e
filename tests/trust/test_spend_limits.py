"""Hard spend limits, rate limits, key expiry and model allow-lists through the live
gateway (issue 12, "Hard limits"): the emulator upstream, the real ledger, the quota
store of the run (Redis with REDIS_URL, else process memory)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from django.core import mail
from django.utils import timezone

from billing.models import Activity, ApiKey, SpendAlert
from billing.services import api_key_create

from ..support import TEST_MODEL, wait_background_idle, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)
HI = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(autouse=True)
def queued_alerts(monkeypatch) -> list[int]:
    """The alert ids handed to Celery (recorded instead of queued: no broker messages
    left behind for a development worker)."""
    from billing import alerts

    queued: list[int] = []
    monkeypatch.setattr(alerts, "_enqueue_alert", queued.append)
    return queued


def _set(api_key: ApiKey, **fields) -> None:
    """Change a key's row and drop it from the gateway's key cache."""
    from billing.auth import forget_cached_key

    ApiKey.unscoped_objects.filter(id=api_key.id).update(**fields)
    forget_cached_key(api_key.prefix)


def _post(gateway, key: str, **body) -> httpx.Response:
    body = {"model": TEST_MODEL, "messages": HI, **body}
    return httpx.post(
        f"{gateway.api_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def _spent_before(tenant, cost_usd: str) -> None:
    """A call of the key's, this month, that cost ``cost_usd``."""
    Activity.objects.create(
        request_id="gen-before",
        organisation=tenant.organisation,
        api_key=tenant.api_key,
        model_slug=TEST_MODEL,
        status="success",
        cost_usd=Decimal(cost_usd),
        created_at=timezone.now(),
    )


def _long_replies(emulator, tokens: int) -> None:
    """Every provider answers ``tokens`` completion tokens, fast."""
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, default_output_tokens=tokens, output_tokens_per_s=200_000)


def _billed(**filters) -> Decimal:
    wait_background_idle()
    return sum((r.cost_usd for r in Activity.unscoped_objects.filter(**filters)), Decimal(0))


# --- Hard spend limits -------------------------------------------------------------------


def test_concurrent_calls_never_spend_past_a_tiny_key_limit(gateway, tenant, emulator):
    """16 calls at once, each costing about a fifth of the limit: with the old soft
    limit (spend read from the ledger, calls in flight not counted) all 16 are served,
    4x the limit. Reserving the worst case before the call keeps the sum under it."""
    limit = Decimal("0.01")
    _set(tenant.api_key, monthly_limit_usd=limit)
    _long_replies(emulator, 5000)  # 5,000 tokens at alpha's $0.40/1M: $0.002 a call
    with ThreadPoolExecutor(16) as pool:
        replies = list(pool.map(lambda _: _post(gateway, tenant.key, max_tokens=5000), range(16)))
    statuses = [r.status_code for r in replies]
    assert set(statuses) <= {200, 402}, statuses
    assert statuses.count(200) >= 1 and statuses.count(402) >= 1, statuses
    wait_finished_rows(statuses.count(200))
    spent = _billed(api_key=tenant.api_key)
    assert Decimal("0.002") <= spent <= limit, spent
    # Every reservation was settled: after the burst, what is left can still be used.
    from asgiref.sync import async_to_sync

    from billing import limits
    from billing.auth import _load

    ((_, store_spent, reserved),) = async_to_sync(limits.spent_now)(_load(tenant.api_key.prefix))
    assert reserved == 0
    assert spent <= store_spent <= spent + Decimal("0.000000001") * 16  # nano-dollars, up


def test_an_organisation_budget_holds_across_two_keys(gateway, tenant, emulator):
    from billing.services import organisation_set_limits

    limit = Decimal("0.01")
    organisation_set_limits(
        organisation=tenant.organisation, monthly_limit_usd=limit, daily_limit_usd=None
    )
    _, second = api_key_create(organisation=tenant.organisation, name="second")
    _long_replies(emulator, 4000)  # $0.0016 a call at alpha
    keys, served, refused = [tenant.key, second], 0, None
    for n in range(30):
        reply = _post(gateway, keys[n % 2], max_tokens=4000)
        if reply.status_code == 402:
            refused = reply.json()["error"]
            break
        assert reply.status_code == 200, reply.text
        served += 1
    assert refused is not None and served >= 2, served
    assert "organisation's monthly spend limit of $0.01" in refused["message"]
    wait_finished_rows(served)
    assert _billed(organisation=tenant.organisation) <= limit


def test_402_is_openai_shaped_and_names_what_is_left(gateway, tenant):
    _set(tenant.api_key, monthly_limit_usd=Decimal("1.00"))
    _spent_before(tenant, "0.9995")
    reply = _post(gateway, tenant.key, max_tokens=10_000)  # up to $0.009 at charlie
    assert reply.status_code == 402
    error = reply.json()["error"]
    assert error["type"] == "insufficient_quota" and error["code"] == "insufficient_quota"
    assert "monthly spend limit of $1.00" in error["message"]
    assert "$0.0005 remaining this month" in error["message"]
    # A request that fits what is left is served.
    assert _post(gateway, tenant.key, max_tokens=50).status_code == 200


def test_without_max_tokens_the_reserved_cap_is_sent_upstream(gateway, tenant, emulator):
    from django.conf import settings

    _set(tenant.api_key, monthly_limit_usd=Decimal("5"))
    assert _post(gateway, tenant.key).status_code == 200
    assert emulator.log()[-1]["max_tokens"] == settings.UBERLLM["SPEND_DEFAULT_MAX_TOKENS"]
    _set(tenant.api_key, monthly_limit_usd=None)
    assert _post(gateway, tenant.key).status_code == 200
    assert emulator.log()[-1]["max_tokens"] is None  # no limit: the request as sent


def test_messages_api_answers_an_anthropic_billing_error(gateway, tenant):
    _set(tenant.api_key, daily_limit_usd=Decimal("0"))
    reply = httpx.post(
        f"{gateway.base_url}/api/v1/messages",
        json={"model": TEST_MODEL, "max_tokens": 100, "messages": HI},
        headers={"x-api-key": tenant.key, "anthropic-version": "2023-06-01"},
        timeout=30,
    )
    assert reply.status_code == 402
    body = reply.json()
    assert body["type"] == "error" and body["error"]["type"] == "billing_error"
    assert "daily spend limit of $0.00" in body["error"]["message"]


# --- Rate limits ---------------------------------------------------------------------------


def _not_at_a_minute_edge() -> None:
    """Per-minute windows are UTC minutes: start a burst with 3 s of the minute left."""
    left = 60 - time.time() % 60
    if left < 3:
        time.sleep(left + 0.05)


def test_requests_per_minute_answer_429_with_retry_after(gateway, tenant):
    _set(tenant.api_key, rate_limit_rpm=2)
    _not_at_a_minute_edge()
    assert [_post(gateway, tenant.key).status_code for _ in range(2)] == [200, 200]
    reply = _post(gateway, tenant.key)
    assert reply.status_code == 429
    assert 1 <= int(reply.headers["retry-after"]) <= 60
    error = reply.json()["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "rate_limit_exceeded"
    assert "2 requests per minute" in error["message"]
    # Another key of the organisation has its own limits (none).
    _, other = api_key_create(organisation=tenant.organisation, name="other")
    assert _post(gateway, other).status_code == 200


def test_tokens_per_minute_answer_429(gateway, tenant):
    _set(tenant.api_key, rate_limit_tpm=300)
    _not_at_a_minute_edge()
    long_prompt = [{"role": "user", "content": "word " * 200}]  # ~200 tokens
    assert _post(gateway, tenant.key, messages=long_prompt).status_code == 200
    reply = _post(gateway, tenant.key, messages=long_prompt)  # ~400 this minute
    assert reply.status_code == 429 and "tokens per minute" in reply.json()["error"]["message"]
    assert int(reply.headers["retry-after"]) >= 1


def test_a_prompt_above_the_tokens_per_minute_is_a_413_without_retry_after(gateway, tenant):
    """It can never be admitted: a 429 with Retry-After had the SDKs retry it for ever
    (found by fuzzing). Both APIs, each in its own error shape; nothing reaches a provider."""
    _set(tenant.api_key, rate_limit_tpm=30)
    long_prompt = [{"role": "user", "content": "word " * 200}]  # ~200 tokens
    reply = _post(gateway, tenant.key, messages=long_prompt)
    assert reply.status_code == 413 and "retry-after" not in reply.headers
    error = reply.json()["error"]
    assert error["code"] == "request_too_large" and "30 tokens per minute" in error["message"]
    messages = httpx.post(
        f"{gateway.api_url}/messages",
        headers={"x-api-key": tenant.key},
        timeout=30,
        json={"model": TEST_MODEL, "max_tokens": 5, "messages": long_prompt},
    )
    assert messages.status_code == 413 and "retry-after" not in messages.headers
    assert messages.json()["error"]["type"] == "request_too_large"
    assert not Activity.unscoped_objects.filter(organisation=tenant.organisation).exists()


def test_concurrent_calls_over_the_limit_answer_429(gateway, tenant, emulator):
    _set(tenant.api_key, max_concurrent=1)
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, default_output_tokens=400, output_tokens_per_s=200)
    body = {"model": TEST_MODEL, "messages": HI, "stream": True}
    headers = {"Authorization": f"Bearer {tenant.key}"}
    with httpx.stream(
        "POST", f"{gateway.api_url}/chat/completions", json=body, headers=headers, timeout=30
    ) as first:
        assert first.status_code == 200
        chunks = first.iter_raw()  # kept: a collected iterator closes the response
        next(chunks)  # the first stream is flowing
        second = _post(gateway, tenant.key)
        assert second.status_code == 429
        assert second.headers["retry-after"] == "1"
        assert "1 calls in flight" in second.json()["error"]["message"]
    # The first call ended (client gone): its slot is released by the finish path.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        emulator.reset(profiles=True)
        if _post(gateway, tenant.key).status_code == 200:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the in-flight slot was never released")


# --- Expiry and allow-list ---------------------------------------------------------------


def test_an_expired_key_gets_401(gateway, tenant):
    _set(tenant.api_key, expires_at=timezone.now() + timedelta(hours=1))
    assert _post(gateway, tenant.key).status_code == 200
    key_info = httpx.get(
        f"{gateway.api_url}/key", headers={"Authorization": f"Bearer {tenant.key}"}
    ).json()["data"]
    assert key_info["expires_at"] is not None
    _set(tenant.api_key, expires_at=timezone.now() - timedelta(seconds=1))
    reply = _post(gateway, tenant.key)
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "expired_api_key"
    headers = {"Authorization": f"Bearer {tenant.key}"}
    for path in ("/key", "/activity"):  # the key's other endpoints refuse it too
        assert httpx.get(f"{gateway.api_url}{path}", headers=headers).status_code == 401


def test_a_model_allow_list_answers_403_for_other_models(gateway, tenant):
    _set(tenant.api_key, allowed_models=["other/model"])
    reply = _post(gateway, tenant.key)
    assert reply.status_code == 403
    error = reply.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "permission_error",
        "model_not_allowed",
        "model",
    )
    assert "other/model" in error["message"]
    _set(tenant.api_key, allowed_models=[TEST_MODEL])
    assert _post(gateway, tenant.key).status_code == 200
    # A fallback list naming a model outside the allow-list is refused as a whole.
    reply = _post(gateway, tenant.key, models=["other/model"])
    assert reply.status_code == 403


# --- Alerts ----------------------------------------------------------------------------------


class WebhookReceiver:
    """A loopback HTTP server recording the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                owner.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_alerts_at_80_and_100_percent_are_sent_once(
    gateway, tenant, emulator, settings, queued_alerts
):
    from billing.alerts import spend_alert_deliver

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    tenant.user.email = "owner@example.com"
    tenant.user.save()
    receiver = WebhookReceiver()
    tenant.organisation.alert_webhook_url = receiver.url
    tenant.organisation.save()
    _set(tenant.api_key, monthly_limit_usd=Decimal("0.01"))
    _spent_before(tenant, "0.0079")
    _long_replies(emulator, 500)  # $0.0002 a call: past 80% after the first
    try:
        for _ in range(3):
            assert _post(gateway, tenant.key, max_tokens=500).status_code == 200
        wait_background_idle()
        assert list(SpendAlert.unscoped_objects.values_list("threshold", flat=True)) == [80]
        # Near the limit: a call that does not fit is refused, which is the 100% alert.
        Activity.unscoped_objects.filter(request_id="gen-before").update(cost_usd=Decimal("0.0095"))
        from billing import limits

        limits.forget_key_spend()  # re-seed the period from the ledger
        for _ in range(3):
            assert _post(gateway, tenant.key, max_tokens=5000).status_code == 402
        wait_background_idle()
        alerts = {
            a.threshold: a
            for a in SpendAlert.unscoped_objects.select_related("organisation", "api_key")
        }
        assert sorted(alerts) == [80, 100]
        assert sorted(queued_alerts) == sorted(a.id for a in alerts.values())  # once each
        # Delivery (a Celery task in production; the service directly here): once each.
        for alert in alerts.values():
            assert spend_alert_deliver(alert=alert)
            assert spend_alert_deliver(alert=alert)  # delivered already: nothing resent
        assert len(mail.outbox) == 2
        assert {m.to[0] for m in mail.outbox} == {"owner@example.com"}
        assert any(
            "has used 80% of its monthly spend limit of $0.01" in m.body for m in mail.outbox
        )
        assert sorted(b["threshold_percent"] for b in receiver.bodies) == [80, 100]
        assert {b["api_key"] for b in receiver.bodies} == {tenant.api_key.name}
    finally:
        receiver.close()


def test_a_key_without_limits_never_touches_the_quota_store(gateway, tenant):
    from billing import limits

    limits.forget_key_spend()
    assert _post(gateway, tenant.key).status_code == 200
    assert limits._store is None  # no store was even created
