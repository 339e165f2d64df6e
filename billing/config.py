"""Billing's knobs as one typed value (``billing_config()``), read from settings.UBERLLM
once and again only after a change (common/config.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.config import knobs_config


@dataclass(frozen=True, slots=True)
class BillingConfig:
    api_key_cache_ttl_s: float = 5.0  # how long a key's lookup is cached in a process
    spend_prompt_margin: float = 1.25  # a reservation's prompt tokens: the estimate x this
    spend_reservation_ttl_s: float = 900.0  # an unsettled reservation expires after this
    ledger_flush_interval_s: float = 0.2  # the ledger writer writes at most this often
    reconcile_after_s: float = 90.0  # a pending row with no heartbeat for this long is closed
    invitation_max_age_h: float = 72.0
    activity_retention_days: int = 0  # 0: keep every ledger month
    activity_archive_dir: Path = Path("var/archive")


billing_config = knobs_config(BillingConfig)
