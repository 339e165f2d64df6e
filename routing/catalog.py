"""An in-process snapshot of the provider catalog for the hot path.

The database is the truth; each process reloads the whole (small) catalog at most every
``CATALOG_CACHE_TTL_S`` seconds, so admin edits reach every process within that time
and a chat request costs no catalog query (``CatalogCache`` says when one waits).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from decimal import Decimal

from common.aio import db_call, run_in_background
from providers.credentials import authorization_for
from providers.models import Endpoint, ModelAlias
from providers.protocols import upstream_path, usage_dialect

from .config import live_config
from .core.types import EndpointInfo, ModelInfo
from .request import ChatRequest

PRICE_FIELDS = ("input", "cache_read", "cache_write", "output")


@dataclass(frozen=True, slots=True)
class EndpointRoute:
    """Everything needed to call one endpoint. ``authorization`` is never logged or shown."""

    info: EndpointInfo
    provider_slug: str
    url: str
    upstream_model: str
    authorization: str | None
    prices: dict[str, Decimal]
    cache_ttl_s: int
    protocol: str = "openai_chat"  # the wire format the upstream speaks (providers/protocols)
    usage_dialect: str = "openai"  # how its usage is read (providers/protocols/usage.py)
    provider_name: str = ""  # the provider's display name (OpenRouter's ``provider_name``)

    @property
    def endpoint_id(self) -> int:
        return self.info.endpoint_id

    def __repr__(self) -> str:  # keep the credential out of any repr or log line
        return f"EndpointRoute({self.provider_slug}, {self.url})"


@dataclass(frozen=True, slots=True)
class CatalogModel:
    info: ModelInfo
    endpoints: tuple[EndpointRoute, ...]
    by_id: dict[int, EndpointRoute]
    created: int = 0  # Unix seconds the model entered the catalog (OpenAI's ``created``)
    name: str = ""  # the display name (Anthropic's ``display_name``)
    description: str = ""
    # Other names clients send for it (providers.models.ModelAlias): resolved to this
    # model on every protocol, so the call is routed, billed and listed as ``info.slug``.
    aliases: tuple[str, ...] = ()


def _endpoint_route(endpoint: Endpoint) -> EndpointRoute:
    # The credential and the URL come from the same base_url: authorization_for only
    # returns a credential bound to that base_url's origin (providers/credentials.py).
    prices = {name: getattr(endpoint, f"price_{name}") for name in PRICE_FIELDS}
    info = EndpointInfo(
        endpoint_id=endpoint.id,
        provider_slug=endpoint.provider.slug,
        price_input=float(prices["input"]),
        price_cache_read=float(prices["cache_read"]),
        price_cache_write=float(prices["cache_write"]),
        price_output=float(prices["output"]),
        context_length=endpoint.context_length,
        supported_parameters=frozenset(endpoint.supported_parameters or ()),
        max_output_tokens=endpoint.max_output_tokens,
        collects_data=endpoint.collects_data,
        zdr=endpoint.zdr,
    )
    return EndpointRoute(
        info=info,
        provider_slug=endpoint.provider.slug,
        url=endpoint.base_url.rstrip("/") + upstream_path(endpoint.protocol),
        upstream_model=endpoint.upstream_model or endpoint.model.slug,
        authorization=authorization_for(endpoint),
        prices=prices,
        cache_ttl_s=endpoint.cache_ttl_s,
        protocol=endpoint.protocol,
        usage_dialect=usage_dialect(endpoint.protocol, endpoint.usage_dialect),
        provider_name=endpoint.provider.name or endpoint.provider.slug,
    )


def load_catalog() -> dict[str, CatalogModel]:
    """Read every enabled endpoint of every model, and the models' aliases (sync; two
    queries)."""
    endpoints = Endpoint.objects.filter(enabled=True, provider__enabled=True).select_related(
        "provider", "model"
    )
    grouped: dict[str, list[Endpoint]] = {}
    models = {}
    for endpoint in endpoints:
        grouped.setdefault(endpoint.model.slug, []).append(endpoint)
        models[endpoint.model.slug] = endpoint.model
    aliases: dict[str, list[str]] = {}
    for name, slug in ModelAlias.objects.filter(model__slug__in=list(grouped)).values_list(
        "name", "model__slug"
    ):
        aliases.setdefault(slug, []).append(name)
    catalog = {}
    for slug, rows in grouped.items():
        model = models[slug]
        routes = tuple(_endpoint_route(row) for row in rows)
        info = ModelInfo(
            slug=slug,
            list_price_input=float(model.list_price_input),
            list_price_output=float(model.list_price_output),
            list_price_cache_read=float(model.list_price_cache_read) or None,
        )
        catalog[slug] = CatalogModel(
            info=info,
            endpoints=routes,
            by_id={r.endpoint_id: r for r in routes},
            created=int(model.created_at.timestamp()) if model.created_at else 0,
            name=model.name or slug,
            description=model.description,
            aliases=tuple(sorted(aliases.get(slug, ()))),
        )
    return catalog


def alias_map(catalog: dict[str, CatalogModel]) -> dict[str, str]:
    """alias -> the catalog slug it names."""
    return {alias: slug for slug, model in catalog.items() for alias in model.aliases}


class CatalogCache:
    """Process-local snapshot with a TTL (the refresh interval); concurrent requests
    share one reload.

    Refreshed ahead: from half its TTL on, a request starts a reload in the background
    and goes on with the current snapshot, so under steady traffic no request waits
    for the database. A snapshot's age counts from the start of the read that made it.
    A request waits for a reload only when there is no snapshot yet (cold start, or just
    invalidated), or when it would be refused because of something the snapshot does
    not know while the snapshot is older than the TTL (``reload_if_stale``: a model,
    provider or endpoint added while the process was idle), at most
    ``CATALOG_RELOAD_WAIT_S``. So an edit reaches every process's refusals within the
    TTL, with or without traffic, and an unreachable database leaves the last snapshot
    serving.
    """

    def __init__(self) -> None:
        self._snapshot: dict[str, CatalogModel] = {}
        self._aliases: dict[str, str] = {}  # the snapshot's alias -> slug
        self._expires = 0.0  # past this, the snapshot is stale (older than the TTL)
        self._refresh_at = 0.0  # past this, a request starts a reload in the background
        self._reload_task: asyncio.Task | None = None
        self._loaded = False

    def invalidate(self) -> None:
        """Forget the snapshot: the next request waits for a fresh one."""
        self._expires = self._refresh_at = 0.0
        self._loaded = False

    def snapshot(self) -> dict[str, CatalogModel]:
        return self._snapshot

    def find(self, name: str) -> CatalogModel | None:
        """The snapshot's model with this slug or alias (sync; no reload)."""
        model = self._snapshot.get(name)
        if model is None and (slug := self._aliases.get(name)) is not None:
            model = self._snapshot.get(slug)
        return model

    async def get(self, slug: str) -> CatalogModel | None:
        """The model's routes, by its slug or one of its aliases (the model found says
        its own slug: ``info.slug``). Past half the TTL a reload starts in the
        background; a request waits for it only if there is no snapshot yet, or the name
        is unknown to a stale snapshot (``reload_if_stale``)."""
        if time.monotonic() >= self._refresh_at:
            task = self._start_reload()
            if not self._loaded:
                await asyncio.shield(task)
        model = self.find(slug)
        if model is None and await self.reload_if_stale():
            model = self.find(slug)
        return model

    async def resolve_aliases(self, chat: ChatRequest) -> ChatRequest:
        """``chat`` with every model it names (``model`` and the ``models`` fallbacks)
        that is an alias replaced by its catalog slug, suffix kept: the request is then
        checked against the key's allowed models, routed, billed and answered as the
        catalog model. Unknown names stay as sent (refused later, in the client's
        shape)."""
        names = (chat.body["model"], *chat.fallback_models)
        resolved = []
        for name in names:
            slug, colon, suffix = str(name).partition(":")
            model = await self.get(slug) if slug not in self._snapshot else None
            resolved.append(name if model is None else f"{model.info.slug}{colon}{suffix}")
        if resolved == list(names):
            return chat
        first, fallbacks = resolved[0], tuple(dict.fromkeys(resolved[1:]))
        return replace(
            chat,
            body={**chat.body, "model": first},
            model_slug=first.partition(":")[0],
            fallback_models=tuple(m for m in fallbacks if m != first),
        )

    async def reload_if_stale(self) -> bool:
        """For a request about to be refused (4xx) because of something the snapshot
        does not know: if the snapshot is older than the TTL, wait (at most
        ``CATALOG_RELOAD_WAIT_S``) for one read started within the last TTL. True if a
        new snapshot came (plan the request again), False if the snapshot was fresh, or
        the reload failed or took longer than the wait (the refusal stands)."""
        asked = time.monotonic()
        if asked < self._expires:
            return False
        before = self._snapshot
        try:
            async with asyncio.timeout(live_config().catalog_reload_wait_s):
                while self._expires <= asked and await asyncio.shield(self._start_reload()):
                    pass  # a reload that started before ``asked - TTL``: one more
        except TimeoutError:
            pass
        return self._snapshot is not before

    def _start_reload(self) -> asyncio.Task[bool]:
        task = self._reload_task
        loop = asyncio.get_running_loop()
        if task is None or task.done() or task.get_loop() is not loop:
            task = self._reload_task = run_in_background(self._load())
        return task

    async def _load(self) -> bool:
        """Read the catalog; False if the database failed (after a first success)."""
        ttl = live_config().catalog_cache_ttl_s
        started = time.monotonic()
        try:
            snapshot = await db_call(load_catalog)()
            self._snapshot, self._aliases = snapshot, alias_map(snapshot)
        except Exception:
            if not self._loaded:
                raise
            # Keep serving the last snapshot; try again after a short pause.
            self._refresh_at = time.monotonic() + min(1.0, ttl / 2)
            return False
        self._loaded = True
        self._expires, self._refresh_at = started + ttl, started + ttl / 2
        return True


catalog_cache = CatalogCache()
