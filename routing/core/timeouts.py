"""How long to wait for an attempt's first token (issue 10, weakness 6), pure.

A flat first-token timeout (180 s) makes a hanging provider cost its callers minutes
before the retry. What the router knows bounds that: an endpoint whose typical TTFT in
this bucket is ``t`` is abandoned after ``max(floor_s, factor x t)`` (never later than
the flat timeout). Without speed data the flat timeout applies. The floor is 20 s, not
10 s: with 10 s, the calibrated market's slow starts (a provider stalling 4-16 s on 13%
of calls) were abandoned and retried at a dearer provider, which cost more than waiting
(docs/simulator.md).
"""

from __future__ import annotations

from .types import RouteChoice

FIRST_TOKEN_FLOOR_S = 20.0
FIRST_TOKEN_FACTOR = 4.0
FIRST_TOKEN_DEFAULT_S = 180.0


def first_token_timeout_s(
    choice: RouteChoice,
    *,
    floor_s: float = FIRST_TOKEN_FLOOR_S,
    factor: float = FIRST_TOKEN_FACTOR,
    default_s: float = FIRST_TOKEN_DEFAULT_S,
) -> float:
    """Seconds to wait for the first token of an attempt at ``choice``."""
    typical = choice.typical_ttft_s
    if typical is None:
        return default_s
    return min(default_s, max(floor_s, factor * typical))
