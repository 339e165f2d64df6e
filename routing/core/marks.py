"""Unusable endpoints (R2.7): an endpoint that refuses a call is skipped, then tried
again once its window (15 minutes by default) has passed."""

from __future__ import annotations

from collections.abc import Callable, Iterable

UNUSABLE_WINDOW_S = 900.0


class UnusableMarks:
    """In-memory endpoint_id -> unusable-until (clock seconds).

    Every method takes an optional ``now``; without it the injected ``clock`` is read.
    The live gateway keeps the shared copy in Redis and hands the router
    ``unusable_ids(now)``; the simulator uses this object with its virtual clock.
    """

    def __init__(
        self, clock: Callable[[], float] | None = None, window_s: float = UNUSABLE_WINDOW_S
    ) -> None:
        self._clock = clock
        self.window_s = window_s
        self._until: dict[int, float] = {}

    def _now(self, now: float | None) -> float:
        if now is not None:
            return now
        if self._clock is None:
            raise ValueError("UnusableMarks needs a clock or an explicit now")
        return self._clock()

    def mark(
        self, endpoint_id: int, now: float | None = None, window_s: float | None = None
    ) -> float:
        """Mark unusable until now + window; an existing later deadline is kept."""
        until = self._now(now) + (self.window_s if window_s is None else window_s)
        self._until[endpoint_id] = max(until, self._until.get(endpoint_id, until))
        return self._until[endpoint_id]

    def clear(self, endpoint_id: int) -> None:
        """Forget a mark (e.g. after the endpoint served a call successfully)."""
        self._until.pop(endpoint_id, None)

    def is_usable(self, endpoint_id: int, now: float | None = None) -> bool:
        current = self._now(now)
        until = self._until.get(endpoint_id)
        return until is None or current >= until

    def unusable_ids(self, now: float | None = None) -> frozenset[int]:
        """Endpoints still inside their window (expired marks are forgotten)."""
        current = self._now(now)
        expired = [eid for eid, until in self._until.items() if current >= until]
        for endpoint_id in expired:
            del self._until[endpoint_id]
        return frozenset(self._until)

    def usable_ids(self, endpoint_ids: Iterable[int], now: float | None = None) -> frozenset[int]:
        """The given endpoints minus those marked unusable at ``now``."""
        unusable = self.unusable_ids(now)
        return frozenset(eid for eid in endpoint_ids if eid not in unusable)
