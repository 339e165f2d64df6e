"""How many more turns a conversation's request should expect (issue 10), pure.

A conversation's request is priced and timed with its expected follow-up turns (cache
reads where it is served now). A fixed 2 undervalues coding agents, which go on for
tens of turns: moving a conversation to a provider whose cache reads are 50x cheaper
and fast costs one uncached turn and pays back over every later one. By the inspection
paradox, the mean turn index of the conversation requests a gateway sees is the mean
number of turns still to come after a random one of them (for conversations of T turns,
both are E[T(T-1)/2] / E[T]); so the estimate is an EMA of the turn index (the number
of earlier turns), never below the configured minimum.

A first turn (no reply in it yet) cannot say whether a conversation follows, but a
customer's traffic can: a coding agent's long first prompts nearly always get a second
turn, a batch of documents never does. Per customer, model and size bucket, the share
of first turns that a second turn followed (second turns / first turns, both counted
with the same decay) prices a first turn with that share of the expected follow-ups
(round 23): an agent's conversation then starts where its cache reads will be cheap,
instead of at the cheapest uncached input and moving there one uncached turn later.
"""

from __future__ import annotations

from collections.abc import Hashable

EMA_WEIGHT = 0.01
MAX_STARTS = 10_000  # (model, customer, bucket) keys kept; the oldest goes first


class FollowupEstimator:
    """Per model: EMA of the turn index of conversation requests (turn >= 1)."""

    def __init__(
        self, minimum: float = 2.0, weight: float = EMA_WEIGHT, max_starts: int = MAX_STARTS
    ) -> None:
        self.minimum = minimum
        self.weight = weight
        self.max_starts = max_starts
        self._ema: dict[str, float] = {}
        self._starts: dict[Hashable, list[float]] = {}  # key -> [first turns, second turns]

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

    def observe_start(self, key: Hashable, turn_index: int) -> None:
        """A request of ``key`` (model, customer, size bucket) with ``turn_index`` earlier
        turns: a first turn (0) or a second one (1) counts; later turns are ignored."""
        if turn_index > 1:
            return
        counts = self._starts.get(key)
        if counts is None:
            if len(self._starts) >= self.max_starts:
                del self._starts[next(iter(self._starts))]
            counts = self._starts[key] = [0.0, 0.0]
        keep = 1.0 - self.weight
        counts[0] *= keep
        counts[1] *= keep
        counts[turn_index] += 1.0

    def continued_share(self, key: Hashable) -> float:
        """The share of ``key``'s recent first turns that a second turn followed (0 without
        any first turn, at most 1)."""
        counts = self._starts.get(key)
        if counts is None or counts[0] <= 0.0:
            return 0.0
        return min(1.0, counts[1] / counts[0])

    def expected_first(self, model: str, key: Hashable) -> float:
        """Follow-up turns to price and time a first turn of ``key`` with: its customer's
        continued share x the model's expected follow-ups."""
        share = self.continued_share(key)
        return share * self.expected(model) if share else 0.0
