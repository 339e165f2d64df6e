"""The simulated requests: generated once per (scenario, seed, count) and shared by every
strategy, so all of them see the same arrivals, prompts and provider behaviour.

Single requests arrive as a Poisson process per class. A conversation (coding agent)
starts as a Poisson process too; turn ``j`` arrives ``turn_gap_s`` after turn ``j-1``
(drawn in advance, whatever the routing did) with the prompt of turn ``j-1``, its reply
and ``growth_tokens`` new tokens, so most of it can be read from a prompt cache.

With ``traffic.daily_pattern`` (24 multipliers by UTC hour of the virtual clock) the
arrivals (conversation starts) are a non-homogeneous Poisson process, drawn by thinning:
candidates at the class's rate x the largest multiplier, each kept with probability
multiplier(hour) / largest (its own random stream, so the draws stay a pure function of
the seed). Without it the process is exactly the homogeneous one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from routing.core import RoutingOptions, bucket_for
from routing.core.prefix import PREFIX_LOOKBACK

from .scenario import ClassSpec, Scenario

BUCKET_INDEX = {"<8k": 0, "8k-32k": 1, "32k-128k": 2, ">128k": 3}

Prefix = tuple[str, int]


class SimRequest:
    """One customer request. ``prefixes`` is the conversation's (or class's shared
    prefix's) chain of (hash, tokens), ``turn`` the index of this request's own prompt in
    it; ``cache_key`` identifies what a provider can cache for it (-1: nothing)."""

    __slots__ = (
        "bucket",
        "bucket_index",
        "cache_key",
        "class_index",
        "index",
        "model",
        "options",
        "output_tokens",
        "prefixes",
        "prompt_tokens",
        "rseed",
        "shared_key",
        "shared_tokens",
        "stream",
        "t",
        "turn",
    )

    def __init__(
        self,
        t: float,
        cls: ClassSpec,
        prompt_tokens: int,
        output_tokens: int,
        stream: bool,
        rseed: int,
        options: RoutingOptions | None,
        cache_key: int = -1,
        prefixes: list[Prefix] | None = None,
        turn: int = 0,
    ) -> None:
        self.index = -1
        self.t = t
        self.model = cls.model
        self.class_index = cls.index
        self.prompt_tokens = prompt_tokens
        self.output_tokens = max(1, output_tokens)
        self.stream = stream
        self.rseed = rseed
        self.options = options
        self.cache_key = cache_key
        self.prefixes = prefixes
        self.turn = turn
        self.shared_key = cls.index if cls.shared_prefix_tokens else -1
        self.shared_tokens = min(cls.shared_prefix_tokens, prompt_tokens)
        self.bucket = bucket_for(prompt_tokens)
        self.bucket_index = BUCKET_INDEX[self.bucket]

    def lookup_prefixes(self) -> list[Prefix]:
        """Prefixes the gateway checks in its prefix cache (first + latest 16)."""
        chain = self.prefixes
        if not chain:
            return []
        recent = chain[max(0, self.turn - PREFIX_LOOKBACK + 1) : self.turn + 1]
        return recent if recent[0] is chain[0] else [chain[0], *recent]

    def earlier_turns(self) -> int:
        """Turns of its conversation before it (0: a single request or a first turn); a
        class's shared prefix heads the chain but is no turn."""
        if self.cache_key < 0:
            return 0
        return self.turn - (1 if self.shared_key >= 0 else 0)

    def remembered_prefixes(self) -> list[Prefix]:
        """Prefixes the gateway remembers after serving it (its first and its own: the
        prefixes ``routing.core.router.ServedCall`` carries)."""
        chain = self.prefixes
        if not chain:
            return []
        return [chain[0]] if self.turn == 0 else [chain[0], chain[self.turn]]


@dataclass(frozen=True, slots=True)
class Traffic:
    requests: tuple[SimRequest, ...]
    duration_s: float


def _options(cls: ClassSpec, rng: random.Random) -> RoutingOptions | None:
    u = rng.random()
    if cls.max_price is not None and u < cls.max_price_share:
        return cls.max_price
    if cls.options and u < cls.max_price_share + cls.options_share:
        return cls.options[rng.randrange(len(cls.options))]
    return None


Keep = Callable[[float], bool]  # thinning: whether a candidate arrival at t is kept


def _always(t: float) -> bool:
    return True


