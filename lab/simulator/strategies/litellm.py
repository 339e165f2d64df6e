"""``litellm-latency``: LiteLLM's latency-based routing and cooldowns, reproduced from
router_strategy/lowest_latency.py and router_utils/cooldown_handlers.py (see
/work/shared/reference/gateway-peers.md section 1), quirks included:

- on success it records latency = (end - start) / completion_tokens and, for streams,
  ttft = (first token - start) / completion_tokens, in lists of at most 10 where a full
  list keeps its 9 OLDEST samples and overwrites the last (not a rolling window); a
  timeout appends a 1000 s penalty latency;
- to pick, every healthy deployment not yet in its map is seeded with ``latency: [0]``
  (an int, which the sum skips but the length counts, and which stays in the map); the
  score is the sum of the TTFT list (streams, if not empty) or of the latency list,
  divided by the LENGTH OF THE LATENCY LIST; shuffled, sorted, random among those
  <= lowest x (1 + buffer 0); prompt size and price play no part; the map resets
  3600 s after its last write;
- cooldown 5 s when a failure "requires" one (429, 401, 404, 408, 5xx; not other 4xx,
  not connection errors) and: a 429 in a group of several deployments, or > 50%
  failures this minute with >= 5 requests, or 100% with >= 1000, or a non-retryable
  status; or more than 3 allowed fails within the cooldown time (the documented
  ``allowed_fails``);
- retries (num_retries = max_attempts - 1) re-pick among healthy deployments (the
  same one may come again); no wait when more than one deployment is healthy, else
  Retry-After (1 s on a 429) or 0.5 s x 2^n (<= 8 s) x jitter; with none healthy it
  waits for the first cooldown to end. Pre-call checks (context window) are on.
"""

from __future__ import annotations

from collections import defaultdict

from routing.core import RequestFeatures, RoutingError
from routing.core.filters import filter_endpoints

from ..runs import Leg, Run
from .base import SimContext, Step, Strategy, core_plan, first_of, with_sort

MAX_LIST = 10
BUFFER = 0.0
MAP_TTL_S = 3600.0
COOLDOWN_S = 5.0
ALLOWED_FAILS = 3
FAIL_THRESHOLD = 0.5
MIN_REQUESTS = 5
SINGLE_DEPLOYMENT_THRESHOLD = 1000
TIMEOUT_PENALTY_S = 1000.0


def _append(values: list, value: float) -> list:
    """LiteLLM's trim: a full list keeps its first 9 values and replaces the last."""
    if len(values) < MAX_LIST:
        values.append(value)
        return values
    return [*values[: MAX_LIST - 1], value]


def _cooldown_required(status: int | None, kind: str) -> bool:
    if kind == "connect":
        return False  # "APIConnectionError" is ignored by _is_cooldown_required
    status = 408 if kind == "timeout" else status
    if status is None:
        return True
    if 400 <= status < 500:
        return status in (429, 401, 408, 404)
    return True


