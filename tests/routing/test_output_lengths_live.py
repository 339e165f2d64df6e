"""Per-provider reply length, live (issue 10): real calls through the gateway to the
emulator, where alpha (cheapest per output token) answers three times longer than the
others; once the gateway has seen that, a short request goes to bravo."""

import pytest
from django.conf import settings

from routing.core import OutputLengths
from routing.memory import memory

from ..support import TEST_MODEL, wait_background_idle, wait_finished_rows
from .test_smart_live import SHORT, fresh

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_exploration(monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "EXPLORATION_RATE", 0.0)  # restored after the test


def _call(client, **provider):
    extra = {"provider": provider} if provider else {}
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=fresh(SHORT), extra_body=extra
    )
    return reply.model_extra["provider"], reply.usage.completion_tokens


def test_a_provider_that_rambles_is_priced_by_its_replies(client, emulator, market, no_exploration):
    emulator.control("alpha", default_output_tokens=120)
    for slug in ("bravo", "charlie"):
        emulator.control(slug, default_output_tokens=40)
    memory.knowledge.output_lengths = OutputLengths(min_calls=3)  # a few calls suffice here
    assert _call(client)[0] == "alpha"  # cheapest per token, nothing learnt yet
    for slug in ("alpha", "bravo", "charlie"):
        for _ in range(3):
            _call(client, order=[slug], allow_fallbacks=False)
    wait_finished_rows(10)
    wait_background_idle()
    factors = memory.knowledge.output_lengths.factors(TEST_MODEL)
    alpha, bravo = factors[market["alpha"].id], factors[market["bravo"].id]
    assert alpha / bravo == pytest.approx(3.0)  # 120 against 40 tokens a reply
    provider, tokens = _call(client)
    assert provider == "bravo" and tokens == 40  # 40 x $0.60 beats 120 x $0.40
