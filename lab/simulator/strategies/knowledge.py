"""What the gateway knows, kept with the core's own classes on the virtual clock: speed
statistics (SpeedBook, R2.1/R2.2), unusable marks (UnusableMarks, R2.7), remembered
prompt prefixes (PrefixCache, R2.3) and expected output sizes (OutputEstimator).

It learns as routing/gateway/router.py and routing/probes.py do: after a served call ends, a
TTFT sample of the attempt that served it in its cached or uncached window (hedge
losers cancelled before their first token and failed attempts give none), its
throughput and its prompt prefixes; a refused call counts in the endpoint's recent
error rate and marks it when ``Reliability`` says so; a failed probe marks it; marks
are never cleared early (they expire).
"""

from __future__ import annotations

from routing.core import (
    OutputEstimator,
    OutputLengths,
    PrefixCache,
    RequestFeatures,
    SpeedBook,
    SpeedSample,
    SpeedSummary,
    UnusableMarks,
    bucket_for,
    classify_failure,
)
from routing.core.capacity import ConcurrencyCaps
from routing.core.followups import FollowupEstimator
from routing.core.marks import Reliability
from routing.core.probe import probe_relevant, worth_probing
from routing.core.speed import mostly_cached

from ..market import Market
from ..runs import Leg, Run

EXPIRE_EVERY_S = 60.0
COLD_PROBE_TOKENS = (
    2_000  # as routing/probes.py  # SpeedBook age expiry is applied at most once a simulated minute
)
PURGE_EVERY_S = 600.0


def earlier_turns(request) -> int:
    """Turns of the request's conversation before it (0: a single request or a first
    turn); a class's shared prefix heads the chain but is no turn."""
    if request.cache_key < 0:
        return 0
    return request.turn - (1 if request.shared_key >= 0 else 0)


class Knowledge:
    """The gateway's learned state for one strategy run."""

    def __init__(self, gateway: dict, market: Market) -> None:
        self.market = market
        self.gateway = gateway
        self.book = SpeedBook(
            int(gateway["speed_window_size"]),
            gateway["speed_max_age_s"],
            gateway["speed_stale_after_s"],
        )
        self.marks = UnusableMarks(
            window_s=float(gateway["unusable_window_s"]),
            first_window_s=float(gateway["unusable_first_window_s"]),
        )
        self.health = Reliability()
        # O3: caps learnt from 429s, checked against our own calls in flight (the
        # market's count of this strategy's calls, as the gateway counts its own)
        self.caps = ConcurrencyCaps() if gateway.get("concurrency_caps") else None
        self.peers = [
            tuple(s.endpoint_id for s in states) for states in market.by_model
        ]  # endpoint ids per model
        self.prefixes = PrefixCache()
        self.followups = FollowupEstimator(minimum=float(gateway["followup_turns"]))
        self.outputs = OutputEstimator()
        self.output_lengths = OutputLengths()
        self.probe_period_s = float(gateway["probe_period_s"])
        self.real_at: dict[tuple[int, str], float] = {}  # last real uncached sample
        self._expired_at = -EXPIRE_EVERY_S
        self._purged_at = 0.0
        self._summary: SpeedSummary | None = None

    def summary(self, now: float) -> SpeedSummary:
        if now - self._expired_at >= EXPIRE_EVERY_S:
            self._expired_at = now
            return self.book.summary(now)
        return self.book.summary()

    def unusable(self, now: float) -> frozenset[int]:
        """Marked endpoints, and (with concurrency caps) the full ones: both go last."""
        marked = self.marks.unusable_ids(now)
        if self.caps is None:
            return marked
        return marked | self.caps.full_ids(self.market.inflight, now)

    def features(self, run: Run, slug: str, now: float) -> RequestFeatures:
        """RequestFeatures as routing/gateway/accept.py builds them (exact prompt tokens)."""
        request = run.request
        cached: dict[int, int] = {}
        lookup = request.lookup_prefixes()
        if lookup:
            if now - self._purged_at >= PURGE_EVERY_S:
                self._purged_at = now
                self.prefixes.purge(now)
            endpoints = self.market.by_model[request.model]
            for state in endpoints:
                tokens = self.prefixes.cached_tokens(state.endpoint_id, lookup, now)
                if tokens:
                    cached[state.endpoint_id] = tokens
        expected = self.outputs.expected(slug, request.bucket, None)
        followups = self.followup_turns(request, slug)
        return RequestFeatures(
            request.prompt_tokens, expected, cached, stream=request.stream,
            expected_followup_turns=followups,
            output_factors=self.output_lengths.factors(slug),
        )  # fmt: skip

    def followup_turns(self, request, slug: str) -> float:
        """As routing/gateway/accept.py followup_turns(): a conversation past its first
        turn (it holds a reply), with the learnt number of turns still to come; a first
        turn, with its customer's share of continued first turns of that size (a traffic
        class stands for a customer's key)."""
        earlier, estimator = earlier_turns(request), self.followups
        estimator.observe(slug, earlier)
        start = (slug, request.class_index, request.bucket)
        estimator.observe_start(start, earlier)
        if earlier:
            return estimator.expected(slug)
        if self.gateway["first_turn_followups"]:
            return estimator.expected_first(slug, start)
        return 0.0

    def failure(self, leg: Leg, now: float) -> None:
        """A refusal marks the endpoint when ``Reliability`` says so (a run of them, low
        volume, or a failure rate far above its peers')."""
        if self.caps is not None and leg.status == 429:
            self.caps.refused(leg.endpoint_id, self.market.inflight[leg.endpoint_id], now)
        kind, status = leg.kind, leg.status
        if kind == "protocol":  # a reply cut before it reached the client: as a 502 (live)
            kind, status = "http", status or 502
        if classify_failure(status, kind).mark_unusable:
            endpoint_id = leg.endpoint_id
            peers = self.peers[self.market.endpoints[endpoint_id].model]
            if self.health.failed(endpoint_id, now, peers):
                self.marks.mark(endpoint_id, now)

    def cut(self, endpoint_id: int, now: float) -> None:
        """A stream the provider cut after its first token: a failure in the endpoint's
        error rate (no TTFT sample), as LiveRouter.on_cut."""
        peers = self.peers[self.market.endpoints[endpoint_id].model]
        if self.health.failed(endpoint_id, now, peers):
            self.marks.mark(endpoint_id, now)

    def success(self, run: Run, leg: Leg, slug: str, now: float) -> None:
        request = run.request
        self.marks.record_success(leg.endpoint_id)  # as routing/memory.py served()
        self.health.served(leg.endpoint_id, now)
        if self.caps is not None:
            self.caps.served(leg.endpoint_id)
        cached = mostly_cached(leg.cached, request.prompt_tokens)  # its own window
        sample = SpeedSample(now, leg.delay, cached=cached)
        self.book.record(leg.endpoint_id, request.bucket, sample)
        if not cached:
            self.real_at[(leg.endpoint_id, request.bucket)] = now
        self.outputs.observe(slug, request.bucket, request.output_tokens)
        # What this endpoint served, as LiveRouter.on_success (its replies' length).
        served = self.market.output_tokens(leg.endpoint_id, request)
        self.output_lengths.observe(slug, leg.endpoint_id, served)
        streaming = now - leg.start - leg.delay
        if request.output_tokens > 1 and streaming > 0:
            self.book.record_throughput(leg.endpoint_id, request.output_tokens / streaming)
        remembered = request.remembered_prefixes()
        if remembered:
            ttl = self.market.endpoints[leg.endpoint_id].catalog_cache_ttl_s
            self.prefixes.remember(leg.endpoint_id, remembered, ttl, now)

    def probe_sizes(self, endpoint_id: int, sizes: list[int], now: float) -> list[int]:
        """As routing/probes.py probe_targets: skip a size whose bucket real uncached
        traffic measured during the last period; an endpoint without any speed data (a
        cold start) is also probed below 8k."""
        period = self.probe_period_s
        wanted = [
            size for size in sizes
            if now - self.real_at.get((endpoint_id, bucket_for(size)), -period) >= period
        ]  # fmt: skip
        if not any(key[0] == endpoint_id for key in self.book.summary().count_by_key):
            wanted.append(COLD_PROBE_TOKENS)
        return wanted

    def probe(
        self,
        endpoint_id: int,
        prompt_tokens: int,
        ttfts: list[float] | None,
        restart: bool,
        now: float,
    ) -> None:
        """A failed probe marks the endpoint; answers are samples; a confirmed shift first
        restarts the bucket's window (SpeedBook.restart, when the core has it)."""
        if ttfts is None:
            self.marks.mark(endpoint_id, now)
            return
        bucket = bucket_for(prompt_tokens)
        if restart and hasattr(self.book, "restart"):
            self.book.restart(endpoint_id, bucket)
        for ttft in ttfts:
            self.book.record(endpoint_id, bucket, SpeedSample(now, ttft, is_probe=True))


