"""The injected clock of the in-memory stores whose methods take an optional ``now``."""

from __future__ import annotations

from collections.abc import Callable


class Clocked:
    """A store read at ``now`` when a call gives one, else at its ``clock``'s reading
    (the simulator's virtual clock, ``time.monotonic``...)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock

    def _now(self, now: float | None) -> float:
        """``now``, else the clock's reading; ValueError when there is neither."""
        if now is not None:
            return now
        if self._clock is None:
            raise ValueError(f"{type(self).__name__} needs a clock or an explicit now")
        return self._clock()
