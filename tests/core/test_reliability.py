"""Marks from error rates, not from one error (issue 10, weakness 2; R2.7, O4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core.marks import Reliability

PEERS = (1, 2, 3)


def _busy(health: Reliability, endpoint_id: int, calls: int, now: float = 0.0) -> None:
    for _ in range(calls):
        health.served(endpoint_id, now)


@pytest.mark.parametrize(
    ("successes", "failures_in_a_row", "marks"),
    [
        (0, 1, True),  # low volume: one refusal still marks (R2.7 as before)
        (9, 1, True),
        (50, 1, False),  # a lone failure among many successes does not empty the pool
        (50, 2, False),
        (50, 3, True),  # a run of refusals: the provider is really refusing
    ],
)
def test_when_a_failure_marks(successes, failures_in_a_row, marks):
    health = Reliability()
    for peer in (2, 3):
        _busy(health, peer, 50)
    _busy(health, 1, successes)
    verdicts = [health.failed(1, 0.0, PEERS) for _ in range(failures_in_a_row)]
    assert verdicts[-1] is marks
    assert not any(verdicts[:-1]) or successes < 10


def test_a_failure_rate_far_above_the_peers_marks_without_a_run():
    health = Reliability()
    for peer in (2, 3):
        _busy(health, peer, 100)
        health.failed(peer, 0.0, PEERS)  # peers: 1% errors
    verdicts = []
    for _ in range(20):  # endpoint 1: every other call fails (50%), never 3 in a row
        _busy(health, 1, 1)
        verdicts.append(health.failed(1, 0.0, PEERS))
    assert verdicts[0] is True  # not yet among many successes
    assert verdicts[-1] is True and health.failure_rate(1, 0.0) == pytest.approx(0.5)


def test_when_every_peer_fails_as_often_nobody_is_marked_for_the_rate():
    health = Reliability()
    for peer in PEERS:
        for _ in range(40):
            _busy(health, peer, 1)
            health.served(peer, 0.0)
            health.failed(peer, 0.0, PEERS)  # 33% everywhere: the market, not one endpoint
    _busy(health, 1, 1)
    assert health.failed(1, 0.0, PEERS) is False


def test_old_successes_fade_so_a_quiet_endpoint_marks_on_one_refusal_again():
    health = Reliability(half_life_s=60.0)
    _busy(health, 1, 12, now=0.0)
    assert health.failed(1, 1.0, PEERS) is False
    health.served(1, 1.0)
    # 10 minutes idle age the counts by one half-life only (issue 43): ~6.5 left
    assert health.failed(1, 600.0, PEERS) is True


def test_a_pause_does_not_erase_what_the_successes_proved():
    health = Reliability()  # 60 s half-life
    _busy(health, 1, 40, now=0.0)
    # 15 minutes without a call (a mark's window): one half-life at most, 20 left
    assert not health.failed(1, now=900.0, peers=PEERS)  # a lone 5xx does not mark


@settings(database=None, max_examples=200)
@given(
    history=st.lists(st.booleans(), max_size=80),
    consecutive=st.integers(1, 5),
)
def test_a_run_of_consecutive_failures_always_marks(history, consecutive):
    health = Reliability(consecutive=consecutive)
    for ok in history:
        if ok:
            health.served(1, 0.0)
        else:
            health.failed(1, 0.0, PEERS)
    health.served(1, 0.0)
    verdicts = [health.failed(1, 0.0, PEERS) for _ in range(consecutive)]
    assert verdicts[-1] is True


@settings(database=None, max_examples=200)
@given(successes=st.integers(10, 500), peer_failures=st.integers(0, 30))
def test_a_lone_failure_among_many_successes_never_marks(successes, peer_failures):
    health = Reliability()
    _busy(health, 2, 100)
    for _ in range(peer_failures):
        health.failed(2, 0.0, PEERS)
    _busy(health, 1, successes)
    assert health.failed(1, 0.0, PEERS) is False