def _should_retry(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


class LiteLLMLatency(Strategy):
    name = "litellm-latency"

    def __init__(self, sim: SimContext) -> None:
        super().__init__(sim)
        self.rng = sim.rng(self.name)
        self.maps: list[dict[int, dict[str, list]]] = [{} for _ in self.models]
        self.last_write = [0.0 for _ in self.models]
        self.cooldown_until: dict[int, float] = {}
        self.allowed_fails: dict[int, tuple[int, float]] = {}
        self.minute: dict[int, list[int]] = defaultdict(lambda: [-1, 0, 0])

    def _deployments(self, run: Run) -> list[int]:
        request = run.request
        options = with_sort(request.options, "price")
        features = run.scratch
        model = self.models[request.model]
        allowed = filter_endpoints(model, self.sim.endpoints(request.model), features, options)
        return [e.endpoint_id for e in allowed]

    def _pick(self, run: Run, now: float) -> tuple[int | None, int]:
        """(deployment or None, number of healthy deployments)."""
        healthy = [e for e in run.order if self.cooldown_until.get(e, 0.0) <= now]
        if not healthy:
            return None, 0
        model = run.request.model
        entries = self.maps[model]
        if entries and now - self.last_write[model] > MAP_TTL_S:
            entries.clear()
        for endpoint_id in healthy:
            if endpoint_id not in entries:
                entries[endpoint_id] = {"latency": [0]}
        items = list(entries.items())
        healthy_set = set(healthy)
        potential = []
        for endpoint_id, entry in self.rng.sample(items, len(items)):
            if endpoint_id not in healthy_set:
                continue
            latency, ttft = entry["latency"], entry.get("ttft", [])
            values = ttft if run.request.stream and ttft else latency
            total = sum(v for v in values if isinstance(v, float))
            potential.append((endpoint_id, total / len(latency)))
        potential.sort(key=lambda item: item[1])
        lowest = potential[0][1]
        valid = [item for item in potential if item[1] <= lowest + BUFFER * lowest]
        return self.rng.choice(valid)[0], len(healthy)

    def _wait_for_cooldown(self, run: Run, now: float) -> Step:
        endpoint_id = min(run.order, key=lambda e: (self.cooldown_until.get(e, 0.0), e))
        return endpoint_id, max(0.0, self.cooldown_until.get(endpoint_id, 0.0) - now)

    def first(self, run: Run, now: float) -> Step | None:
        request = run.request
        run.scratch = RequestFeatures(request.prompt_tokens, 0, stream=request.stream)
        if request.options is not None and request.options.is_customer_choice:
            run.plan = core_plan(self, run, run.scratch, request.options)
            return first_of(self, run)
        run.order = self._deployments(run)
        if not run.order:
            raise RoutingError(404, "no_endpoint", "no deployment fits")
        endpoint_id, _ = self._pick(run, now)
        return (endpoint_id, 0.0) if endpoint_id is not None else self._wait_for_cooldown(run, now)

    def next_attempt(self, run: Run, now: float) -> Step | None:
        if run.plan is not None:
            return super().next_attempt(run, now)
        if len(run.tried) >= self.policy.max_attempts:
            return None
        endpoint_id, healthy = self._pick(run, now)
        if endpoint_id is None:
            return self._wait_for_cooldown(run, now)
        if healthy > 1:
            return endpoint_id, 0.0
        if run.hit429:
            return endpoint_id, 1.0
        retries = len(run.tried) - 1
        return endpoint_id, min(0.5 * 2.0**retries, 8.0) * (1 - 0.25 * self.rng.random())

    # --- learning ------------------------------------------------------------------------
    def _count(self, endpoint_id: int, failed: bool) -> tuple[int, int]:
        minute = int(self.sim.epoch() // 60)
        counts = self.minute[endpoint_id]
        if counts[0] != minute:
            counts[:] = [minute, 0, 0]
        counts[2 if failed else 1] += 1
        return counts[1], counts[2]

    def on_success(self, run: Run, leg: Leg, now: float) -> None:
        self._count(leg.endpoint_id, failed=False)
        request = run.request
        entry = self.maps[request.model].setdefault(leg.endpoint_id, {})
        tokens = request.output_tokens
        entry["latency"] = _append(entry.get("latency", []), (now - leg.start) / tokens)
        if request.stream:
            entry["ttft"] = _append(entry.get("ttft", []), leg.delay / tokens)
        self.last_write[request.model] = now

    def on_failure(self, run: Run, leg: Leg, now: float) -> None:
        endpoint_id = leg.endpoint_id
        successes, fails = self._count(endpoint_id, failed=True)
        if leg.kind == "timeout":
            entry = self.maps[run.request.model].setdefault(endpoint_id, {})
            entry["latency"] = _append(entry.get("latency", []), TIMEOUT_PENALTY_S)
        if not _cooldown_required(leg.status, leg.kind):
            return
        status = 408 if leg.kind == "timeout" else (leg.status or 500)
        several = len(self.sim.endpoints(run.request.model)) > 1
        total = successes + fails
        share = fails / total
        count, expires = self.allowed_fails.get(endpoint_id, (0, 0.0))
        count = count + 1 if expires > now else 1
        self.allowed_fails[endpoint_id] = (count, now + COOLDOWN_S)
        if (
            (status == 429 and several)
            or (share == 1.0 and total >= SINGLE_DEPLOYMENT_THRESHOLD)
            or (share > FAIL_THRESHOLD and total >= MIN_REQUESTS and several)
            or not _should_retry(status)
            or count > ALLOWED_FAILS
        ):
            self.cooldown_until[endpoint_id] = now + COOLDOWN_S
