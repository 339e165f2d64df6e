"""What routing knows, and how a lesson changes it: one object, pure, clock injected.

``RoutingKnowledge`` holds every estimator the router reads: the speed book (R2.1/R2.2,
by bucket and cache state), the unusable marks and the error rates (R2.7, O4), the
learnt concurrency caps (O3), where prompt prefixes are cached (R2.3), the expected
follow-up turns, output sizes and per-endpoint reply lengths, and the token ratio.
``learn(lesson, now)`` is the only way it changes from a call; the reads are
``summary``, ``unusable``, ``cached_tokens``, ``followup_turns`` and ``probe_sizes``
(``SmartRouter.features`` puts a request's together).

The simulator keeps one per strategy run, with its own speed book. The live gateway
keeps one per process (``routing.memory``) without a book: its speed summary is the
refresher's (every process's samples, read from the database, ``shared_speed``), its
marks and prefixes are merged with the other processes' (``marks.merge``,
``prefixes.remember``); what a lesson teaches is decided here either way.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable, MutableMapping, Sequence

from .capacity import ConcurrencyCaps
from .config import DEFAULT_CONFIG, GatewayConfig
from .followups import FollowupEstimator
from .hedge import HedgeValues
from .lessons import Cut, Failed, HedgeSettled, Lesson, Marked, Probed, Served, ToolCallChecked
from .marks import Reliability, UnusableMarks
from .prefix import PrefixBook, PrefixHashes
from .probe import probe_sizes, worth_probing
from .speed import SpeedBook, SpeedSample, SpeedSummary
from .tokens import OutputEstimator, OutputLengths, TokenEstimator
from .toolcalls import ToolCallQuality
from .types import EndpointInfo, ModelInfo, bucket_for

EXPIRE_EVERY_S = 60.0  # the speed book's age expiry runs at most once a minute
PURGE_EVERY_S = 600.0  # expired prefixes are dropped at most every 10 minutes
NOTHING: tuple[Marked, ...] = ()


class RoutingKnowledge:
    """The router's knowledge (see the module doc). ``inflight``: our calls in flight
    per endpoint (the shell counts them); ``own_speed``: keep a speed book of the
    served calls and probes (the simulator), else read ``shared_speed``."""

    def __init__(
        self,
        config: GatewayConfig = DEFAULT_CONFIG,
        inflight: MutableMapping[int, int] | Sequence[int] | None = None,
        *,
        own_speed: bool = True,
    ) -> None:
        self.config = config
        self.inflight = inflight if inflight is not None else {}
        self.book: SpeedBook | None = None
        if own_speed:
            self.book = SpeedBook(
                config.speed_window_size, config.speed_max_age_s, config.speed_stale_after_s
            )
        self.shared_speed = SpeedSummary()
        self.marks = UnusableMarks(
            window_s=config.unusable_window_s, first_window_s=config.unusable_first_window_s
        )
        self.health = Reliability()
        self.caps = ConcurrencyCaps()
        self.prefixes = PrefixBook()
        self.followups = FollowupEstimator(minimum=config.followup_turns)
        self.outputs = OutputEstimator()
        self.output_lengths = OutputLengths()
        self.tokens = TokenEstimator()
        self.tool_calls = ToolCallQuality()
        self.hedge_values = HedgeValues()  # recent hedges' values (R3.4 rationed)
        self.real_at: dict[tuple[int, str], float] = {}  # last real uncached sample
        self._expired_at = -EXPIRE_EVERY_S
        self._purged_at = 0.0

    def configure(self, config: GatewayConfig) -> None:
        """New settings (the live shell, when the operator's settings change)."""
        self.config = config
        self.marks.set_windows(config.unusable_window_s, config.unusable_first_window_s)
        self.followups.minimum = config.followup_turns

    # --- reads -----------------------------------------------------------------------------
    def summary(self, now: float) -> SpeedSummary:
        """Typical TTFTs by endpoint and bucket (expired samples dropped once a minute)."""
        book = self.book
        if book is None:
            return self.shared_speed
        if now - self._expired_at >= EXPIRE_EVERY_S:
            self._expired_at = now
            return book.summary(now)
        return book.summary()

    def last_summary(self) -> SpeedSummary:
        """The summary as of the last ``summary(now)`` (a read that expires nothing: a
        hedge decided mid-request sees what its plan saw, plus newer samples)."""
        book = self.book
        return self.shared_speed if book is None else book.summary()

    def unusable(self, now: float) -> frozenset[int]:
        """Marked endpoints (R2.7), the ones back from a mark whose ramp our calls in
        flight fill (``marks.ramp_limit``), and with concurrency caps the ones our calls
        in flight fill (O3) or a Retry-After holds: plans put them all last."""
        marked = self.marks.unusable_ids(now)
        inflight = self.inflight
        ramping = [
            eid for eid, limit in self.marks.returning(now).items() if inflight[eid] >= limit
        ]
        if ramping:
            marked = marked.union(ramping)
        if not self.config.concurrency_caps:
            return marked
        full = self.caps.full_ids(inflight, now)
        return marked | full if full else marked

    def tool_call_laggards(self, endpoint_ids: Iterable[int], now: float) -> frozenset[int]:
        """Endpoints whose tool calls are malformed far more often than their peers'
        (O5, ``core.toolcalls``): only exploration sends them requests with tools."""
        return self.tool_calls.laggards(endpoint_ids, now)

    def cached_tokens(
        self, lookup: PrefixHashes, endpoint_ids: Container[int], now: float
    ) -> dict[int, int]:
        """Prompt tokens each endpoint probably has cached (R2.3)."""
        if not lookup:
            return {}
        if now - self._purged_at >= PURGE_EVERY_S:
            self._purged_at = now
            self.prefixes.purge(now)
        return self.prefixes.cached_tokens(lookup, endpoint_ids, now)

    def followup_turns(self, model: str, earlier: int, customer: Hashable, bucket: str) -> float:
        """Follow-up turns to price a request with (``routing.core.followups``): a
        conversation (``earlier`` turns before it) with the model's learnt number; a
        first turn of ``customer`` (an API key; None: unknown) with its share of first
        turns of this size that went on (``first_turn_followups``)."""
        estimator = self.followups
        start = (model, customer, bucket)
        if customer is not None:
            estimator.observe_start(start, earlier)
        if earlier:
            estimator.observe(model, earlier)
            return estimator.expected(model)
        if customer is None or not self.config.first_turn_followups:
            return 0.0
        return estimator.expected_first(model, start)

    def probe_sizes(
        self,
        endpoint: EndpointInfo,
        model: ModelInfo,
        endpoints: Sequence[EndpointInfo],
        sizes: Sequence[int],
        now: float,
    ) -> list[int]:
        """The sizes to probe ``endpoint`` at (``core.probe.probe_sizes``) from what this
        knowledge measured: its real uncached samples of the last period, its windows."""
        config, eid = self.config, endpoint.endpoint_id
        if not worth_probing(endpoint, model, endpoints, config.tuning.dear_min_discount):
            return []
        period = config.probe_period_s
        measured = {
            bucket
            for (endpoint_id, bucket), at in self.real_at.items()
            if endpoint_id == eid and now - at < period
        }
        known = self.book.summary() if self.book is not None else self.shared_speed
        cold = not any(key[0] == eid for key in known.count_by_key)
        speed = self.summary(now) if config.probe_by_need else None
        return probe_sizes(
            endpoint,
            model,
            endpoints,
            sizes,
            measured=measured,
            cold=cold,
            speed=speed,
            tuning=config.tuning,
        )

    # --- learning --------------------------------------------------------------------------
    def learn(self, lesson: Lesson, now: float) -> tuple[Marked, ...]:
        """Apply one lesson; returns the marks it set or ended (for the shared stores)."""
        if type(lesson) is Served:
            return self._served(lesson, now)
        if type(lesson) is Failed:
            return self._failed(lesson, now)
        if type(lesson) is Cut:
            return self._count_failure(lesson.endpoint_id, lesson.peers, now)
        if type(lesson) is Probed:
            return self._probed(lesson, now)
        if type(lesson) is HedgeSettled:
            return NOTHING  # the hedge budget is the store's
        if type(lesson) is ToolCallChecked:
            self.tool_calls.checked(lesson.endpoint_id, lesson.valid, now)
            return NOTHING
        raise TypeError(f"not a lesson: {lesson!r}")

    def _mark(self, endpoint_id: int, now: float) -> tuple[Marked, ...]:
        until = self.marks.mark(endpoint_id, now)
        return (Marked(endpoint_id, until, self.marks.strikes(endpoint_id)),)

    def _count_failure(self, endpoint_id: int, peers: tuple[int, ...], now: float):
        if self.health.failed(endpoint_id, now, peers):
            return self._mark(endpoint_id, now)
        return NOTHING

    def _failed(self, lesson: Failed, now: float) -> tuple[Marked, ...]:
        if lesson.status == 429 and self.config.concurrency_caps:
            self.caps.refused(lesson.endpoint_id, lesson.inflight, now, lesson.retry_after_s)
        if lesson.counts:
            return self._count_failure(lesson.endpoint_id, lesson.peers, now)
        return NOTHING

    def _served(self, lesson: Served, now: float) -> tuple[Marked, ...]:
        eid = lesson.endpoint_id
        streak = self.marks.record_success(eid)
        self.health.served(eid, now)
        if lesson.ttft_s is not None and self.book is not None:
            size = lesson.prompt_tokens or lesson.raw_prompt_tokens
            sample = SpeedSample(now, lesson.ttft_s, cached=lesson.cached, prompt_tokens=size)
            self.book.record(eid, lesson.sample_bucket, sample)
            if not lesson.cached:
                self.real_at[(eid, lesson.sample_bucket)] = now
        if not lesson.estimated:
            model = lesson.model
            self.tokens.observe(model, lesson.raw_prompt_tokens, lesson.prompt_tokens)
            if lesson.complete:  # a reply cut at max_tokens says nothing of its length
                self.output_lengths.observe(model, eid, lesson.completion_tokens)
            self.outputs.observe(model, lesson.bucket, lesson.completion_tokens)
        if lesson.tps is not None and self.book is not None:
            self.book.record_throughput(eid, lesson.tps)
        if lesson.prefixes:
            expires_at = now + lesson.cache_ttl_s
            for prefix_hash in lesson.prefixes:
                self.prefixes.remember(prefix_hash, eid, expires_at)
        return (Marked(eid, 0.0, 0),) if streak else NOTHING

    def _probed(self, lesson: Probed, now: float) -> tuple[Marked, ...]:
        eid = lesson.endpoint_id
        if lesson.ttfts is None:
            return self._mark(eid, now)
        if self.book is not None:
            bucket = bucket_for(lesson.prompt_tokens)
            if lesson.restart:
                self.book.restart(eid, bucket)
            for ttft in lesson.ttfts:
                sample = SpeedSample(now, ttft, is_probe=True, prompt_tokens=lesson.prompt_tokens)
                self.book.record(eid, bucket, sample)
        return NOTHING
