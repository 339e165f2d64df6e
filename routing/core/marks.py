"""Unusable endpoints (R2.7): an endpoint that refuses a call is skipped, then tried
again within 15 minutes.

Which failures mark is decided by ``Reliability`` (below): a run of failures, a failure
at an endpoint without many recent successes, or a failure rate far above its peers'.

The window grows with consecutive refusals: ``first_window_s`` after the first, doubling
with each further refusal, never more than ``max_window_s`` (15 minutes); a call the
endpoint serves ends the streak. A provider that sheds load with a 429 at its peaks is
back in seconds, one that is down stays out for up to 15 minutes. (A flat 15 minutes
after any 429 took a concurrency-capped provider out of a 429 storm's market almost
entirely: docs/simulator.md; a 429 no longer marks at all: ``core.capacity``.)

After a mark ends, traffic returns gradually (``ramp_limit``): the endpoint takes one
call in flight at first (a probe of sorts), then twice as many every ``RAMP_STEP_S``,
until ``RAMP_S`` after the expiry. Beyond the limit it is treated as full (plans put
it last), so the whole market's traffic does not land on it at once and three quick
failures of that herd do not mark it again (issue 43).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .clock import Clocked

UNUSABLE_WINDOW_S = 900.0
FIRST_UNUSABLE_WINDOW_S = 30.0
MAX_DOUBLINGS = 64
RAMP_STEP_S = 3.0  # the calls in flight a returning endpoint may take double this often
RAMP_S = 30.0  # then it takes its whole share again


def ramp_limit(since_s: float, step_s: float = RAMP_STEP_S, ramp_s: float = RAMP_S) -> float:
    """Calls in flight an endpoint may take ``since_s`` after its mark ended (inf: the
    ramp is over): 1, then doubling every ``step_s``."""
    if since_s >= ramp_s or since_s < 0:
        return float("inf")
    return 2.0 ** (since_s // step_s)


def unusable_window(strikes: int, first_window_s: float, max_window_s: float) -> float:
    """The window after the ``strikes``-th consecutive refusal (1 = the first)."""
    # A streak only grows while the provider refuses: past ~1,000 doublings 2 ** n no
    # longer fits a float (OverflowError), and 64 already exceed any window.
    doublings = min(max(0, strikes - 1), MAX_DOUBLINGS)
    return min(max_window_s, first_window_s * 2**doublings)


class UnusableMarks(Clocked):
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
        super().__init__(clock)
        self.window_s = window_s
        self.first_window_s = min(first_window_s, window_s)
        self._until: dict[int, float] = {}
        self._strikes: dict[int, int] = {}
        self._ended: dict[int, float] = {}  # endpoint -> when its last mark ended

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
        self._ended.pop(endpoint_id, None)
        return self._until[endpoint_id]

    def record_success(self, endpoint_id: int) -> bool:
        """The endpoint served a call: its streak of refusals ends (True if it had one)."""
        return self._strikes.pop(endpoint_id, None) is not None

    def strikes(self, endpoint_id: int) -> int:
        """Consecutive refusals so far (0: none since it last served)."""
        return self._strikes.get(endpoint_id, 0)

    def until(self, endpoint_id: int) -> float:
        """When the endpoint's mark ends (0.0: none is known)."""
        return self._until.get(endpoint_id, 0.0)

    def state(self) -> tuple[dict[int, float], dict[int, int]]:
        """Copies of every mark's deadline and every streak (for inspection)."""
        return dict(self._until), dict(self._strikes)

    def merge(self, endpoint_id: int, until: float, strikes: int) -> None:
        """A mark from the shared store (another process's): the later deadline and the
        longer streak are kept; 0 strikes ends the streak."""
        self._until[endpoint_id] = max(until, self._until.get(endpoint_id, 0.0))
        if strikes:
            self._strikes[endpoint_id] = max(strikes, self._strikes.get(endpoint_id, 0))
        else:
            self._strikes.pop(endpoint_id, None)

    def set_windows(self, window_s: float, first_window_s: float) -> None:
        self.window_s = window_s
        self.first_window_s = min(first_window_s, window_s)

    def clear(self, endpoint_id: int) -> None:
        """Forget a mark and its streak."""
        self._until.pop(endpoint_id, None)
        self._strikes.pop(endpoint_id, None)
        self._ended.pop(endpoint_id, None)

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
            self._ended[endpoint_id] = self._until.pop(endpoint_id)
        return frozenset(self._until)

    def returning(self, now: float | None = None) -> dict[int, float]:
        """Endpoints whose mark ended less than ``RAMP_S`` ago -> the calls in flight
        they may take now (``ramp_limit``); read after ``unusable_ids``."""
        current = self._now(now)
        limits = {}
        for endpoint_id, ended in list(self._ended.items()):
            limit = ramp_limit(current - ended)
            if limit == float("inf"):
                del self._ended[endpoint_id]
            else:
                limits[endpoint_id] = limit
        return limits

    def usable_ids(self, endpoint_ids: Iterable[int], now: float | None = None) -> frozenset[int]:
        """The given endpoints minus those marked unusable at ``now``."""
        unusable = self.unusable_ids(now)
        return frozenset(eid for eid in endpoint_ids if eid not in unusable)


