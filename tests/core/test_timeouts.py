"""A first-token timeout from what is known (issue 10, weakness 6)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.core import RouteChoice
from routing.core.timeouts import first_token_timeout_s

from .factories import endpoint


def _choice(typical: float | None) -> RouteChoice:
    return RouteChoice(endpoint(1), "test", 0.001, typical)


@pytest.mark.parametrize(
    ("typical", "expected"),
    [(None, 180.0), (0.5, 20.0), (5.0, 20.0), (6.0, 24.0), (20.0, 80.0), (60.0, 180.0)],
)
def test_timeout_is_a_multiple_of_the_typical_with_a_floor_and_the_flat_cap(typical, expected):
    assert first_token_timeout_s(_choice(typical)) == expected


def test_settings_are_keyword_parameters():
    assert first_token_timeout_s(_choice(2.0), floor_s=5.0, factor=3.0, default_s=90.0) == 6.0
    assert first_token_timeout_s(_choice(None), default_s=90.0) == 90.0


@settings(database=None)
@given(st.none() | st.floats(0.01, 1_000.0))
def test_never_below_the_floor_nor_above_the_flat_timeout(typical):
    timeout = first_token_timeout_s(_choice(typical))
    assert 20.0 <= timeout <= 180.0
    if typical is not None:
        assert timeout >= min(180.0, typical)  # a typical call is never cut short
