"""A streamed reply starts when a provider accepts the call (``EARLY_STREAM_START``):
its headers leave while the provider prefills, so the first token is the only write on
the critical path; a call that then fails on every provider ends with an error chunk."""

import orjson
import pytest
from django.conf import settings

from billing.models import Activity

from ..support import TEST_MODEL, stream_chat, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)
PROVIDERS = ("alpha", "bravo", "charlie")


@pytest.fixture
def early_start(request):
    conf = settings.UBERLLM
    saved = dict(conf)
    conf["EARLY_STREAM_START"] = request.param
    yield request.param
    conf.clear()
    conf.update(saved)


def _stream(gateway, tenant, on_headers, **extra) -> tuple[int, str, list[str]]:
    """POST a streamed chat request; ``on_headers()`` runs as soon as the response
    headers are in. Returns (status, content type, non-empty body lines)."""
    body = {
        "model": TEST_MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 4,
        **extra,
    }
    with stream_chat(gateway.api_url, tenant.key, body, timeout=20) as response:
        on_headers()
        lines = [line for line in response.iter_lines() if line]
        return response.status_code, response.headers["content-type"], lines


@pytest.mark.parametrize("early_start", [True, False], indirect=True)
def test_the_headers_leave_before_the_first_token(gateway, tenant, emulator, early_start):
    emulator.control("alpha", ttft_base_s=1.0)
    seen: dict = {}

    def on_headers():
        (record,) = emulator.log("alpha")
        seen["first_token_at"] = record["first_token_at"]

    status, _, lines = _stream(
        gateway, tenant, on_headers, provider={"order": ["alpha"], "allow_fallbacks": False}
    )
    assert status == 200 and lines[-1] == "data: [DONE]"
    if early_start:  # the provider had accepted the call but sent no token yet
        assert seen["first_token_at"] is None
    else:  # the headers waited for the first token
        assert seen["first_token_at"] is not None


@pytest.mark.parametrize("early_start", [True, False], indirect=True)
def test_every_provider_failing_after_accepting(gateway, tenant, emulator, early_start):
    """Each provider answers 200, then ends its stream with an error before any token:
    every one is tried (R4), and the customer is told, by an error chunk once the
    stream has started, else by an OpenAI-shaped 502."""
    for slug in PROVIDERS:
        emulator.control(slug, fail_after_tokens=0)
    status, content_type, lines = _stream(gateway, tenant, lambda: None)
    assert len(emulator.log()) == len(PROVIDERS)
    if early_start:
        assert status == 200 and content_type == "text/event-stream"
        chunk = orjson.loads(lines[-1].removeprefix("data: "))
        assert chunk["error"]["code"] == 502
        assert chunk["choices"][0]["finish_reason"] == "error"
        assert not any(line == "data: [DONE]" for line in lines)
    else:
        assert status == 502 and content_type == "application/json"
        assert orjson.loads("".join(lines))["error"]["code"] == "upstream_error"
    (row,) = wait_finished_rows(1)
    assert row.status == Activity.Status.ERROR and row.cost_usd == 0
    assert row.attempts.count() == len(PROVIDERS)
