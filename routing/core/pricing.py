"""Price one request's exact token mix (R2.3) and check the customer's max_price (R6.3)."""

from __future__ import annotations

from .options import RoutingOptions
from .types import EndpointInfo, ModelInfo

PER_MILLION = 1_000_000.0


def _token_cost(
    prompt_tokens: int,
    cached_tokens: int,
    output_tokens: int,
    price_input: float,
    price_cache_read: float,
    price_output: float,
) -> float:
    if cached_tokens > prompt_tokens:
        cached_tokens = prompt_tokens
    elif cached_tokens < 0:
        cached_tokens = 0
    uncached = prompt_tokens - cached_tokens
    dollars_per_million = (
        uncached * price_input + cached_tokens * price_cache_read + output_tokens * price_output
    )
    return dollars_per_million / PER_MILLION


def request_cost(
    endpoint: EndpointInfo,
    prompt_tokens: int,
    cached_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
) -> float:
    """USD for this request at ``endpoint``.

    uncached prompt tokens x input price + cached prompt tokens x cache-read price +
    output tokens x output price (per 1M). Token counts are >= 0 (RequestFeatures checks
    them); ``cached_tokens`` is clamped to [0, prompt_tokens]. The router does not know
    how many tokens a provider will write to its cache, so it passes no
    ``cache_write_tokens`` (automatic-cache providers bill them as input); a caller that
    does know passes them: they are part of ``prompt_tokens`` (clamped to what the cache
    reads leave) and priced at the cache-write price instead of the input price. With
    ``cache_write_tokens=0`` the result is exactly the former one.
    """
    cost = _token_cost(
        prompt_tokens,
        cached_tokens,
        output_tokens,
        endpoint.price_input,
        endpoint.price_cache_read,
        endpoint.price_output,
    )
    if cache_write_tokens > 0:
        cached = min(max(cached_tokens, 0), prompt_tokens)
        written = min(cache_write_tokens, prompt_tokens - cached)
        cost += written * (endpoint.price_cache_write - endpoint.price_input) / PER_MILLION
    return cost


def list_price_cost(
    model: ModelInfo, prompt_tokens: int, cached_tokens: int, output_tokens: int
) -> float:
    """USD for this request at the model's official list prices (R2.9).

    A model without a list cache-read price prices cached tokens at the list input price.
    """
    cache_read = model.list_price_cache_read
    return _token_cost(
        prompt_tokens,
        cached_tokens,
        output_tokens,
        model.list_price_input,
        model.list_price_input if cache_read is None else cache_read,
        model.list_price_output,
    )


def worst_case_within_max_price(endpoint: EndpointInfo, options: RoutingOptions) -> bool:
    """R6.3: True when no token of this request can be billed above the customer's caps.

    The prompt cap applies to every prompt-token class (input, cache read, cache write);
    the completion cap applies to the output price. A missing cap does not limit.
    """
    prompt_cap = options.max_price_prompt
    if prompt_cap is not None and (
        endpoint.price_input > prompt_cap
        or endpoint.price_cache_read > prompt_cap
        or endpoint.price_cache_write > prompt_cap
    ):
        return False
    completion_cap = options.max_price_completion
    return completion_cap is None or endpoint.price_output <= completion_cap
