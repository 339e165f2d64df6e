"""Unusable endpoints (R2.7): an endpoint that refuses a call is skipped, then tried
again within 15 minutes.

The window grows with consecutive refusals: ``first_window_s`` after the first, doubling
with each further refusal, never more than ``max_window_s`` (15 minutes); a call the
endpoint serves ends the streak. A provider that sheds load with a 429 at its peaks is
back in seconds, one that is down stays out for up to 15 minutes. (A flat 15 minutes
after any 429 took a concurrency-capped provider out of a 429 storm's market almost
entirely: docs/simulator.md.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

UNUSABLE_WINDOW_S = 900.0
FIRST_UNUSABLE_WINDOW_S = 30.0


def unusable_window(strikes: int, first_window_s: float, max_window_s: float) -> float:
    """The window after the ``strikes``-th consecutive refusal (1 = the first)."""
    return min(max_window_s, first_window_s * 2 ** max(0, strikes - 1))


class UnusableMarks:
    """In-memory endpoint_id -> (unusable-until, consecutive refusals).

    Every method takes an optional ``now``; without it the injected ``clock`` is read.
    The live gateway keeps the shared copy in Redis and hands the router
    ``unusable_ids(now)``; the simulator uses this object with its virtual clock.
    """

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        window_s: float = UNUSABLE_WINDOW_S,
        first_window_s: float = FIRST_UNUSABLE_WINDOW_S,
    ) -> None:
        self._clock = clock
        self.window_s = window_s
        self.first_window_s = min(first_window_s, window_s)
        self._until: dict[int, float] = {}
        self._strikes: dict[int, int] = {}

    def _now(self, now: float | None) -> float:
        if now is not None:
            return now
        if self._clock is None:
            raise ValueError("UnusableMarks needs a clock or an explicit now")
        return self._clock()

    def mark(
        self, endpoint_id: int, now: float | None = None, window_s: float | None = None
    ) -> float:
        """A refusal: unusable until now + the streak's window (or ``window_s``); an
        existing later deadline is kept."""
        strikes = self._strikes.get(endpoint_id, 0) + 1
        self._strikes[endpoint_id] = strikes
        if window_s is None:
            window_s = unusable_window(strikes, self.first_window_s, self.window_s)
        until = self._now(now) + window_s
        self._until[endpoint_id] = max(until, self._until.get(endpoint_id, until))
        return self._until[endpoint_id]

    def record_success(self, endpoint_id: int) -> None:
        """The endpoint served a call: its streak of refusals ends."""
        self._strikes.pop(endpoint_id, None)

    def clear(self, endpoint_id: int) -> None:
        """Forget a mark and its streak."""
        self._until.pop(endpoint_id, None)
        self._strikes.pop(endpoint_id, None)

    def is_usable(self, endpoint_id: int, now: float | None = None) -> bool:
        current = self._now(now)
        until = self._until.get(endpoint_id)
        return until is None or current >= until

    def unusable_ids(self, now: float | None = None) -> frozenset[int]:
        """Endpoints still inside their window (expired marks are forgotten; their
        streak stays until the endpoint serves a call)."""
        current = self._now(now)
        expired = [eid for eid, until in self._until.items() if current >= until]
        for endpoint_id in expired:
            del self._until[endpoint_id]
        return frozenset(self._until)

    def usable_ids(self, endpoint_ids: Iterable[int], now: float | None = None) -> frozenset[int]:
        """The given endpoints minus those marked unusable at ``now``."""
        unusable = self.unusable_ids(now)
        return frozenset(eid for eid in endpoint_ids if eid not in unusable)
