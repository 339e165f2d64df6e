"""Hard filters applied before any ranking (R2.10 provider lists, R6.3 max_price).

Order: context length, required parameters, max_price, the customer's only/ignore,
then the data policy (``data_collection: "deny"``, ``zdr``). The first filter that
leaves nothing raises RoutingError(404) saying why.
"""

from __future__ import annotations

from collections.abc import Sequence

from .options import RoutingOptions
from .pricing import worst_case_within_max_price
from .types import EndpointInfo, ModelInfo, RequestFeatures, RoutingError


def provider_matches(endpoint_slug: str, customer_slug: str) -> bool:
    """A customer slug matches its provider and that provider's variants
    (``deepinfra`` matches ``deepinfra`` and ``deepinfra/turbo``)."""
    return endpoint_slug == customer_slug or endpoint_slug.startswith(customer_slug + "/")


def matches_any(endpoint_slug: str, customer_slugs: Sequence[str]) -> bool:
    return any(provider_matches(endpoint_slug, slug) for slug in customer_slugs)


def fits_context(endpoint: EndpointInfo, features: RequestFeatures) -> bool:
    """The prompt plus the expected output must fit in the endpoint's context."""
    needed = features.prompt_tokens + max(features.expected_output_tokens, 0)
    return needed <= endpoint.context_length


def provider_allowed(endpoint: EndpointInfo, options: RoutingOptions) -> bool:
    slug = endpoint.provider_slug
    if options.only and not matches_any(slug, options.only):
        return False
    return not (options.ignore and matches_any(slug, options.ignore))


def data_policy_allowed(endpoint: EndpointInfo, options: RoutingOptions) -> bool:
    """``data_collection: "deny"``: only endpoints that keep no data; ``zdr``: only
    zero-data-retention endpoints."""
    if options.zdr and not endpoint.zdr:
        return False
    return not (options.deny_data_collection and endpoint.collects_data)


def check_known_providers(
    model: ModelInfo, endpoints: Sequence[EndpointInfo], options: RoutingOptions
) -> None:
    """400 when only/ignore/order names a provider that serves none of the model's endpoints."""
    if not options.named_providers:
        return
    served = sorted({endpoint.provider_slug for endpoint in endpoints})
    unknown = [slug for slug in options.named_providers if not matches_any_served(slug, served)]
    if unknown:
        raise RoutingError(
            400,
            "unknown_provider",
            f"unknown provider(s) for model {model.slug}: {', '.join(dict.fromkeys(unknown))}; "
            f"it is served by: {', '.join(served)}",
        )


def matches_any_served(customer_slug: str, served: Sequence[str]) -> bool:
    return any(provider_matches(slug, customer_slug) for slug in served)


def filter_endpoints(
    model: ModelInfo,
    endpoints: Sequence[EndpointInfo],
    features: RequestFeatures,
    options: RoutingOptions,
) -> list[EndpointInfo]:
    """Every endpoint that may serve this request; raises RoutingError if none."""
    if not endpoints:
        raise RoutingError(404, "no_endpoints", f"model {model.slug} has no endpoints")
    check_known_providers(model, endpoints, options)
    remaining = [endpoint for endpoint in endpoints if fits_context(endpoint, features)]
    if not remaining:
        raise _context_error(model, endpoints, features)
    required = features.required_parameters
    if required:
        capable = [e for e in remaining if required <= e.supported_parameters]
        if not capable:
            raise _parameters_error(model, remaining, required)
        remaining = capable
    if options.max_price_prompt is not None or options.max_price_completion is not None:
        affordable = [e for e in remaining if worst_case_within_max_price(e, options)]
        if not affordable:
            raise _max_price_error(model, options)
        remaining = affordable
    if options.only or options.ignore:
        allowed = [e for e in remaining if provider_allowed(e, options)]
        if not allowed:
            raise _provider_list_error(model, remaining)
        remaining = allowed
    if options.deny_data_collection or options.zdr:
        private = [e for e in remaining if data_policy_allowed(e, options)]
        if not private:
            raise _data_policy_error(model, options)
        remaining = private
    return remaining


def _no_endpoint(model: ModelInfo, code: str, why: str) -> RoutingError:
    """The 404 of a filter that left nothing: "no endpoint of model <slug> <why>"."""
    return RoutingError(404, code, f"no endpoint of model {model.slug} {why}")


def _context_error(
    model: ModelInfo, endpoints: Sequence[EndpointInfo], features: RequestFeatures
) -> RoutingError:
    largest = max(endpoint.context_length for endpoint in endpoints)
    return _no_endpoint(
        model,
        "context_length_exceeded",
        f"fits a prompt of {features.prompt_tokens} tokens plus "
        f"{features.expected_output_tokens} expected output tokens "
        f"(largest context length: {largest})",
    )


def _parameters_error(
    model: ModelInfo, endpoints: Sequence[EndpointInfo], required: frozenset[str]
) -> RoutingError:
    supported_somewhere = frozenset().union(*(e.supported_parameters for e in endpoints))
    missing = sorted(required - supported_somewhere)
    detail = (
        f"supports parameter(s): {', '.join(missing)}"
        if missing
        else f"supports all of: {', '.join(sorted(required))} together"
    )
    return _no_endpoint(model, "unsupported_parameters", detail)


def _max_price_error(model: ModelInfo, options: RoutingOptions) -> RoutingError:
    caps = []
    if options.max_price_prompt is not None:
        caps.append(f"prompt <= ${options.max_price_prompt:g}/1M")
    if options.max_price_completion is not None:
        caps.append(f"completion <= ${options.max_price_completion:g}/1M")
    return _no_endpoint(
        model,
        "max_price_exceeded",
        f"that fits this request is under provider.max_price ({', '.join(caps)})",
    )


def _provider_list_error(model: ModelInfo, remaining: Sequence[EndpointInfo]) -> RoutingError:
    available = sorted({endpoint.provider_slug for endpoint in remaining})
    return _no_endpoint(
        model,
        "no_allowed_provider",
        "left after provider.only/ignore; "
        f"providers that can serve this request: {', '.join(available)}",
    )


def _data_policy_error(model: ModelInfo, options: RoutingOptions) -> RoutingError:
    asked = []
    if options.zdr:
        asked.append("zdr: true")
    if options.deny_data_collection:
        asked.append('data_collection: "deny"')
    return _no_endpoint(
        model,
        "data_policy",
        f"that can serve this request meets provider.{' and provider.'.join(asked)} "
        "(the catalog says every other one keeps data or is not zero-retention)",
    )
