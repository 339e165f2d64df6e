"""The simulated providers: what each attempt would do, what providers have cached, and
what they bill. One ``Market`` per strategy run (in-flight counts and prompt caches
depend on where the strategy sent traffic); the random draws do not (see randomness).

An attempt's outcome, in this order: ``down`` -> connect failure; ``status_override``
-> that HTTP status; prompt over ``context_length`` -> 400; ``concurrency_cap`` reached
-> 429; prompt tokens accepted from us in the last minute + this prompt over
``tokens_per_minute`` -> 429; ``rate_limit_rate`` -> 429; ``error_rate`` -> 500;
otherwise a first token after
``(ttft_base_s + prefill) x exp(jitter_sigma x N(0,1)) [+ stall]`` where prefill =
``uncached / prefill_tokens_per_s + cached / (prefill_tokens_per_s x
cached_prefill_speedup)``, x ``slow_factor`` above ``slow_above_tokens`` (the
emulator's formula); with a ``prefill_curve`` the speed is the curve's at the prompt's
size instead (and ``slow_above_tokens`` does not apply); a first token later than the
timeout is a ``timeout`` failure. An endpoint with ``no_cache`` reads and writes no
prompt cache; one with ``output_tokens_factor`` f serves round(f x the requested output)
tokens (at least 1), streamed and billed as such.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from routing.core import EndpointInfo

from .fields import curve_speed
from .randomness import mix, normal, uniforms
from .scenario import PRICE_FIELDS, EventSpec, Scenario
from .traffic import SimRequest

OK, HTTP, CONNECT, TIMEOUT = "ok", "http", "connect", "timeout"
TPM_WINDOW_S = 60.0
PER_MILLION = 1_000_000.0

# An outcome: (kind, http status or None, seconds from start to first token or failure,
# cached prompt tokens read).
Outcome = tuple[str, int | None, float, int]


class EndpointState:
    """One endpoint's live behaviour (scenario fields, changed by timed events)."""

    def __init__(self, fields: dict, model: int) -> None:
        self.model = model
        self.__dict__.update(fields)
        self.cache_ttl_as_listed = fields["cache_ttl_s"]
        self.catalog_cache_ttl_s = 0.0 if self.no_cache else self.cache_ttl_as_listed
        self.info = self.make_info()

    def make_info(self) -> EndpointInfo:
        """The catalog entry the gateway routes with (prices follow price events; an
        endpoint with ``no_cache`` lists no cache discount: cache reads at the input
        price, no cache write price)."""
        no_cache = self.no_cache
        return EndpointInfo(
            endpoint_id=self.endpoint_id,
            provider_slug=self.provider,
            price_input=self.price_input,
            price_cache_read=self.price_input if no_cache else self.price_cache_read,
            price_cache_write=0.0 if no_cache else self.price_cache_write,
            price_output=self.price_output,
            context_length=self.context_length,
        )


