"""Marks from error rates on the live gateway, against the emulator (issue 10)."""

import time

import pytest

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
MESSAGES = [{"role": "user", "content": "hi"}]


def _provider(client) -> str:
    reply = client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES, max_tokens=2)
    return reply.model_extra["provider"]


def test_a_lone_429_among_many_successes_does_not_mark(client, emulator):
    for _ in range(12):
        assert _provider(client) == "alpha"  # the cheapest, serving well
    emulator.control("alpha", status_override=429)
    assert _provider(client) == "bravo"  # retried elsewhere (R4)
    emulator.control("alpha", status_override=None)
    # A 429 teaches capacity, not unusability (product Decisions, issue 43): alpha is held
    # for its Retry-After (the emulator's 1 s), never marked, then serves again.
    time.sleep(1.2)
    assert _provider(client) == "alpha"


def test_a_run_of_refusals_marks(client, emulator):
    for _ in range(12):
        assert _provider(client) == "alpha"
    emulator.control("alpha", status_override=503)
    for _ in range(3):
        assert _provider(client) == "bravo"
    emulator.control("alpha", status_override=None)
    assert _provider(client) == "bravo"  # three in a row: marked (R2.7)
    assert len(emulator.log("alpha")) == 15
