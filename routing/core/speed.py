"""Typical time to first token per (endpoint, prompt-size bucket) (R2.1, R2.2).

Rule (R2.2): the typical TTFT of a window is its median. Once the window holds at
least ``OUTLIER_MIN_SAMPLES`` (10) samples, a *slow outlier* is a sample above
``OUTLIER_FACTOR`` (3) x the plain median; outliers weigh ``OUTLIER_WEIGHT`` (0.25)
and the typical value is the weighted median. One bad call therefore cannot drop a
good provider, while a provider that really became slow (most samples slow) moves
its median and is no longer an outlier to itself.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import median

OUTLIER_MIN_SAMPLES = 10
OUTLIER_FACTOR = 3.0
OUTLIER_WEIGHT = 0.25
DEFAULT_WINDOW = 50
_EPSILON = 1e-12

SpeedKey = tuple[int, str]  # (endpoint_id, bucket or bucket + CACHED_SUFFIX)

# A call whose prompt was mostly a cache read is timed in a window of its own: cached
# prefill is 10-20x faster at real providers, so one window mixing first turns and
# probes (never cached) with agent turns (~90% cached) describes neither.
CACHED_SUFFIX = "+cached"
MOSTLY_CACHED_SHARE = 0.5


def mostly_cached(cached_tokens: int, prompt_tokens: int) -> bool:
    """True when at least half of the prompt is (expected to be) a cache read."""
    return prompt_tokens > 0 and cached_tokens >= MOSTLY_CACHED_SHARE * prompt_tokens


def speed_bucket(bucket: str, cached: bool) -> str:
    """The window name of a bucket for mostly cached (``cached``) or uncached calls."""
    return bucket + CACHED_SUFFIX if cached else bucket


@dataclass(frozen=True, slots=True)
class SpeedSample:
    """One measured call: ``t`` = when (clock seconds), ``ttft_s`` = time to first token,
    ``cached``: most of its prompt was a cache read (it goes to the cached window),
    ``prompt_tokens``: its prompt's size (``size_line``)."""

    t: float
    ttft_s: float
    is_probe: bool = False
    cached: bool = False
    prompt_tokens: int = 0  # the call's prompt size (0: unknown)


def weighted_median(sorted_values: list[float], weights: list[float]) -> float:
    """Weighted median of ascending values; equal weights give the plain median."""
    half = sum(weights) / 2
    cumulative = 0.0
    for index, (value, weight) in enumerate(zip(sorted_values, weights, strict=True)):
        cumulative += weight
        if cumulative >= half - _EPSILON:
            if abs(cumulative - half) <= _EPSILON and index + 1 < len(sorted_values):
                return (value + sorted_values[index + 1]) / 2
            return value
    return sorted_values[-1]


TAIL_QUANTILE = 0.9


def slow_tail(ttfts: Iterable[float], typical: float | None = None) -> float:
    """The slow tail of a window, in seconds above its typical value (0 with fewer than
    ``OUTLIER_MIN_SAMPLES`` samples): its ``TAIL_QUANTILE`` (0.9) quantile minus the
    typical value. A median ignores a provider that stalls on 13% of calls (R2.2 is
    built for that), yet those stalls set the customers' p90; with
    ``SmartTuning.tail_weight`` > 0, R2.4 also compares typical + weight x tail
    (``Candidate.tailed``)."""
    values = sorted(ttfts)
    if len(values) < OUTLIER_MIN_SAMPLES:
        return 0.0
    if typical is None:
        typical = typical_ttft(values)
    assert typical is not None
    index = min(len(values) - 1, int(TAIL_QUANTILE * len(values)))
    return max(0.0, values[index] - typical)


SIZE_LINE_MIN_SAMPLES = 10
SIZE_LINE_MIN_SPREAD = 1.3  # the upper half's median prompt >= 1.3 x the lower half's

Line = tuple[float, float]  # (intercept s, slope s per token)


def size_line(samples: Iterable[SpeedSample]) -> Line | None:
    """How a window's TTFT grows with the prompt's size, robust to stalls: the line
    through the (median prompt, median TTFT) of its smaller and its larger half; None
    with fewer than ``SIZE_LINE_MIN_SAMPLES`` sized samples, too little spread of sizes
    or a line that does not rise."""
    sized = sorted((s.prompt_tokens, s.ttft_s) for s in samples if s.prompt_tokens > 0)
    if len(sized) < SIZE_LINE_MIN_SAMPLES:
        return None
    half = len(sized) // 2
    low, high = sized[:half], sized[-half:]
    low_p, high_p = median(p for p, _ in low), median(p for p, _ in high)
    if high_p < SIZE_LINE_MIN_SPREAD * low_p:
        return None
    low_t, high_t = median(t for _, t in low), median(t for _, t in high)
    slope = (high_t - low_t) / (high_p - low_p)
    if slope <= 0:
        return None
    return low_t - slope * low_p, slope


