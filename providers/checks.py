"""System checks: ``check --deploy`` refuses the development credential key; ``migrate``
refuses a database part-way through the migrations a squash replaced."""

from __future__ import annotations

from django.core.checks import Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from common.squashed_migrations import partly_applied_squashes
from providers.config import providers_config

from .credentials import _fernet, credential_keys_configured


@register(Tags.security, deploy=True)
def credential_keys_check(app_configs=None, **kwargs) -> list:
    if not credential_keys_configured():
        return [
            Warning(
                "UBERLLM_CREDENTIAL_KEYS is not set: provider credentials are encrypted "
                "with a key derived from DJANGO_SECRET_KEY (development only).",
                hint="Set UBERLLM_CREDENTIAL_KEYS to a key from Fernet.generate_key().",
                id="providers.W001",
            )
        ]
    try:
        _fernet()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="providers.E001")]
    if providers_config().allow_private_upstreams:
        return [
            Warning(
                "UBERLLM_ALLOW_PRIVATE_UPSTREAMS is on: upstreams may be internal addresses.",
                id="providers.W002",
            )
        ]
    return []


@register(Tags.database)
def squashed_migrations_check(app_configs=None, databases=None, **kwargs) -> list:
    return [
        Error(
            line,
            hint="Migrate this database on the last release before the squash (093dc4d) first: "
            "docs/operations.md, 'Upgrading across the migration squash'.",
            id="providers.E002",
        )
        for alias in databases or []
        for line in partly_applied_squashes(connections[alias])
    ]
