"""UberLLM routing decision core: pure, framework-free, clock and RNG injected.

See docs/routing.md for the rules as implemented.
"""

from .budget import HEDGE_BUDGET_BURST_S, InMemoryHedgeBudget, budget_day, paced_allowance_usd
from .candidate import DEFAULT_TUNING, SmartTuning
from .hedge import HedgeDecision, hedge_partner, hedge_policy
from .marks import UnusableMarks
from .options import RoutingOptions, split_model_suffix
from .plan import plan_route
from .prefix import PrefixCache, prefix_hashes
from .pricing import list_price_cost, request_cost, worst_case_within_max_price
from .retry import (
    FailureVerdict,
    RetryPolicy,
    all_attempts_failed,
    classify_failure,
    is_retryable,
    marks_unusable,
)
from .speed import SpeedBook, SpeedSample, SpeedSummary, SpeedWindow, summarise, typical_ttft
from .timeouts import first_token_timeout_s
from .tokens import OutputEstimator, OutputLengths, TokenEstimator
from .types import (
    BUCKETS,
    Bucket,
    EndpointInfo,
    ModelInfo,
    RequestFeatures,
    RouteChoice,
    RoutePlan,
    RoutingError,
    bucket_for,
)

__all__ = [
    "BUCKETS",
    "DEFAULT_TUNING",
    "HEDGE_BUDGET_BURST_S",
    "Bucket",
    "EndpointInfo",
    "FailureVerdict",
    "HedgeDecision",
    "InMemoryHedgeBudget",
    "ModelInfo",
    "OutputEstimator",
    "OutputLengths",
    "PrefixCache",
    "RequestFeatures",
    "RetryPolicy",
    "RouteChoice",
    "RoutePlan",
    "RoutingError",
    "RoutingOptions",
    "SmartTuning",
    "SpeedBook",
    "SpeedSample",
    "SpeedSummary",
    "SpeedWindow",
    "TokenEstimator",
    "UnusableMarks",
    "all_attempts_failed",
    "bucket_for",
    "budget_day",
    "classify_failure",
    "first_token_timeout_s",
    "hedge_partner",
    "hedge_policy",
    "is_retryable",
    "list_price_cost",
    "marks_unusable",
    "paced_allowance_usd",
    "plan_route",
    "prefix_hashes",
    "request_cost",
    "split_model_suffix",
    "summarise",
    "typical_ttft",
    "worst_case_within_max_price",
]
