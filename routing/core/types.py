"""Plain value types exchanged with the routing core (no Django, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Bucket = Literal["<8k", "8k-32k", "32k-128k", ">128k"]

# Prompt-size buckets, lower bound inclusive, k = 1,000 tokens (product.md "Sizes").
BUCKETS: tuple[Bucket, ...] = ("<8k", "8k-32k", "32k-128k", ">128k")
BUCKET_LOWER_BOUND: Mapping[str, int] = MappingProxyType(
    {"<8k": 0, "8k-32k": 8_000, "32k-128k": 32_000, ">128k": 128_000}
)

Strategy = Literal["smart", "customer"]


def bucket_for(prompt_tokens: int) -> Bucket:
    """Return the prompt-size bucket of a prompt of ``prompt_tokens`` tokens."""
    if prompt_tokens < 0:
        raise ValueError(f"prompt_tokens must be >= 0, got {prompt_tokens}")
    if prompt_tokens < 8_000:
        return "<8k"
    if prompt_tokens < 32_000:
        return "8k-32k"
    if prompt_tokens < 128_000:
        return "32k-128k"
    return ">128k"


class RoutingError(Exception):
    """A request the router cannot place: ``status`` is the HTTP status to answer with.

    400 = the request's routing options are invalid, 404 = no endpoint of the model can
    serve this request (capabilities, context, max_price, provider filters),
    503 = endpoints exist but none could serve it now.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"RoutingError({self.status}, {self.code!r}, {self.message!r})"


@dataclass(frozen=True, slots=True)
class EndpointInfo:
    """One provider x model endpoint. Prices are USD per 1M tokens.

    Data policy (the catalog's): ``collects_data`` the provider may store prompts and
    completions or train on them (unknown counts as yes); ``zdr`` it keeps nothing after
    the call (zero data retention)."""

    endpoint_id: int
    provider_slug: str
    price_input: float
    price_cache_read: float
    price_cache_write: float
    price_output: float
    context_length: int
    supported_parameters: frozenset[str] = frozenset()
    max_output_tokens: int | None = None
    collects_data: bool = True
    zdr: bool = False


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model with its official list prices (USD per 1M tokens)."""

    slug: str
    list_price_input: float
    list_price_output: float
    list_price_cache_read: float | None = None


@dataclass(frozen=True, slots=True)
class RequestFeatures:
    """What the router needs to know about one request.

    ``cached_tokens`` maps endpoint_id -> prompt tokens expected to be read from that
    endpoint's prompt cache (missing = 0). ``expected_followup_turns``: in a
    conversation, how many more turns are expected to resend this prompt (as cache reads
    where it is served now); 0 for a single request. ``output_factors``: endpoint_id ->
    how many times the model's usual reply length that endpoint's replies run (learnt,
    ``OutputLengths``; missing = 1), so its output is priced at its length.
    """

    prompt_tokens: int
    expected_output_tokens: int
    cached_tokens: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))
    required_parameters: frozenset[str] = frozenset()
    stream: bool = False
    expected_followup_turns: float = 0.0
    output_factors: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.expected_followup_turns < 0:
            raise ValueError("expected_followup_turns must be >= 0")
        if self.prompt_tokens < 0 or self.expected_output_tokens < 0:
            raise ValueError(
                "prompt_tokens and expected_output_tokens must be >= 0, got "
                f"{self.prompt_tokens} and {self.expected_output_tokens}"
            )


@dataclass(frozen=True, slots=True)
class RouteChoice:
    """One endpoint to try, why, and what this request is expected to cost there.

    ``fast_enough`` is True when the endpoint is usable and its typical TTFT in the
    request's bucket is within the fast-enough rule (used to pick a hedge partner).
    ``model_typical_ttft_s`` is the model's typical TTFT for this request (O8: the median
    of its endpoints' own uncached figures in the bucket), set when some endpoint of the
    plan has no data of its own: the first-token budget of such an endpoint
    (``timeouts.first_token_timeout_s``).
    """

    endpoint: EndpointInfo
    reason: str
    expected_cost_usd: float
    typical_ttft_s: float | None
    fast_enough: bool = False
    model_typical_ttft_s: float | None = None

    @property
    def endpoint_id(self) -> int:
        return self.endpoint.endpoint_id


@dataclass(frozen=True, slots=True)
class RoutePlan:
    """Every eligible endpoint in the order to try it (never empty, never repeats)."""

    choices: tuple[RouteChoice, ...]
    bucket: Bucket
    strategy: Strategy

    @property
    def first(self) -> RouteChoice:
        return self.choices[0]

    @property
    def endpoint_ids(self) -> tuple[int, ...]:
        return tuple(choice.endpoint.endpoint_id for choice in self.choices)
