"""A first-token timeout from what is known (issue 10, weakness 6; issue 44: without
data of its own, an endpoint's budget comes from the model's typical TTFT, else the floor)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core import RouteChoice
from routing.core.timeouts import first_token_timeout_s

from .factories import endpoint


def _choice(typical: float | None, model_typical: float | None = None) -> RouteChoice:
    return RouteChoice(endpoint(1), "test", 0.001, typical, model_typical_ttft_s=model_typical)


@pytest.mark.parametrize(
    ("typical", "expected"),
    [(None, 20.0), (0.5, 20.0), (5.0, 20.0), (6.0, 24.0), (20.0, 80.0), (60.0, 180.0)],
)
def test_timeout_is_a_multiple_of_the_typical_with_a_floor_and_the_flat_cap(typical, expected):
    assert first_token_timeout_s(_choice(typical)) == expected


def test_settings_are_keyword_parameters():
    assert first_token_timeout_s(_choice(2.0), floor_s=5.0, factor=3.0, default_s=90.0) == 6.0
    assert first_token_timeout_s(_choice(None), floor_s=5.0, default_s=90.0) == 5.0
    assert first_token_timeout_s(_choice(None), floor_s=300.0, default_s=90.0) == 90.0


@pytest.mark.parametrize(
    ("model_typical", "expected"), [(None, 20.0), (0.4, 20.0), (10.0, 40.0), (100.0, 180.0)]
)
def test_without_data_of_its_own_an_endpoint_starts_from_the_models_typical(
    model_typical, expected
):
    """Issue 44: a hanging new provider costs max(floor, 4 x the model's typical TTFT),
    not the flat 180 s; with no figure at all, the floor."""
    assert first_token_timeout_s(_choice(None, model_typical)) == expected


def test_an_endpoints_own_typical_wins_over_the_models():
    assert first_token_timeout_s(_choice(8.0, 0.5)) == 32.0


@settings(database=None)
@given(st.none() | st.floats(0.01, 1_000.0), st.none() | st.floats(0.01, 1_000.0))
def test_never_below_the_floor_nor_above_the_flat_timeout(typical, model_typical):
    timeout = first_token_timeout_s(_choice(typical, model_typical))
    assert 20.0 <= timeout <= 180.0
    if typical is not None:
        assert timeout >= min(180.0, typical)  # a typical call is never cut short
