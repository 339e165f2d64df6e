"""The probe confirmation rule (R5)."""

import pytest

from routing.core.probe import confirmed_shift, shift_direction


@pytest.mark.parametrize(
    ("typical", "ttft", "direction"),
    [(1.0, 2.5, 1), (1.0, 1.9, 0), (1.0, 0.4, -1), (None, 9.0, 0), (1.0, 1.0, 0)],
)
def test_shift_direction(typical, ttft, direction):
    assert shift_direction(typical, ttft) == direction


def test_stalls_are_outvoted():
    assert not confirmed_shift(1.0, [8.5, 1.1, 0.9])
    assert not confirmed_shift(1.0, [8.5, 3.7, 0.9])  # two stalls in a row: still not


def test_a_real_change_is_confirmed():
    assert confirmed_shift(1.0, [5.0, 4.8, 5.2])
    assert confirmed_shift(2.0, [0.5, 0.6, 0.7])  # got faster
    assert not confirmed_shift(1.0, [5.0, 4.8])  # not enough confirmations


def test_mixed_directions_do_not_confirm():
    assert not confirmed_shift(1.0, [5.0, 0.2, 1.0])


# --- probe economy (issue 10) ------------------------------------------------------------
def test_endpoints_r29_never_picks_for_speed_are_not_worth_probing():
    from routing.core import ModelInfo
    from routing.core.probe import worth_probing

    from .factories import endpoint

    model = ModelInfo("m", list_price_input=0.56, list_price_output=1.68)
    market = [endpoint(i, price_input=p) for i, p in enumerate([0.015, 0.08, 0.09, 0.2, 0.56])]
    verdicts = [worth_probing(e, model, market) for e in market]
    # median input 0.09; 50% below list = 0.28: swiftinfer (0.2) may be picked for speed,
    # the first party at list price (0.56) never
    assert verdicts == [True, True, True, True, False]
