"""A hanging provider costs a few times its typical TTFT, not the flat 180 s (issue 10:
``routing.core.timeouts``; live ``ROUTING_FIRST_TOKEN_FLOOR_S`` / ``_FACTOR``)."""

import time

import pytest
from django.conf import settings

from ..support import TEST_MODEL, wait_finished_rows, wait_learnt

pytestmark = pytest.mark.django_db(transaction=True)


def _short() -> list[dict]:
    return [{"role": "user", "content": f"{time.time_ns()} hello"}]


def _served(client, **provider) -> str:
    extra = {"provider": provider} if provider else {}
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=_short(), max_tokens=2, extra_body=extra
    )
    return reply.model_extra["provider"]


@pytest.fixture
def low_floor(monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "ROUTING_FIRST_TOKEN_FLOOR_S", 0.5)  # undone after


def test_a_hanging_provider_is_left_after_a_few_times_its_typical_ttft(client, emulator, low_floor):
    """alpha (the cheapest) answers short prompts in ~0.35 s; then it hangs 10 s before
    its first token. With a 0.5 s floor its budget is 4 x ~0.35 s: the attempt is
    abandoned and bravo serves the call. With the 20 s floor alpha would have answered,
    10 s late."""
    for _ in range(3):  # alpha's typical TTFT on short prompts, from real calls
        assert _served(client, order=["alpha"], allow_fallbacks=False) == "alpha"
    wait_finished_rows(3)
    wait_learnt()
    emulator.control("alpha", ttft_base_s=10.0)
    assert _served(client) == "bravo"
    hung = emulator.log("alpha")[-1]
    assert hung["first_token_at"] is None  # abandoned before its first token
