"""How many more turns a conversation's request should expect (issue 10), pure.

A conversation's request is priced and timed with its expected follow-up turns (cache
reads where it is served now). A fixed 2 undervalues coding agents, which go on for
tens of turns: moving a conversation to a provider whose cache reads are 50x cheaper
and fast costs one uncached turn and pays back over every later one. By the inspection
paradox, the mean turn index of the conversation requests a gateway sees is the mean
number of turns still to come after a random one of them (for conversations of T turns,
both are E[T(T-1)/2] / E[T]); so the estimate is an EMA of the turn index (the number
of earlier turns), never below the configured minimum.
"""

from __future__ import annotations

EMA_WEIGHT = 0.01


class FollowupEstimator:
    """Per model: EMA of the turn index of conversation requests (turn >= 1)."""

    def __init__(self, minimum: float = 2.0, weight: float = EMA_WEIGHT) -> None:
        self.minimum = minimum
        self.weight = weight
        self._ema: dict[str, float] = {}

    def observe(self, model: str, turn_index: int) -> None:
        """A conversation request with ``turn_index`` earlier turns (>= 1) was seen."""
        if turn_index < 1:
            return
        ema = self._ema.get(model)
        self._ema[model] = (
            float(turn_index) if ema is None else ema + self.weight * (turn_index - ema)
        )

    def expected(self, model: str) -> float:
        """Follow-up turns to price and time a conversation's request with."""
        return max(self.minimum, self._ema.get(model, 0.0))
