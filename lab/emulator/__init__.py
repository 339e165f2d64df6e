"""Provider emulator: simulated OpenAI-compatible LLM providers over real HTTP.

One raw ASGI app (served by uvicorn) emulates several providers at once, each
from a JSON profile. Used by the gateway's tests, by ``make run`` as the demo
upstream, and by benchmarks. Framework-free: no Django import anywhere here.

Profile file (JSON; every provider field is optional, defaults shown)::

    {"seed": 42,                 # RNG seed; each provider gets Random(f"{seed}:{slug}")
     "time_scale": 1.0,          # multiplies every delay; 0 = never wait
     "providers": {
       "slug": {
         "api_key": null,               # set: require "Authorization: Bearer <it>", else 401
         "models": [],                  # model ids served; others -> 404 model_not_found
         "ttft_base_s": 0.35,           # base time to first token (simulated seconds)
         "prefill_tokens_per_s": 8000,  # ttft = base + uncached/rate + cached/(rate*speedup)
         "cached_prefill_speedup": 10,
         "slow_above_tokens": null,     # prompts above N tokens: prefill time x slow_factor
         "slow_factor": 1.0,
         "jitter": {"kind": "none", "sigma": 0.25},   # "lognormal": ttft x exp(sigma*N(0,1))
         "stall": {"probability": 0.0, "extra_s": [3.0, 8.0]},  # sometimes add U(lo, hi) s
         "output_tokens_per_s": 80,     # pacing of streamed tokens after the first
         "default_output_tokens": 24,   # natural reply length; max_tokens caps it ("length")
         "reasoning_tokens": 6,         # reasoning_content tokens when a request asks for them
         "error_rate": 0.0,             # probability of HTTP 500 before the first token
         "error_delay_s": 0.0,          # simulated seconds before an error_rate/override error
         "status_override": null,       # e.g. 429 or 503: every chat request gets it
         "concurrency_cap": null,       # more requests in flight -> 429 + Retry-After: 1
         "fail_after_tokens": null,     # cut the reply after N tokens ...
         "fail_mode": "error_event",    # ... with an SSE error event, or "abort" the connection
         "context_length": null,        # prompts above it -> 400 context_length_exceeded
         "cache_ttl_s": 300,            # prompt-prefix cache lifetime (x time_scale if > 0)
         "time_scale": null             # per-provider override of the global time_scale
       }}}

Keys starting with ``_`` (e.g. ``"_comment"``) are ignored; unknown keys are errors.
See ``README.md`` for routes, the log record and ``EmulatorServer``.
"""

from .app import EmulatorApp, create_app
from .profiles import PROVIDER_DEFAULTS, EmulatorConfig, ProfileError, load_config
from .server import EmulatorServer
from .tokens import estimate_prompt_tokens, message_tokens

__all__ = [
    "PROVIDER_DEFAULTS",
    "EmulatorApp",
    "EmulatorConfig",
    "EmulatorServer",
    "ProfileError",
    "create_app",
    "estimate_prompt_tokens",
    "load_config",
    "message_tokens",
]