SIZE_REFERENCE_BOUNDS = (0.5, 2.0)  # x the window's typical TTFT


def typical_for_size(typical: float, line: Line | None, prompt_tokens: int) -> float:
    """The typical TTFT of a ``prompt_tokens`` prompt in a window: on its ``size_line``,
    kept within ``SIZE_REFERENCE_BOUNDS`` x the window's typical value."""
    if line is None or prompt_tokens <= 0:
        return typical
    low, high = SIZE_REFERENCE_BOUNDS
    at_size = line[0] + line[1] * prompt_tokens
    return min(high * typical, max(low * typical, at_size))


def typical_ttft(ttfts: Iterable[float]) -> float | None:
    """R2.2 typical TTFT of a window of samples (None when empty); see module doc."""
    values = sorted(ttfts)
    if not values:
        return None
    ttft_median = median(values)
    if len(values) < OUTLIER_MIN_SAMPLES:
        return ttft_median
    outlier_above = OUTLIER_FACTOR * ttft_median
    weights = [OUTLIER_WEIGHT if value > outlier_above else 1.0 for value in values]
    return weighted_median(values, weights)


class SpeedWindow:
    """Rolling window of the last ``max_samples`` samples, optionally no older than
    ``max_age_s`` (samples are expected in time order)."""

    __slots__ = ("_samples", "max_age_s")

    def __init__(self, max_samples: int = DEFAULT_WINDOW, max_age_s: float | None = None):
        self._samples: deque[SpeedSample] = deque(maxlen=max_samples)
        self.max_age_s = max_age_s

    def add(self, sample: SpeedSample, now: float | None = None) -> None:
        self._samples.append(sample)
        if now is not None:
            self.expire(now)

    def expire(self, now: float) -> bool:
        """Drop samples older than max_age_s; True if any was dropped."""
        if self.max_age_s is None:
            return False
        oldest_kept = now - self.max_age_s
        dropped = False
        while self._samples and self._samples[0].t < oldest_kept:
            self._samples.popleft()
            dropped = True
        return dropped

    def samples(self) -> tuple[SpeedSample, ...]:
        return tuple(self._samples)

    def newest_t(self) -> float:
        """Time of the newest sample (the window must not be empty)."""
        return self._samples[-1].t

    def typical_ttft(self, now: float | None = None) -> float | None:
        if now is not None:
            self.expire(now)
        return typical_ttft(sample.ttft_s for sample in self._samples)

    def __len__(self) -> int:
        return len(self._samples)


@dataclass(frozen=True, slots=True)
class SpeedSummary:
    """Precomputed typical TTFT and sample counts per (endpoint_id, bucket), and
    optional throughput (output tokens/s) per endpoint. Read-only; cheap to query.

    Keys name the uncached window (``"32k-128k"``) or the cached one
    (``"32k-128k+cached"``, see ``speed_bucket``). ``newest_by_key``: clock time of each
    window's newest sample (missing when unknown). ``stale_keys``: windows whose newest
    sample was older than the stale age when the summary was made (R2.6 explores them:
    an endpoint that got faster where no probe and no real traffic goes is noticed).
    """

    typical_by_key: Mapping[SpeedKey, float] = field(default_factory=dict)
    count_by_key: Mapping[SpeedKey, int] = field(default_factory=dict)
    throughput_by_endpoint: Mapping[int, float] = field(default_factory=dict)
    newest_by_key: Mapping[SpeedKey, float] = field(default_factory=dict)
    stale_keys: frozenset[SpeedKey] = frozenset()
    tail_by_key: Mapping[SpeedKey, float] = field(default_factory=dict)
    # each window's TTFTs and each endpoint's throughputs, ascending: the quantiles of
    # OpenRouter's percentile preferences (preferences.py)
    samples_by_key: Mapping[SpeedKey, tuple[float, ...]] = field(default_factory=dict)
    throughput_samples_by_endpoint: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    line_by_key: Mapping[SpeedKey, Line] = field(default_factory=dict)  # size_line
    # figures derived from this snapshot, computed once per snapshot (plan.model_cache_ratio)
    derived: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def tail(self, endpoint_id: int, bucket: str) -> float:
        """The window's slow tail in seconds above its typical value (``slow_tail``)."""
        return self.tail_by_key.get((endpoint_id, bucket), 0.0)

    def typical(self, endpoint_id: int, bucket: str) -> float | None:
        return self.typical_by_key.get((endpoint_id, bucket))

    def typical_at(self, endpoint_id: int, bucket: str, prompt_tokens: int) -> float | None:
        """The window's typical TTFT for a prompt of this size (``typical_for_size``)."""
        typical = self.typical_by_key.get((endpoint_id, bucket))
        if typical is None:
            return None
        return typical_for_size(typical, self.line_by_key.get((endpoint_id, bucket)), prompt_tokens)

    def count(self, endpoint_id: int, bucket: str) -> int:
        return self.count_by_key.get((endpoint_id, bucket), 0)

    def newest(self, endpoint_id: int, bucket: str) -> float | None:
        return self.newest_by_key.get((endpoint_id, bucket))

    def throughput(self, endpoint_id: int) -> float | None:
        return self.throughput_by_endpoint.get(endpoint_id)


