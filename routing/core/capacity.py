"""Per-endpoint concurrency caps learnt from 429s (O3, issue 10), pure: clock injected.

A provider that accepts only so many calls at once answers the next one with a 429.
Marking it (R2.7) after such a refusal takes it out of the market although it serves
its cap all day; retrying after the refusal costs the customer a round trip. Instead,
a 429 teaches a cap: ``shrink`` (0.9) x the calls the gateway still had in flight
there (the provider just accepted that many and refused one more). While the gateway's
own in-flight calls at an endpoint reach its cap, the endpoint is *full*: plans put it
after the others (spill-over), as a marked one, so the request goes to the next choice
before the provider refuses. Each served call raises the cap by ``grow`` (0.05), so a
cap below the provider's real one creeps back up (and the next 429 sets it again);
a cap without a 429 for ``forget_after_s`` is dropped.

The caps are per gateway process (the simulator has one): with N processes each one
learns about 1/N of the provider's cap from its own in-flight count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

SHRINK = 0.9
GROW = 0.05
FORGET_AFTER_S = 600.0


class ConcurrencyCaps:
    """endpoint_id -> learnt cap (calls in flight) and when the last 429 set it."""

    def __init__(
        self, shrink: float = SHRINK, grow: float = GROW, forget_after_s: float = FORGET_AFTER_S
    ) -> None:
        self.shrink = shrink
        self.grow = grow
        self.forget_after_s = forget_after_s
        self._caps: dict[int, float] = {}
        self._set_at: dict[int, float] = {}

    def refused(self, endpoint_id: int, inflight: int, now: float) -> float:
        """A 429 while the gateway had ``inflight`` other calls there: the new cap."""
        cap = max(1.0, self.shrink * inflight)
        self._caps[endpoint_id] = cap
        self._set_at[endpoint_id] = now
        return cap

    def served(self, endpoint_id: int) -> None:
        """A served call: a learnt cap grows back a little."""
        if endpoint_id in self._caps:
            self._caps[endpoint_id] += self.grow

    def cap(self, endpoint_id: int, now: float) -> float | None:
        """The learnt cap (None: none, or forgotten)."""
        set_at = self._set_at.get(endpoint_id)
        if set_at is None:
            return None
        if now - set_at > self.forget_after_s:
            del self._caps[endpoint_id], self._set_at[endpoint_id]
            return None
        return self._caps[endpoint_id]

    def full_ids(self, inflight: Mapping[int, int] | Sequence[int], now: float) -> frozenset[int]:
        """Endpoints whose in-flight calls (``inflight[endpoint_id]``) reach their cap."""
        full = []
        for endpoint_id in list(self._caps):
            cap = self.cap(endpoint_id, now)
            if cap is not None and inflight[endpoint_id] >= cap:
                full.append(endpoint_id)
        return frozenset(full)