# --- reliability as a rate (issue 10, weakness 2) -----------------------------------------
HALF_LIFE_S = 60.0
CONSECUTIVE_FAILURES = 3
MANY_SUCCESSES = 10.0
RATE_FLOOR = 0.25
PEER_FACTOR = 4.0


class _Tally:
    """Exponentially decayed counts of served and failed calls, and the current run of
    consecutive failures."""

    __slots__ = ("failed", "ok", "streak", "t")

    def __init__(self, t: float) -> None:
        self.ok = 0.0
        self.failed = 0.0
        self.streak = 0
        self.t = t

    def decay(self, now: float, half_life_s: float) -> None:
        if now > self.t:
            # an idle stretch (marked, or no traffic) ages the counts by one half-life at
            # most: what the successes proved is not erased by a pause (issue 43)
            factor = 0.5 ** (min(now - self.t, half_life_s) / half_life_s)
            self.ok *= factor
            self.failed *= factor
            self.t = now


@dataclass(eq=False)
class Reliability:
    """Recent error rates per endpoint, and when a failure should mark it (R2.7).

    At volume, marking on any single 5xx/429 empties the pool (at 30 req/s nearly every
    endpoint was marked much of the time). A failure marks the endpoint when:

    - it is the ``consecutive``-th failure in a row (a provider that is really refusing:
      R2.7 keeps its meaning), or
    - it is not among many successes (decayed served calls < ``many_successes``): at low
      volume one refusal still marks, as before, or
    - the endpoint's recent failure rate is at least ``rate_floor`` and ``peer_factor``
      times its peers' pooled rate ("far worse than its peers", O4).

    Counts decay with ``half_life_s`` of traffic: a gap without calls (a mark's window)
    ages them by one half-life at most, so an endpoint back from a mark still has what
    its successes proved and a lone 5xx does not mark it again. A 429 is no failure
    here (it teaches a concurrency cap, ``core.capacity``). Failures are refusals before
    the first token and streams cut after it (a provider cutting every stream after 3
    tokens is demoted).
    """

    half_life_s: float = HALF_LIFE_S
    consecutive: int = CONSECUTIVE_FAILURES
    many_successes: float = MANY_SUCCESSES
    rate_floor: float = RATE_FLOOR
    peer_factor: float = PEER_FACTOR
    _tallies: dict[int, _Tally] = field(default_factory=dict, init=False, repr=False)

    def _tally(self, endpoint_id: int, now: float) -> _Tally:
        tally = self._tallies.get(endpoint_id)
        if tally is None:
            tally = self._tallies[endpoint_id] = _Tally(now)
        tally.decay(now, self.half_life_s)
        return tally

    def served(self, endpoint_id: int, now: float) -> None:
        tally = self._tally(endpoint_id, now)
        tally.ok += 1.0
        tally.streak = 0

    def failed(self, endpoint_id: int, now: float, peers: Iterable[int] = ()) -> bool:
        """Count a failure; True when it should mark the endpoint unusable."""
        tally = self._tally(endpoint_id, now)
        tally.failed += 1.0
        tally.streak += 1
        if tally.streak >= self.consecutive or tally.ok < self.many_successes:
            return True
        rate = tally.failed / (tally.ok + tally.failed)
        return rate >= self.rate_floor and rate >= self.peer_factor * self.peer_rate(
            endpoint_id, peers, now
        )

    def failure_rate(self, endpoint_id: int, now: float) -> float:
        tally = self._tallies.get(endpoint_id)
        if tally is None:
            return 0.0
        tally.decay(now, self.half_life_s)
        total = tally.ok + tally.failed
        return tally.failed / total if total > 0 else 0.0

    def peer_rate(self, endpoint_id: int, peers: Iterable[int], now: float) -> float:
        """The pooled recent failure rate of the other endpoints in ``peers``."""
        ok = failed = 0.0
        for peer in peers:
            tally = self._tallies.get(peer)
            if peer == endpoint_id or tally is None:
                continue
            tally.decay(now, self.half_life_s)
            ok, failed = ok + tally.ok, failed + tally.failed
        return failed / (ok + failed) if ok + failed > 0 else 0.0
