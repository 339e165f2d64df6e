"""The routing settings the router and the knowledge read, as one typed frozen value.

The live gateway builds it from ``settings.UBERLLM`` (``from_settings``: the only place
the router's knobs are read by name), the simulator from a scenario's ``gateway``
object (``from_scenario``: the lowercase fields of lab/simulator/fields.py). The
defaults are the product's (uberllm/settings.py), so both start from the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .candidate import SmartTuning
from .hedge import HEDGE_TRIGGERS

# (attribute, settings key, scenario key): every knob, once
_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("max_attempts", "MAX_ATTEMPTS", "max_attempts"),
    ("exploration_rate", "EXPLORATION_RATE", "exploration_rate"),
    ("tail_weight", "ROUTING_TAIL_WEIGHT", "tail_weight"),
    ("fast_enough_ratio", "ROUTING_FAST_ENOUGH_RATIO", "fast_enough_ratio"),
    ("fast_enough_under_s", "ROUTING_FAST_ENOUGH_UNDER_S", "fast_enough_under_s"),
    ("fast_enough_under_s_long", "ROUTING_FAST_ENOUGH_UNDER_S_LONG", "fast_enough_under_s_long"),
    ("hedge_budget_usd_per_day", "HEDGE_DAILY_BUDGET_USD", "hedge_budget_usd_per_day"),
    ("hedge_budget_burst_s", "HEDGE_BUDGET_BURST_S", "hedge_budget_burst_s"),
    ("hedge_delay_s", "HEDGE_DELAY_S", "hedge_delay_s"),
    ("hedge_trigger", "HEDGE_TRIGGER", "hedge_trigger"),
    ("hedge_late_factor", "HEDGE_LATE_FACTOR", "hedge_late_factor"),
    ("hedge_partner_slack", "HEDGE_PARTNER_SLACK", "hedge_partner_slack"),
    ("hedge_delayed_from_tokens", "HEDGE_DELAYED_FROM_TOKENS", "hedge_delayed_from_tokens"),
    ("hedge_immediate_from_tokens", "HEDGE_IMMEDIATE_FROM_TOKENS", "hedge_immediate_from_tokens"),
    ("unusable_window_s", "UNUSABLE_WINDOW_S", "unusable_window_s"),
    ("unusable_first_window_s", "UNUSABLE_FIRST_WINDOW_S", "unusable_first_window_s"),
    ("followup_turns", "FOLLOWUP_TURNS", "followup_turns"),
    ("first_turn_followups", "ROUTING_FIRST_TURN_FOLLOWUPS", "first_turn_followups"),
    ("speed_window_size", "SPEED_WINDOW_SIZE", "speed_window_size"),
    ("speed_max_age_s", "SPEED_MAX_AGE_S", "speed_max_age_s"),
    ("speed_stale_after_s", "SPEED_STALE_AFTER_S", "speed_stale_after_s"),
    ("concurrency_caps", "ROUTING_CONCURRENCY_CAPS", "concurrency_caps"),
    ("first_token_floor_s", "ROUTING_FIRST_TOKEN_FLOOR_S", "first_token_floor_s"),
    ("first_token_factor", "ROUTING_FIRST_TOKEN_FACTOR", "first_token_factor"),
    ("first_token_timeout_s", "UPSTREAM_FIRST_TOKEN_TIMEOUT_S", "first_token_timeout_s"),
    ("probe_period_s", "PROBE_PERIOD_S", "probe_period_s"),
    ("probe_sizes", "PROBE_SIZES", "probe_sizes"),
    ("probe_by_need", "PROBE_BY_NEED", "probe_by_need"),
    ("tool_call_checks", "ROUTING_TOOL_CALL_CHECKS", "tool_call_checks"),
    ("conversation_horizon", "ROUTING_CONVERSATION_HORIZON", "conversation_horizon"),
    ("move_min_saving", "ROUTING_MOVE_MIN_SAVING", "move_min_saving"),
)


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """Routing knobs (defaults: the product's). ``tuning`` is derived (R2.4/R2.9)."""

    max_attempts: int = 4
    exploration_rate: float = 0.05
    tail_weight: float = 0.0
    fast_enough_ratio: float = 2.0
    fast_enough_under_s: float = 1.0
    fast_enough_under_s_long: float | None = None
    hedge_budget_usd_per_day: float = 5.0
    hedge_budget_burst_s: float = 3_600.0
    hedge_delay_s: float = 1.0  # R3.1's floor: a first token is never late before it
    hedge_trigger: str = "late"  # "late": x hedge_late_factor its typical; "flat": the floor
    hedge_late_factor: float = 2.0
    # 0: the partner is the next fast-enough choice in plan order (the cheapest); > 0: the
    # cheapest whose expected TTFT (stalls included) is within this factor of the best's
    hedge_partner_slack: float = 0.0
    hedge_delayed_from_tokens: int = 32_000
    hedge_immediate_from_tokens: int = 128_000
    unusable_window_s: float = 900.0
    unusable_first_window_s: float = 30.0
    followup_turns: float = 2.0
    first_turn_followups: bool = True
    speed_window_size: int = 50
    speed_max_age_s: float = 6 * 3600.0
    speed_stale_after_s: float = 600.0
    concurrency_caps: bool = True
    first_token_floor_s: float = 20.0
    first_token_factor: float = 4.0
    first_token_timeout_s: float = 180.0
    probe_period_s: float = 300.0
    probe_sizes: tuple[int, ...] = (20_000, 60_000, 150_000)
    probe_by_need: bool = True
    tool_call_checks: bool = True  # O5: laggards get only exploration sends with tools
    conversation_horizon: bool = True  # issue 43: placement by the warm turns (core.horizon)
    move_min_saving: float = 0.2  # O7: a warm conversation moves only when >= 20% cheaper
    tuning: SmartTuning = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.hedge_trigger not in HEDGE_TRIGGERS:
            raise ValueError(f"hedge_trigger must be one of {', '.join(HEDGE_TRIGGERS)}")
        tuning = SmartTuning(
            fast_enough_ratio=self.fast_enough_ratio,
            fast_enough_under_s=self.fast_enough_under_s,
            tail_weight=self.tail_weight,
            fast_enough_under_s_long=self.fast_enough_under_s_long,
            conversation_horizon=self.conversation_horizon,
            move_min_saving=self.move_min_saving,
        )
        object.__setattr__(self, "tuning", tuning)

    @property
    def hedging(self) -> bool:
        """R3 is on while there is a daily hedge budget."""
        return self.hedge_budget_usd_per_day > 0

    @classmethod
    def from_settings(cls, conf: Mapping[str, Any]) -> GatewayConfig:
        """From the live ``settings.UBERLLM`` (missing keys keep the defaults)."""
        return cls._build({name: conf[key] for name, key, _ in _FIELDS if key in conf})

    @classmethod
    def from_scenario(cls, gateway: Mapping[str, Any]) -> GatewayConfig:
        """From a simulator scenario's ``gateway`` object (lab/simulator/fields.py)."""
        return cls._build({name: gateway[key] for name, _, key in _FIELDS if key in gateway})

    @classmethod
    def _build(cls, values: dict[str, Any]) -> GatewayConfig:
        defaults = cls()
        typed = {}
        for name, value in values.items():
            default = getattr(defaults, name)
            typed[name] = typed_like(value, default, name == "fast_enough_under_s_long")
        return cls(**typed)


def typed_like(value: Any, default: Any, optional: bool = False) -> Any:
    """``value`` as the default's type (settings come from the environment as text)."""
    if optional:
        return None if value in (None, "") else float(value)
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, tuple):
        return tuple(int(v) for v in value)
    return type(default)(value)


DEFAULT_CONFIG = GatewayConfig()
