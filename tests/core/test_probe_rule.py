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


def test_probes_by_need_skip_only_endpoints_dearer_than_the_pick_and_not_fastest():
    """The calibrated market at >128k: cachemart (cheap, 34 s), novacloud (17 s),
    steadyai (4 s, the pick), swiftinfer (3 s, the fastest, dearer). A fifth endpoint,
    dearer than steadyai and slower than swiftinfer, could not take the traffic."""
    from routing.core import ModelInfo, SpeedSummary
    from routing.core.probe import probe_relevant

    from .factories import endpoint

    model = ModelInfo("m", list_price_input=0.56, list_price_output=1.68)
    prices = {1: 0.015, 2: 0.08, 3: 0.09, 4: 0.2, 5: 0.15}
    ttfts = {1: 34.0, 2: 17.0, 3: 4.0, 4: 3.0, 5: 5.0}
    market = [endpoint(i, price_input=p) for i, p in prices.items()]
    summary = SpeedSummary({(i, ">128k"): t for i, t in ttfts.items()}, {})
    needed = {e.endpoint_id for e in market if probe_relevant(e, 150_000, model, market, summary)}
    # swiftinfer slowing down would raise the bar to at most 2 x 4 s (steadyai): still no
    # room for cachemart or novacloud, so its probe could change nothing
    assert needed == {1, 2, 3}
    # novacloud at 7 s would be let in by such a slowdown: swiftinfer is needed then
    close = SpeedSummary({**summary.typical_by_key, (2, ">128k"): 7.0}, {})
    assert probe_relevant(market[3], 150_000, model, market, close)
    # no data in the bucket: every endpoint is needed
    empty = SpeedSummary({}, {})
    assert all(probe_relevant(e, 150_000, model, market, empty) for e in market)
    # endpoint 5 measured at 2.5 s (a real call): the fastest now, it sets the bar, but
    # its slowing down could not let a cheaper one in either (bar at most 2 x 3 s)
    faster = SpeedSummary({**summary.typical_by_key, (5, ">128k"): 2.5}, {})
    assert not probe_relevant(market[4], 150_000, model, market, faster)
    # the pick slows down to 9 s: endpoint 5 (5 s, within 2x of 3 s) is the cheapest
    # fast-enough one, the new pick, and needed
    slower = SpeedSummary({**summary.typical_by_key, (3, ">128k"): 9.0}, {})
    assert probe_relevant(market[4], 150_000, model, market, slower)