class Market:
    """Endpoints by id (``endpoints[id]``, id 0 unused), in-flight counts and caches."""

    def __init__(self, scenario: Scenario, seed: int) -> None:
        self.seed = seed
        self.timeout_s = float(scenario.gateway["first_token_timeout_s"])
        # A strategy may set a per-attempt first-token timeout: (request, endpoint id) ->
        # seconds, or None for the flat one (smart: routing.core.first_token_timeout_s).
        self.timeout_for: Callable[[SimRequest, int], float | None] | None = None
        self.endpoints: list[EndpointState] = [None]  # type: ignore[list-item]
        self.by_model: list[list[EndpointState]] = []
        for model in scenario.models:
            states = [EndpointState(dict(fields), model.index) for fields in model.endpoints]
            self.endpoints.extend(states)
            self.by_model.append(states)
        self.infos: list[tuple[EndpointInfo, ...]] = [
            tuple(s.info for s in states) for states in self.by_model
        ]
        self.ids_by_model = [tuple(s.endpoint_id for s in states) for states in self.by_model]
        self.inflight = [0] * len(self.endpoints)
        # tokens_per_minute: prompt tokens of the calls each endpoint accepted, last 60 s
        self._tpm: list[deque[tuple[float, int]]] = [deque() for _ in self.endpoints]
        self._tpm_used = [0] * len(self.endpoints)
        self._cache: dict[tuple[int, int], tuple[float, int]] = {}
        self._base: dict[tuple[int, str], object] = {}  # a field's value before any event
        self._active: dict[int, EventSpec] = {}  # event number -> started, not ended

    # --- timed events ------------------------------------------------------------------
    def apply_event(self, number: int, event: EventSpec, starting: bool) -> None:
        """Start (or end) one scenario event. Several events may change the same field
        of one endpoint, one after the other or overlapping: the field has the value of
        the latest-started event still running (ties: the later one in the file), or
        its own value when none is, so an ending event restores whatever applies then."""
        if starting:
            for endpoint_id in event.endpoint_ids:
                state = self.endpoints[endpoint_id]
                for name in event.fields:
                    self._base.setdefault((endpoint_id, name), getattr(state, name))
            self._active[number] = event
        elif self._active.pop(number, None) is None:
            return  # ended before it started (until_min <= at_min): nothing to restore
        running = sorted(self._active.items(), key=lambda item: (item[1].at_s, item[0]))
        for endpoint_id in event.endpoint_ids:
            state = self.endpoints[endpoint_id]
            for name in event.fields:
                value = self._base[(endpoint_id, name)]
                for _, other in running:
                    if name in other.fields and endpoint_id in other.endpoint_ids:
                        value = other.fields[name]
                setattr(state, name, value)
            if "no_cache" in event.fields:
                state.catalog_cache_ttl_s = 0.0 if state.no_cache else state.cache_ttl_as_listed
            if PRICE_FIELDS & event.fields.keys() or "no_cache" in event.fields:
                state.info = state.make_info()
                self.infos[state.model] = tuple(s.info for s in self.by_model[state.model])

    # --- prompt caches -----------------------------------------------------------------
    def cached_tokens(self, endpoint_id: int, request: SimRequest, now: float) -> int:
        """Prompt tokens this endpoint really has cached for ``request`` now."""
        if self.endpoints[endpoint_id].no_cache:
            return 0
        best = 0
        if request.cache_key >= 0:
            entry = self._cache.get((endpoint_id, request.cache_key))
            if entry is not None and entry[0] > now:
                best = min(entry[1], request.prompt_tokens)
        if request.shared_key >= 0 and best < request.shared_tokens:
            entry = self._cache.get((endpoint_id, -1 - request.shared_key))
            if entry is not None and entry[0] > now:
                best = request.shared_tokens
        return best

    def write_cache(self, endpoint_id: int, request: SimRequest, now: float) -> None:
        """The endpoint prefilled ``request``: its prompt is cached for cache_ttl_s."""
        if self.endpoints[endpoint_id].no_cache:
            return
        expires = now + self.endpoints[endpoint_id].cache_ttl_s
        if request.cache_key >= 0:
            self._cache[(endpoint_id, request.cache_key)] = (expires, request.prompt_tokens)
        if request.shared_key >= 0:
            self._cache[(endpoint_id, -1 - request.shared_key)] = (expires, request.shared_tokens)

    def purge(self, now: float) -> None:
        expired = [key for key, (expires, _) in self._cache.items() if expires <= now]
        for key in expired:
            del self._cache[key]

    # --- attempts ----------------------------------------------------------------------
    def outcome(self, request: SimRequest, endpoint_id: int, now: float, nth: int = 0) -> Outcome:
        """What an attempt of ``request`` at ``endpoint_id`` started now would do (pure:
        reads the in-flight count and caches, changes nothing)."""
        s = self.endpoints[endpoint_id]
        if s.down:
            return (CONNECT, None, s.error_delay_s, 0)
        if s.status_override is not None:
            return (HTTP, s.status_override, s.error_delay_s, 0)
        if request.prompt_tokens + 1 > s.context_length:
            return (HTTP, 400, s.error_delay_s, 0)
        if s.concurrency_cap is not None and self.inflight[endpoint_id] >= s.concurrency_cap:
            return (HTTP, 429, s.rate_limit_delay_s, 0)
        limit = s.tokens_per_minute
        if (
            limit is not None
            and self.tokens_last_minute(endpoint_id, now) + request.prompt_tokens > limit
        ):
            return (HTTP, 429, s.rate_limit_delay_s, 0)
        u = uniforms(mix(self.seed, request.rseed, endpoint_id, nth), 7)
        if u[0] < s.rate_limit_rate:
            return (HTTP, 429, s.rate_limit_delay_s, 0)
        if u[1] < s.error_rate:
            return (HTTP, 500, s.error_delay_s, 0)
        cached = self.cached_tokens(endpoint_id, request, now) if u[2] < s.cache_hit_rate else 0
        ttft = self.ttft(s, request.prompt_tokens, cached, u[3], u[4], u[5], u[6])
        timeout = self.timeout_s
        if self.timeout_for is not None:
            timeout = self.timeout_for(request, endpoint_id) or timeout
        if ttft > timeout:
            return (TIMEOUT, None, timeout, 0)
        return (OK, None, ttft, cached)

    def stalled(self, request: SimRequest, endpoint_id: int, nth: int = 0) -> bool:
        """Whether the market drew a stall for this attempt (the truth a hedge is judged
        by: ``ttft``'s stall draw, whatever the attempt's outcome)."""
        u = uniforms(mix(self.seed, request.rseed, endpoint_id, nth), 7)
        return u[5] < self.endpoints[endpoint_id].stall_probability

    def tokens_last_minute(self, endpoint_id: int, now: float) -> int:
        """Prompt tokens of the calls the endpoint accepted from us in the last 60 s."""
        window = self._tpm[endpoint_id]
        while window and window[0][0] <= now - TPM_WINDOW_S:
            self._tpm_used[endpoint_id] -= window.popleft()[1]
        return self._tpm_used[endpoint_id]

    def accepted(self, endpoint_id: int, prompt_tokens: int, now: float) -> None:
        """A call the endpoint accepted (counts against its ``tokens_per_minute``)."""
        if self.endpoints[endpoint_id].tokens_per_minute is not None:
            self._tpm[endpoint_id].append((now, prompt_tokens))
            self._tpm_used[endpoint_id] += prompt_tokens

    @staticmethod
    def ttft(
        s: EndpointState, prompt: int, cached: int, u1: float, u2: float, u3: float, u4: float
    ) -> float:
        """Noise-applied time to first token (see the module doc)."""
        curve = s.prefill_curve
        rate = s.prefill_tokens_per_s if curve is None else curve_speed(curve, prompt)
        prefill = (prompt - cached) / rate + cached / (rate * s.cached_prefill_speedup)
        if curve is None and s.slow_above_tokens is not None and prompt > s.slow_above_tokens:
            prefill *= s.slow_factor
        ttft = s.ttft_base_s + prefill
        if s.jitter_sigma:
            ttft *= math.exp(s.jitter_sigma * normal(u1, u2))
        if u3 < s.stall_probability:
            ttft += s.stall_min_s + (s.stall_max_s - s.stall_min_s) * u4
        return ttft

    def cut_after(self, request: SimRequest, endpoint_id: int, nth: int = 0) -> int | None:
        """Output tokens after which the provider cuts this served stream (``cut_rate``:
        the share of served calls cut, at a uniform point of their output), None: whole.
        Drawn from (seed, request, endpoint, attempt number) like every other draw."""
        rate = self.endpoints[endpoint_id].cut_rate
        if not rate:
            return None
        u = uniforms(mix(self.seed, request.rseed, endpoint_id, nth, 0xC07), 2)
        if u[0] >= rate:
            return None
        return max(1, int(u[1] * self.output_tokens(endpoint_id, request)))

    def output_tokens(self, endpoint_id: int, request: SimRequest) -> int:
        """Output tokens this endpoint serves for ``request`` (``output_tokens_factor``
        x what the request asks for, at least 1)."""
        factor = self.endpoints[endpoint_id].output_tokens_factor
        if factor == 1.0:
            return request.output_tokens
        return max(1, round(request.output_tokens * factor))

    def stream_s(self, endpoint_id: int, output_tokens: int) -> float:
        """Seconds from the first token to the last."""
        return max(0, output_tokens - 1) / self.endpoints[endpoint_id].output_tokens_per_s

    def cost(self, endpoint_id: int, request: SimRequest, cached: int, output_tokens: int) -> float:
        """USD the provider bills: uncached prompt tokens at the input price (at the cache
        write price, when the endpoint has one, for prompts it caches), cached ones at the
        cache-read price, output at the output price. ``output_tokens`` is what the
        endpoint sent (``output_tokens()`` for a whole reply)."""
        s = self.endpoints[endpoint_id]
        uncached = request.prompt_tokens - cached
        cacheable = request.cache_key >= 0 and not s.no_cache
        write = s.price_cache_write if s.price_cache_write and cacheable else 0.0
        return (
            uncached * (write or s.price_input)
            + cached * s.price_cache_read
            + output_tokens * s.price_output
        ) / PER_MILLION
