"""One router, two stores (issue 41): a script of events (requests, first tokens,
failures, 429s, hedge timers, a price change, a failed probe) runs through the core
router over the live store adapter (routing/gateway/router.py ``LiveStores``: the
process's knowledge, the outbox, the database's hedge budget) and over the simulator's
(lab/simulator/strategies/stores.py ``SimStores``: a knowledge with its own speed book,
an in-memory budget). Both make the same decisions and learn the same lessons.

The live knowledge keeps no speed book: its summary is what every process wrote to the
database. Here the test is the refresher: it summarises the speed-sample rows the live
adapter queued on the outbox (the rows, not the lessons), so the two speed summaries
agree only if those rows carry what the simulator learnt.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from decimal import Decimal

import pytest
from django.conf import settings

from lab.simulator.strategies.stores import SimStores
from routing.budget import (
    day_number,
    hedge_budget_left_usd,
    hedge_budget_replace,
    hedge_budget_try_reserve,
    utc_today,
)
from routing.core import InMemoryHedgeBudget, RoutingOptions
from routing.core.budget import budget_day
from routing.core.knowledge import RoutingKnowledge
from routing.core.lessons import Failed, Probed
from routing.core.router import SmartRouter
from routing.core.speed import SpeedBook, SpeedSample
from routing.core.types import bucket_for
from routing.gateway.router import LiveStores
from routing.memory import memory, reset_memory
from routing.outbox import Outbox
from tests.core.market import ENDPOINTS, MODEL, PEERS, served

pytestmark = pytest.mark.django_db

OPTIONS = RoutingOptions()


class Queue(list):
    """An outbox queue without its background writer."""

    put = list.append


class Live:
    """The live side: the process's knowledge under the live settings, a request's
    ``LiveStores``, the database's budget reserved and settled as call.py does."""

    def __init__(self) -> None:
        reset_memory()
        knowledge = memory.current()
        # the outbox's queues, read here instead of written to Redis and the database
        self.outbox = Outbox(Queue(), Queue(), Queue())
        self.stores = LiveStores(knowledge, self.outbox)
        self.router = SmartRouter(knowledge.config, knowledge, self.stores, random.Random(1))
        config = knowledge.config
        self.book = SpeedBook(
            config.speed_window_size, config.speed_max_age_s, config.speed_stale_after_s
        )

    def refresh(self, now: float) -> None:
        """What the refresher does: the database's budget and the shared samples."""
        memory.hedge_budget_remaining_usd = float(hedge_budget_left_usd(utc_today()))
        memory.hedge_budget_day = day_number(utc_today())
        while self.outbox.samples:
            row = self.outbox.samples.pop(0)
            sample = SpeedSample(now, row.ttft_ms / 1000, cached=row.cached)
            self.book.record(row.endpoint_id, row.bucket, sample)
        self.router.knowledge.shared_speed = self.book.summary(now)

    def reserve(self, usd: float) -> bool:
        return hedge_budget_try_reserve(Decimal(str(usd)))

    def settle(self) -> None:
        for reserved, spent in self.stores.settlements:
            hedge_budget_replace(reserved, spent)
        self.stores.settlements.clear()


class Sim:
    def __init__(self, now: float) -> None:
        config = memory.current().config
        self.budget = InMemoryHedgeBudget(
            config.hedge_budget_usd_per_day, lambda: now, burst_s=config.hedge_budget_burst_s
        )
        knowledge = RoutingKnowledge(config, {1: 0, 2: 0, 3: 0})
        self.stores = SimStores(knowledge, self.budget)
        self.router = SmartRouter(config, knowledge, self.stores, random.Random(1))


@pytest.fixture
def live_settings(monkeypatch):
    for key, value in {
        "EXPLORATION_RATE": 0.0,
        "ROUTING_CONCURRENCY_CAPS": True,
        "HEDGE_DAILY_BUDGET_USD": 0.05,
        "HEDGE_BUDGET_BURST_S": 86_400.0,
    }.items():
        monkeypatch.setitem(settings.UBERLLM, key, value)


def request(router: SmartRouter, now: float, prompt: int, endpoints=ENDPOINTS, **kw):
    lookup = [(f"p{prompt}", prompt)]
    earlier = kw.get("earlier", 0)
    features = router.features(
        "m", prompt, lookup, PEERS, now, stream=True, earlier=earlier, customer=7
    )
    return features, router.plan(MODEL, endpoints, features, OPTIONS, now)


