"""Per-endpoint concurrency caps learnt from 429s (O3, issue 10), pure: clock injected.

A provider that accepts only so many calls at once answers the next one with a 429:
it sheds load, it is not down (product decision "A 429 teaches capacity, not
unusability"; a 429 never marks, ``core.retry``). A 429 teaches a cap: ``shrink``
(0.9) x the calls the gateway still had in flight there (the provider just accepted
that many and refused one more). While the gateway's own in-flight calls at an
endpoint reach its cap, the endpoint is *full*: plans put it after the others
(spill-over), as a marked one, so the request goes to the next choice before the
provider refuses.

The cap rises again as the 429s stop: by ``rise_per_s`` calls a second since the last
429 (one call every 15 s), so a cap below the provider's real one creeps back up and
the next 429 sets it again, about once per ``1 / (rise_per_s x (1 - shrink))`` seconds
at a busy endpoint instead of after every few served calls (a per-call growth made
the refusals as frequent as the traffic: 1.3-1.8% of requests retried, issue 43). A cap
without a 429 for ``forget_after_s`` is dropped.

A ``Retry-After`` on a 429 (``providers.refusals``) holds the endpoint full until then
(at most ``max_hold_s``): no new call goes there, none is marked.

The caps are per gateway process (the simulator has one): with N processes each one
learns about 1/N of the provider's cap from its own in-flight count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

SHRINK = 0.9
RISE_PER_S = 1.0 / 15.0
FORGET_AFTER_S = 600.0
MAX_HOLD_S = 60.0


@dataclass(eq=False)
class ConcurrencyCaps:
    """endpoint_id -> learnt cap (calls in flight), when the last 429 set it, and the
    end of a Retry-After hold."""

    shrink: float = SHRINK
    rise_per_s: float = RISE_PER_S
    forget_after_s: float = FORGET_AFTER_S
    max_hold_s: float = MAX_HOLD_S
    _caps: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _set_at: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _held_until: dict[int, float] = field(default_factory=dict, init=False, repr=False)

    def refused(
        self, endpoint_id: int, inflight: int, now: float, retry_after_s: float | None = None
    ) -> float:
        """A 429 while the gateway had ``inflight`` other calls there: the new cap."""
        cap = max(1.0, self.shrink * inflight)
        self._caps[endpoint_id] = cap
        self._set_at[endpoint_id] = now
        if retry_after_s is not None and retry_after_s > 0:
            until = now + min(retry_after_s, self.max_hold_s)
            self._held_until[endpoint_id] = max(until, self._held_until.get(endpoint_id, 0.0))
        return cap

    def cap(self, endpoint_id: int, now: float) -> float | None:
        """The learnt cap at ``now`` (None: none, or forgotten)."""
        set_at = self._set_at.get(endpoint_id)
        if set_at is None:
            return None
        since = now - set_at
        if since > self.forget_after_s:
            del self._caps[endpoint_id], self._set_at[endpoint_id]
            return None
        return self._caps[endpoint_id] + self.rise_per_s * max(0.0, since)

    def held(self, endpoint_id: int, now: float) -> bool:
        """Inside a Retry-After hold (expired holds are forgotten)."""
        until = self._held_until.get(endpoint_id)
        if until is None:
            return False
        if now >= until:
            del self._held_until[endpoint_id]
            return False
        return True

    def full_ids(self, inflight: Mapping[int, int] | Sequence[int], now: float) -> frozenset[int]:
        """Endpoints held by a Retry-After, or whose in-flight calls
        (``inflight[endpoint_id]``) reach their cap."""
        full = [eid for eid in list(self._held_until) if self.held(eid, now)]
        for endpoint_id in list(self._caps):
            cap = self.cap(endpoint_id, now)
            if cap is not None and inflight[endpoint_id] >= cap:
                full.append(endpoint_id)
        return frozenset(full)
