"""``python -m lab.benchmark.seed --emulator-url URL``: prepare the bench database.

Run by ``bench_overhead`` in a child process whose environment selects the database
(``DATABASE_URL``), so the benchmark never touches the default SQLite file. Migrates,
imports a one-model catalog whose only endpoint is the emulator's ``bench`` provider,
clears the previous run's ledger rows and speed samples of that model, creates a fresh
API key of organisation "bench", and prints ``{"api_key": ..., "model": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

MODEL = "bench/echo"
PROVIDER = "bench"
PARAMETERS = ["max_tokens", "temperature", "top_p", "stop", "seed"]


def catalog(emulator_url: str) -> dict:
    """The bench catalog: one model, one endpoint (the emulator's ``bench`` provider)."""
    return {
        "providers": [{"slug": PROVIDER, "name": "Bench emulator", "enabled": True}],
        "models": [
            {
                "slug": MODEL,
                "name": "Bench echo",
                "description": "Overhead benchmark (emulated provider).",
                "context_length": 131072,
                "list_price_input": "0.5",
                "list_price_cache_read": "0.05",
                "list_price_output": "1.5",
                "endpoints": [
                    {
                        "provider": PROVIDER,
                        "base_url": f"{emulator_url}/{PROVIDER}/v1",
                        "upstream_model": "",
                        "credential_env": "",
                        "context_length": 131072,
                        "max_output_tokens": None,
                        "supported_parameters": PARAMETERS,
                        "price_input": "0.2",
                        "price_cache_read": "0.02",
                        "price_cache_write": "0",
                        "price_output": "0.6",
                        "cache_ttl_s": 300,
                        "enabled": True,
                    }
                ],
            }
        ],
    }


def seed(emulator_url: str) -> dict:
    from django.conf import settings
    from django.core.management import call_command

    from billing.models import Activity, ApiKey, Organisation
    from billing.services import api_key_create, organisation_create
    from providers.services import catalog_import
    from routing.models import SpeedSample

    from .database import ensure_database

    ensure_database(settings.DATABASES["default"])
    call_command("migrate", interactive=False, verbosity=0)
    catalog_import(data=catalog(emulator_url))
    organisation = Organisation.objects.filter(slug="bench").first()
    if organisation is None:
        organisation = organisation_create(name="bench")
    # Each run starts from the same state: no speed history, no ledger rows, one key.
    SpeedSample.objects.filter(endpoint__model__slug=MODEL).delete()
    Activity.objects.for_organisation(organisation).delete()
    ApiKey.objects.for_organisation(organisation).delete()
    _, plaintext = api_key_create(organisation=organisation, name="bench")
    return {"api_key": plaintext, "model": MODEL}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.benchmark.seed")
    parser.add_argument("--emulator-url", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")
    os.environ["UBERLLM_ALLOW_PRIVATE_UPSTREAMS"] = "true"
    import django

    django.setup()
    json.dump(seed(args.emulator_url), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