def _arrivals(
    cls: ClassSpec, rng: random.Random, horizon: float, keep: Keep, peak: float
) -> Iterator[float]:
    """The class's arrival times up to ``horizon``: a Poisson process at its rate x
    ``peak``, thinned by ``keep``. Each gap is drawn from ``rng`` when the next time is
    asked for, after whatever the caller drew for the previous arrival."""
    t = 0.0
    while True:
        t += rng.expovariate(cls.rate_per_s * peak)
        if t > horizon:
            return
        if keep(t):
            yield t


def _singles(
    cls: ClassSpec, rng: random.Random, horizon: float, keep: Keep = _always, peak: float = 1.0
) -> list[SimRequest]:
    out: list[SimRequest] = []
    shared = [(f"s{cls.index}", cls.shared_prefix_tokens)] if cls.shared_prefix_tokens else None
    for t in _arrivals(cls, rng, horizon, keep, peak):
        prompt = max(1, round(cls.prompt.sample(rng)))  # type: ignore[union-attr]
        output = round(cls.output.sample(rng))
        stream = rng.random() < cls.stream_share
        options = _options(cls, rng)
        out.append(
            SimRequest(
                t, cls, prompt, output, stream, rng.getrandbits(62), options, prefixes=shared
            )
        )
    return out


def _conversations(
    cls: ClassSpec, rng: random.Random, horizon: float, keep: Keep = _always, peak: float = 1.0
) -> list[SimRequest]:
    out: list[SimRequest] = []
    for number, t0 in enumerate(_arrivals(cls, rng, horizon, keep, peak), start=1):
        key = cls.index * 100_000_000 + number
        turns = max(1, round(cls.turns.sample(rng)))  # type: ignore[union-attr]
        stream = rng.random() < cls.stream_share
        options = _options(cls, rng)
        chain: list[Prefix] = []
        if cls.shared_prefix_tokens:
            chain.append((f"s{cls.index}", cls.shared_prefix_tokens))
        prompt = max(1, round(cls.first_prompt.sample(rng)))  # type: ignore[union-attr]
        t = t0
        for turn in range(turns):
            if prompt > cls.max_prompt_tokens:
                break
            chain.append((f"c{key}:{turn}", prompt))
            output = round(cls.output.sample(rng))
            out.append(
                SimRequest(
                    t,
                    cls,
                    prompt,
                    output,
                    stream,
                    rng.getrandbits(62),
                    options,
                    cache_key=key,
                    prefixes=chain,
                    turn=len(chain) - 1,
                )
            )
            prompt += max(1, output) + round(cls.growth.sample(rng))  # type: ignore[union-attr]
            t += cls.turn_gap_s.sample(rng)  # type: ignore[union-attr]
    return out


def _estimated_rate(scenario: Scenario) -> float:
    rate = 0.0
    for cls in scenario.classes:
        turns = cls.turns.mean_estimate() if cls.conversation and cls.turns else 1.0
        rate += cls.rate_per_s * max(1.0, turns)
    if scenario.daily_pattern is not None:
        rate *= sum(scenario.daily_pattern) / 24
    return rate


def _thinning(scenario: Scenario, seed: int, cls: ClassSpec) -> tuple[Keep, float]:
    """(keep, peak multiplier) for ``traffic.daily_pattern``; (always, 1) without one."""
    pattern = scenario.daily_pattern
    if pattern is None:
        return _always, 1.0
    peak = max(pattern)
    rng = random.Random(f"{seed}:daily:{cls.index}:{cls.name}")
    start = scenario.start_epoch

    def keep(t: float) -> bool:
        return rng.random() * peak < pattern[int((start + t) // 3600) % 24]

    return keep, peak


def utc_hour(scenario: Scenario, t: float) -> int:
    """The UTC hour (0-23) of simulated second ``t``."""
    return int((scenario.start_epoch + t) // 3600) % 24


def generate_traffic(scenario: Scenario, seed: int, count: int) -> Traffic:
    """The first ``count`` requests of the scenario's traffic, in arrival order."""
    horizon = 1.25 * count / _estimated_rate(scenario) + 60.0
    while True:
        requests: list[SimRequest] = []
        for cls in scenario.classes:
            rng = random.Random(f"{seed}:traffic:{cls.index}:{cls.name}")
            make = _conversations if cls.conversation else _singles
            if scenario.daily_pattern is None:
                requests.extend(make(cls, rng, horizon))
            else:
                keep, peak = _thinning(scenario, seed, cls)
                requests.extend(make(cls, rng, horizon, keep, peak))
        if len(requests) >= count:
            break
        horizon *= 1.5
    requests.sort(key=lambda r: (r.t, r.class_index, r.rseed))
    requests = requests[:count]
    for index, request in enumerate(requests):
        request.index = index
    return Traffic(tuple(requests), requests[-1].t if requests else 0.0)
