"""The live gateway's typed settings, read once per change of ``settings.UBERLLM``.

``gateway_config()`` is the routing core's ``GatewayConfig`` (routing/core/config.py:
the knobs of routing decisions, shared with the simulator); ``live_config()`` is
``LiveConfig``, the live shell's own knobs (timers, limits, probes' economy, stores).
Both are built by ``common.config.settings_config``: a read costs one identity check,
and a test's ``monkeypatch.setitem(settings.UBERLLM, ...)`` takes effect at the next
read. ``settings.UBERLLM[...]`` is read here and nowhere else in routing/.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.config import knobs_config, settings_config

from .core.config import GatewayConfig


@dataclass(frozen=True, slots=True)
class LiveConfig:
    """The live shell's knobs (defaults: the product's, uberllm/settings.py). Each
    field is the lowercase name of its settings key."""

    max_body_bytes: int = 10 * 1024 * 1024
    max_json_depth: int = 128
    max_inflight_calls: int = 2_000
    ledger_backlog_max: int = 50_000
    off_loop_body_bytes: int = 64 * 1024
    spend_default_max_tokens: int = 4_096
    early_stream_start: bool = True
    keepalive_after_s: float = 2.0
    keepalive_interval_s: float = 3.0
    speed_cache_ttl_s: float = 1.0
    speed_sample_flush_interval_s: float = 0.5
    shared_key_prefix: str = "ullm"
    catalog_cache_ttl_s: float = 5.0
    catalog_reload_wait_s: float = 2.0
    ledger_checkpoint_s: float = 1.0
    ledger_checkpoint_lead_s: float = 1.5
    ledger_checkpoint_after_s: float = 1.0  # a call younger than this is not checkpointed
    ledger_heartbeat_s: float = 30.0
    probe_concurrency: int = 4
    probe_daily_budget_usd: float = 25.0
    probe_spend_share: float = 0.25
    probe_spend_window_s: float = 3_600.0
    probe_result_max_age_days: int = 30


gateway_config = settings_config(GatewayConfig.from_settings)
live_config = knobs_config(LiveConfig)
