"""How long to wait for an attempt's first token (issue 10, weakness 6; issue 44), pure.

A flat first-token timeout (180 s) makes a hanging provider cost its callers minutes
before the retry. What the router knows bounds that: an endpoint whose typical TTFT in
this bucket is ``t`` is abandoned after ``max(floor_s, factor x t)`` (never later than
the flat timeout). An endpoint without speed data of its own starts from the model's
typical TTFT for the request (O8: the median of the other endpoints' figures in the
bucket, ``RouteChoice.model_typical_ttft_s``), and with no figure at all the floor
applies: until issue 44 such an endpoint had the flat 180 s, so a new provider that hung
cost each request three minutes. The floor is 20 s, not 10 s: with 10 s, the calibrated
market's slow starts (a provider stalling 4-16 s on 13% of calls) were abandoned and
retried at a dearer provider, which cost more than waiting (docs/simulator.md).
The budget covers the wait for the response headers and for the first token alike.
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
    """Seconds to wait for the first token of an attempt at ``choice``: ``factor`` x its
    typical TTFT (else the model's), at least ``floor_s``, at most ``default_s``."""
    typical = choice.typical_ttft_s
    if typical is None:
        typical = choice.model_typical_ttft_s
    if typical is None:
        return min(default_s, floor_s)
    return min(default_s, max(floor_s, factor * typical))
