"""The catalog's and the upstream client's knobs as one typed value
(``providers_config()``), read from settings.UBERLLM once and again only after a change
(common/config.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.config import settings_config


@dataclass(frozen=True, slots=True)
class ProvidersConfig:
    credential_keys: tuple[str, ...] = ()  # Fernet keys, the first encrypts (rotation)
    allow_private_upstreams: bool = False  # loopback/private upstream hosts (the demo, tests)
    upstream_connect_timeout_s: float = 5.0
    upstream_first_token_timeout_s: float = 180.0
    upstream_idle_timeout_s: float = 60.0
    upstream_max_connections: int = 1000
    probe_timeout_s: float = 90.0  # a probe's run (routing/probes.py), an endpoint check's read

    @classmethod
    def from_settings(cls, conf: Mapping[str, Any]) -> ProvidersConfig:
        return cls(
            credential_keys=tuple(conf.get("CREDENTIAL_KEYS") or ()),
            allow_private_upstreams=bool(conf.get("ALLOW_PRIVATE_UPSTREAMS")),
            upstream_connect_timeout_s=float(conf["UPSTREAM_CONNECT_TIMEOUT_S"]),
            upstream_first_token_timeout_s=float(conf["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"]),
            upstream_idle_timeout_s=float(conf["UPSTREAM_IDLE_TIMEOUT_S"]),
            upstream_max_connections=int(conf["UPSTREAM_MAX_CONNECTIONS"]),
            probe_timeout_s=float(conf["PROBE_TIMEOUT_S"]),
        )


providers_config = settings_config(ProvidersConfig.from_settings)