def _ttft_values(
    samples: Iterable[float | SpeedSample], oldest_kept: float | None
) -> tuple[list[float], float | None]:
    """The kept TTFTs and the time of the newest kept SpeedSample (None: no times)."""
    values: list[float] = []
    newest: float | None = None
    for sample in samples:
        if isinstance(sample, SpeedSample):
            if oldest_kept is None or sample.t >= oldest_kept:
                values.append(sample.ttft_s)
                newest = sample.t if newest is None else max(newest, sample.t)
        else:
            values.append(float(sample))
    return values, newest


def summarise(
    samples_by_key: Mapping[SpeedKey, Iterable[float | SpeedSample]],
    throughput_by_endpoint: Mapping[int, float] | None = None,
    *,
    now: float | None = None,
    max_age_s: float | None = None,
    stale_after_s: float | None = None,
) -> SpeedSummary:
    """Build a SpeedSummary from raw samples (TTFT seconds or SpeedSample).

    With ``now`` and ``max_age_s``, SpeedSample entries older than max_age_s are
    ignored (plain floats carry no time and are always kept). With ``now`` and
    ``stale_after_s``, keys whose newest sample is older than that are ``stale_keys``.
    """
    oldest_kept = None if now is None or max_age_s is None else now - max_age_s
    typical_by_key: dict[SpeedKey, float] = {}
    count_by_key: dict[SpeedKey, int] = {}
    newest_by_key: dict[SpeedKey, float] = {}
    tail_by_key: dict[SpeedKey, float] = {}
    ordered_by_key: dict[SpeedKey, tuple[float, ...]] = {}
    line_by_key: dict[SpeedKey, Line] = {}
    for key, samples in samples_by_key.items():
        samples = list(samples)
        timed = [s for s in samples if isinstance(s, SpeedSample)]
        kept = [s for s in timed if oldest_kept is None or s.t >= oldest_kept]
        line = size_line(kept)
        if line is not None:
            line_by_key[key] = line
        values, newest = _ttft_values(samples, oldest_kept)
        typical = typical_ttft(values)
        if typical is not None:
            typical_by_key[key] = typical
            count_by_key[key] = len(values)
            ordered_by_key[key] = tuple(sorted(values))
            tail = slow_tail(values, typical)
            if tail > 0:
                tail_by_key[key] = tail
            if newest is not None:
                newest_by_key[key] = newest
    throughput = dict(throughput_by_endpoint or {})
    stale = stale_since(newest_by_key, now, stale_after_s)
    return SpeedSummary(
        typical_by_key,
        count_by_key,
        throughput,
        newest_by_key,
        stale,
        tail_by_key,
        ordered_by_key,
        line_by_key=line_by_key,
    )


def stale_since(
    newest_by_key: Mapping[SpeedKey, float], now: float | None, stale_after_s: float | None
) -> frozenset[SpeedKey]:
    """Keys whose newest sample is more than ``stale_after_s`` old at ``now``."""
    if now is None or stale_after_s is None:
        return frozenset()
    oldest_fresh = now - stale_after_s
    return frozenset(key for key, newest in newest_by_key.items() if newest < oldest_fresh)


