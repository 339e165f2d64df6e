"""The catalog's and the upstream client's knobs as one typed value
(``providers_config()``), read from settings.UBERLLM once and again only after a change
(common/config.py)."""

from __future__ import annotations

from dataclasses import dataclass

from common.config import knobs_config


@dataclass(frozen=True, slots=True)
class ProvidersConfig:
    credential_keys: tuple[str, ...] = ()  # Fernet keys, the first encrypts (rotation)
    allow_private_upstreams: bool = False  # loopback/private upstream hosts (the demo, tests)
    upstream_connect_timeout_s: float = 5.0
    upstream_first_token_timeout_s: float = 180.0
    upstream_idle_timeout_s: float = 60.0
    upstream_max_connections: int = 1000
    probe_timeout_s: float = 90.0  # a probe's run (routing/probes.py), an endpoint check's read


providers_config = knobs_config(ProvidersConfig)
