"""A provider that misreports usage (negative, absurd or non-numeric counts) must not
cost a customer a fortune, fail the call, or lose its ledger row: the gateway bills its
own estimate instead (marked estimated), as when a provider sends no usage at all."""

from __future__ import annotations

import httpx
import pytest

from billing.models import Activity

from ..support import TEST_MODEL, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)

BOGUS_REPORTS = [
    {"prompt_tokens": -5},
    {"prompt_tokens": "many"},
    {"prompt_tokens": 10**12},  # beyond the endpoint's context length (200,000)
    {"completion_tokens": 2**40},
    {"completion_tokens": 12.5},
    {"prompt_tokens_details": {"cached_tokens": 10**6}},  # more cached than sent
    {"prompt_tokens_details": "none"},
]


def _call(gateway, tenant, *, stream: bool) -> httpx.Response:
    body = {
        "model": TEST_MODEL,
        "stream": stream,
        "max_tokens": 6,
        "messages": [{"role": "user", "content": "hello there"}],
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return httpx.post(
        f"{gateway.api_url}/chat/completions",
        json=body,
        timeout=20,
        headers={"Authorization": f"Bearer {tenant.key}"},
    )


@pytest.mark.parametrize("report", BOGUS_REPORTS, ids=lambda r: str(r)[:40])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_misreported_usage_is_billed_as_an_estimate(gateway, tenant, emulator, report, stream):
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, usage_override=report)
    response = _call(gateway, tenant, stream=stream)
    assert response.status_code == 200, response.text
    if not stream:
        usage = response.json()["usage"]
        assert 0 < usage["prompt_tokens"] < 1000 and 0 < usage["completion_tokens"] <= 6
        assert usage["prompt_tokens_details"]["cached_tokens"] <= usage["prompt_tokens"]
    else:
        assert response.text.rstrip().endswith("data: [DONE]")
    for slug in ("alpha", "bravo", "charlie"):  # the next call reports truthfully
        emulator.control(slug, usage_override=None)
    assert _call(gateway, tenant, stream=stream).status_code == 200
    rows = sorted(wait_finished_rows(2), key=lambda row: row.created_at)
    bogus, honest = rows
    assert bogus.status == "success" and bogus.usage_estimated
    assert 0 < bogus.prompt_tokens < 1000 and 0 < bogus.completion_tokens <= 6
    assert 0 <= bogus.cached_tokens <= bogus.prompt_tokens
    assert 0 < bogus.cost_usd < honest.cost_usd * 10
    assert honest.status == "success" and not honest.usage_estimated
    assert Activity.unscoped_objects.count() == 2