def both(live: Live, sim: Sim, call):
    """``call(router)`` on both sides: the same value, returned."""
    mine, theirs = call(live.router), call(sim.router)
    assert mine == theirs
    return mine


def test_the_live_and_the_simulated_stores_decide_and_learn_alike(live_settings) -> None:
    t = time.time()
    live, sim = Live(), Sim(t)
    # 0. what the gateway knows: one served call at each endpoint
    for endpoint_id, ttft_s in ((1, 1.0), (2, 1.3), (3, 4.0)):
        both(live, sim, lambda r, e=endpoint_id, s=ttft_s: r.on_success(served(e, s, 40_000), t))
    live.refresh(t)
    # 1. a long streamed request: plan, first attempt, a delayed hedge whose timer fires
    features, plan = both(live, sim, lambda r: request(r, t, 40_000))
    first = both(live, sim, lambda r: r.next_attempt(plan, []))
    assert first == (1, 0.0)
    decision = both(live, sim, lambda r: r.hedge_decision(plan, True))
    assert decision.mode == "delayed"
    start = both(live, sim, lambda r: r.start_hedge(plan, features, 1, [1], t))
    assert start is not None and start.endpoint_id != 1
    assert live.reserve(start.reserve_usd)  # call.py, as the hedge leg opens
    # 2. the hedge leg's first token wins: the primary is cancelled, the race settles
    loser = both(live, sim, lambda r: r.on_cancel(ENDPOINTS[0], features))
    both(live, sim, lambda r: r.end_hedge(start, loser, t + 1))
    live.settle()
    # 3. it ends whole: a TTFT sample, the reply's length, its prefix cached there
    call = served(start.endpoint_id, 0.8, 40_000, prefixes=("p40000",))
    both(live, sim, lambda r: r.on_success(call, t + 3))
    live.refresh(t + 3)
    assert live.router.stores.hedge_budget_left(budget_day(t)) == pytest.approx(
        sim.budget.remaining()
    )
    # 4. a follow-up turn: the prefix is cached where it was served
    features, plan = both(live, sim, lambda r: request(r, t + 4, 40_000, earlier=1))
    assert features.cached_tokens == {start.endpoint_id: 40_000}
    # 5. a short request: alpha refuses (503), bravo answers 429 with 2 calls in flight
    for side in (live, sim):
        side.router.knowledge.inflight[2] = 2
    features, plan = both(live, sim, lambda r: request(r, t + 5, 1_000))
    step = both(live, sim, lambda r: r.next_attempt(plan, []))
    lessons, retry = both(live, sim, lambda r: r.on_failure(step[0], "http", 503, PEERS, t + 5))
    assert retry and lessons == [Failed(step[0], "http", 503, True, 0, PEERS)]
    step = both(live, sim, lambda r, tried=[step[0]]: r.next_attempt(plan, tried))
    lessons, _ = both(live, sim, lambda r: r.on_failure(step[0], "http", 429, PEERS, t + 6))
    assert lessons[0].inflight == 2 and lessons[0].status == 429
    # 6. a cut stream and a failed probe
    both(live, sim, lambda r: r.on_cut(3, PEERS, t + 7))
    probe = Probed(3, 20_000, None, False)
    for side in (live, sim):
        side.stores.emit([probe], t + 8)
    # 7. a price change: alpha becomes the dearest
    dearer = (replace(ENDPOINTS[0], price_input=0.9), *ENDPOINTS[1:])
    live.refresh(t + 9)
    features, plan = both(live, sim, lambda r: request(r, t + 9, 1_000, endpoints=dearer))
    # 8. the same knowledge on both sides
    mine, theirs = live.router.knowledge, sim.router.knowledge
    assert mine.marks.state() == theirs.marks.state() != ({}, {})
    assert mine.unusable(t + 9) == theirs.unusable(t + 9) and mine.unusable(t + 9)
    assert mine.caps.cap(2, t + 9) == theirs.caps.cap(2, t + 9) is not None
    bucket = bucket_for(40_000)
    assert mine.outputs.expected("m", bucket) == theirs.outputs.expected("m", bucket)
    assert mine.summary(t + 9).typical_by_key == theirs.summary(t + 9).typical_by_key
    assert mine.summary(t + 9).typical_by_key  # the sample arrived through the outbox
    # and the live side shared it: its marks and prefixes are queued for the stores
    assert {m.endpoint_id for m in live.outbox.marks} == set(mine.marks.state()[1])
    assert [(h, e) for h, e, _ in live.outbox.prefixes] == [("p40000", start.endpoint_id)]