class SpeedBook:
    """Mutable collection of windows (simulator / in-process cache) that keeps a
    SpeedSummary up to date, recomputing only the keys that changed.

    With ``stale_after_s``: a window whose newest sample is older than that is stale
    (``SpeedSummary.stale_keys`` at ``summary(now)``), and a new sample after such a gap
    restarts the window: what an endpoint did before a long silence no longer says what
    it does now (an endpoint that got faster is judged by its new samples at once).
    """

    def __init__(
        self,
        window_size: int = DEFAULT_WINDOW,
        max_age_s: float | None = None,
        stale_after_s: float | None = None,
    ):
        self.window_size = window_size
        self.max_age_s = max_age_s
        self.stale_after_s = stale_after_s
        self._stale: frozenset[SpeedKey] = frozenset()
        self._windows: dict[SpeedKey, SpeedWindow] = {}
        self._throughput: dict[int, deque[float]] = {}
        self._typical: dict[SpeedKey, float] = {}
        self._count: dict[SpeedKey, int] = {}
        self._newest: dict[SpeedKey, float] = {}
        self._tail: dict[SpeedKey, float] = {}
        self._ordered: dict[SpeedKey, tuple[float, ...]] = {}
        self._line: dict[SpeedKey, Line] = {}
        self._dirty: set[SpeedKey] = set()
        self._summary: SpeedSummary | None = None

    def record(self, endpoint_id: int, bucket: str, sample: SpeedSample) -> None:
        """Add a sample to the bucket's cached or uncached window (``sample.cached``)."""
        key = (endpoint_id, speed_bucket(bucket, sample.cached))
        window = self._windows.get(key)
        gap = self.stale_after_s
        if window is None or (
            gap is not None and len(window) and sample.t - window.newest_t() > gap
        ):
            window = self._windows[key] = SpeedWindow(self.window_size, self.max_age_s)
        window.add(sample)
        if key in self._stale:
            self._stale = self._stale - {key}
        self._dirty.add(key)
        self._summary = None

    def restart(self, endpoint_id: int, bucket: str) -> None:
        """Forget a key's samples: a confirmed probe shift restarts its window (R5)."""
        key = (endpoint_id, bucket)
        if key in self._windows:
            self._windows[key] = SpeedWindow(self.window_size, self.max_age_s)
            self._dirty.add(key)
            self._summary = None

    def record_throughput(self, endpoint_id: int, tokens_per_s: float) -> None:
        window = self._throughput.setdefault(endpoint_id, deque(maxlen=self.window_size))
        window.append(tokens_per_s)
        self._summary = None

    def summary(self, now: float | None = None) -> SpeedSummary:
        """Current summary; with ``now``, expired samples are dropped first and the stale
        keys are found again."""
        if now is not None:
            for key, window in self._windows.items():
                if window.expire(now):
                    self._dirty.add(key)
        if self._dirty:
            self._recompute(self._dirty)
            self._dirty = set()
            self._summary = None
        if now is not None and self.stale_after_s is not None:
            stale = stale_since(self._newest, now, self.stale_after_s)
            if stale != self._stale:
                self._stale, self._summary = stale, None
        if self._summary is None:
            speeds = {eid: tuple(sorted(w)) for eid, w in self._throughput.items() if w}
            throughput = {eid: _median_of_sorted(v) for eid, v in speeds.items()}
            self._summary = SpeedSummary(
                dict(self._typical),
                dict(self._count),
                throughput,
                dict(self._newest),
                self._stale,
                dict(self._tail),
                dict(self._ordered),
                speeds,
                dict(self._line),
            )
        return self._summary

    def _recompute(self, keys: Iterable[SpeedKey]) -> None:
        for key in keys:
            window = self._windows[key]
            samples = window.samples()
            values = [sample.ttft_s for sample in samples]
            typical = typical_ttft(values)
            line = size_line(samples) if typical is not None else None
            if line is None:
                self._line.pop(key, None)
            else:
                self._line[key] = line
            if typical is None:
                self._typical.pop(key, None)
                self._count.pop(key, None)
                self._newest.pop(key, None)
                self._tail.pop(key, None)
                self._ordered.pop(key, None)
            else:
                self._typical[key] = typical
                self._ordered[key] = tuple(sorted(values))
                self._count[key] = len(window)
                self._newest[key] = window.newest_t()
                tail = slow_tail(values, typical)
                if tail > 0:
                    self._tail[key] = tail
                else:
                    self._tail.pop(key, None)


def _median_of_sorted(values: tuple[float, ...]) -> float:
    """``statistics.median`` of values already in ascending order (the same result)."""
    middle = len(values) // 2
    if len(values) % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2
