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


def _measure(client, *slugs: str) -> None:
    """Three customer-pinned calls at each of ``slugs``: real speed samples there."""
    for slug in slugs:
        for _ in range(3):
            assert _served(client, order=[slug], allow_fallbacks=False) == slug
    wait_finished_rows(3 * len(slugs))
    wait_learnt()


@pytest.fixture
def flat_timeout_of_30s(monkeypatch):
    # Far above the hang below: only the budget from the model's typical TTFT (issue 44)
    # can leave the hanging provider before it answers.
    monkeypatch.setitem(settings.UBERLLM, "UPSTREAM_FIRST_TOKEN_TIMEOUT_S", 30.0)


def test_a_hanging_provider_without_speed_data_is_left_at_the_floor(
    client, emulator, low_floor, flat_timeout_of_30s
):
    """Issue 44: alpha (the cheapest) has no speed data; bravo and charlie answer in a
    few ms. alpha hangs 10 s before its first token. Its budget comes from the model's
    typical TTFT (bravo's and charlie's), floored at 0.5 s, not from the flat timeout:
    the attempt is abandoned and bravo serves the call."""
    _measure(client, "bravo", "charlie")
    emulator.control("alpha", ttft_base_s=10.0)
    assert _served(client) == "bravo"
    hung = emulator.log("alpha")[-1]
    assert hung["first_token_at"] is None  # abandoned before its first token


def test_a_provider_without_speed_data_that_sends_no_headers_is_left_at_the_floor(
    client, emulator, low_floor, flat_timeout_of_30s
):
    """The wait for the response headers is bounded by the same budget: alpha (no speed
    data) holds its answer's status line 10 s (then a 503); bravo serves the call."""
    _measure(client, "bravo", "charlie")
    emulator.control("alpha", status_override=503, error_delay_s=10.0)
    assert _served(client) == "bravo"
    (hung,) = emulator.log("alpha")
    assert hung["status"] == "cancelled"  # left before it answered (not its 503)