class LearnsFromCalls:
    """Strategy hooks that feed a ``Knowledge`` (the host class sets ``self.knowledge``
    and ``self.models``): what the live gateway learns from each call and probe."""

    knowledge: Knowledge
    models: dict

    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        self.knowledge.failure(leg, now)

    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        self.knowledge.success(run, leg, self.models[run.request.model].slug, now)

    def on_cut(self, run: Run, leg: Leg, now: float) -> None:
        """For the session-driven flow: the serving leg's stream was cut."""
        self.knowledge.cut(leg.endpoint_id, now)

    def probe_typical(self, endpoint_id: int, bucket: str, now: float) -> float | None:
        return self.knowledge.summary(now).typical(endpoint_id, bucket)

    def probe_sizes(self, endpoint_id: int, sizes: list[int], now: float) -> list[int]:
        model = self.knowledge.market.endpoints[endpoint_id].model
        infos = self.knowledge.market.infos[model]
        info = next(e for e in infos if e.endpoint_id == endpoint_id)
        if not worth_probing(info, self.models[model], infos):
            return []  # never picked for speed (R2.9): as routing/probes.py
        wanted = self.knowledge.probe_sizes(endpoint_id, sizes, now)
        if not self.knowledge.gateway["probe_by_need"]:
            return wanted
        summary = self.knowledge.summary(now)
        model_info = self.models[model]
        gateway = self.knowledge.gateway
        ratio, under_s = gateway["fast_enough_ratio"], gateway["fast_enough_under_s"]
        under_s_long = gateway["fast_enough_under_s_long"]
        return [
            s for s in wanted
            if probe_relevant(
                info, s, model_info, infos, summary,
                ratio=ratio, under_s=under_s, under_s_long=under_s_long,
            )
        ]  # fmt: skip

    def on_probe(
        self,
        endpoint_id: int,
        prompt_tokens: int,
        ttfts: list[float] | None,
        restart: bool,
        now: float,
    ) -> None:
        self.knowledge.probe(endpoint_id, prompt_tokens, ttfts, restart, now)
