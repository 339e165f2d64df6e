"""Base URL mistakes caught at save; the admin's "Test endpoint" against the emulator."""

from __future__ import annotations

import re
import socket

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from providers.endpoint_check import endpoint_check
from providers.models import Endpoint
from providers.validators import validate_upstream_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/v1/chat/completions",
        "https://api.example.com/v1/chat/completions/",
        "https://api.example.com/v1/messages",
        "https://api.example.com/v1/completions",
    ],
)
def test_operation_suffix_rejected_with_the_fix(url, settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
    with pytest.raises(ValidationError) as caught:
        validate_upstream_url(url)
    assert "https://api.example.com/v1)" in caught.value.messages[0]
    assert "appends /chat/completions" in caught.value.messages[0]


def _admin(admin_user) -> Client:
    web = Client()
    web.force_login(admin_user)
    return web


def _run_action(web: Client, *endpoints: Endpoint) -> list[str]:
    response = web.post(
        "/admin/providers/endpoint/",
        {"action": "test_endpoints", "_selected_action": [e.pk for e in endpoints]},
        follow=True,
    )
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


def test_action_reports_status_and_ttft(market, emulator, admin_user):
    shown = _run_action(_admin(admin_user), market["alpha"], market["bravo"])
    assert len(shown) == 2
    for slug, message in zip(("alpha", "bravo"), sorted(shown), strict=True):
        assert message.startswith(f"{slug} / test/model-a: HTTP 200, TTFT ")
        assert re.search(r"TTFT \d+ ms$", message)
    calls = emulator.log()
    assert len(calls) == 2 and all(c["max_tokens"] == 1 and c["stream"] for c in calls)


def test_action_shows_the_upstream_error(market, emulator, admin_user):
    emulator.control("alpha", api_key="sk-the-right-one")
    (message,) = _run_action(_admin(admin_user), market["alpha"])
    assert message == "alpha / test/model-a: HTTP 401, Incorrect API key provided."


def test_missing_v1_shows_the_404(market, emulator):
    alpha = market["alpha"]
    Endpoint.objects.filter(pk=alpha.pk).update(base_url=alpha.base_url.removesuffix("/v1"))
    alpha.refresh_from_db()
    result = endpoint_check(endpoint=alpha)
    assert not result.ok and result.status == 404 and result.error


def test_error_before_the_first_token(market, emulator):
    emulator.control("alpha", status_override=503)
    result = endpoint_check(endpoint=market["alpha"])
    assert (result.ok, result.status, result.ttft_ms) == (False, 503, None)


def test_nothing_listening(market):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    alpha = market["alpha"]
    Endpoint.objects.filter(pk=alpha.pk).update(base_url=f"http://127.0.0.1:{port}/v1")
    alpha.refresh_from_db()
    result = endpoint_check(endpoint=alpha)
    assert (result.ok, result.status) == (False, None)
    assert result.error.startswith("Could not connect")


def test_private_host_refused_without_the_dev_switch(market, settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}
    result = endpoint_check(endpoint=market["alpha"])
    assert (result.ok, result.status) == (False, None) and "internal address" in result.error


def test_anthropic_endpoint_checked_in_its_protocol(market, emulator, monkeypatch):
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", "sk-alpha-test")
    emulator.control("alpha", api_key="sk-alpha-test", status_override=None)
    alpha = market["alpha"]
    Endpoint.objects.filter(pk=alpha.pk).update(protocol="anthropic_messages")
    alpha.refresh_from_db()
    result = endpoint_check(endpoint=alpha)
    assert result.ok and result.status == 200 and result.ttft_ms is not None
    (record,) = emulator.log("alpha")
    assert record["protocol"] == "anthropic_messages" and "x-api-key" in record["headers_seen"]
