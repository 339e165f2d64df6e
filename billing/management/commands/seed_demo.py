"""Seed a demo: the demo catalog (pointing at the emulator), a customer organisation
"Demo" whose owner ``demo`` is a plain (non-staff) user with an API key, and a separate
operator account ``operator`` (superuser, no organisation) for the admin."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from billing.keys import parse_key
from billing.models import ApiKey, Organisation
from billing.services import api_key_create, member_add, organisation_create
from providers.services import catalog_import

DEMO_CATALOG = Path(settings.BASE_DIR) / "providers" / "fixtures" / "demo_catalog.json"
# The demo key's plaintext is kept in var/ (git-ignored) so `make run` can print it
# again; the database stores only its hash, like every key.
DEMO_KEY_FILE = Path(settings.VAR_DIR) / "demo_api_key.txt"
CUSTOMER, OPERATOR = "demo", "operator"


def seed_demo(*, emulator_url: str, password: str, operator_password: str) -> str:
    """Create or refresh the demo; returns the demo API key (plaintext)."""
    catalog_import(data=json.loads(DEMO_CATALOG.read_text()), base_url_override=emulator_url)
    organisation = Organisation.objects.filter(slug="demo").first()
    if organisation is None:
        organisation = organisation_create(name="Demo")
    customer = member_add(organisation=organisation, username=CUSTOMER, role="owner")
    customer.set_password(password)
    customer.is_staff = customer.is_superuser = False  # a customer never sees the admin
    customer.save()
    operator, _ = get_user_model().objects.get_or_create(username=OPERATOR)
    operator.set_password(operator_password)
    operator.is_staff = operator.is_superuser = True
    operator.save()
    return _demo_key(organisation)


def _demo_key(organisation) -> str:
    if DEMO_KEY_FILE.exists():
        key = DEMO_KEY_FILE.read_text().strip()
        parsed = parse_key(key)
        if (
            parsed
            and ApiKey.objects.for_organisation(organisation)
            .filter(prefix=parsed.prefix, revoked_at__isnull=True)
            .exists()
        ):
            return key
    _, key = api_key_create(organisation=organisation, name="demo")
    DEMO_KEY_FILE.write_text(key + "\n")
    DEMO_KEY_FILE.chmod(0o600)
    return key


def summary_lines(*, base_url: str, password: str, operator_password: str, key: str) -> list:
    """What to print once the demo is up: who logs in where; the key last."""
    return [
        f"  Customer dashboard  {base_url}/",
        f"      login           {CUSTOMER} / {password}   (owner of organisation Demo)",
        f"  Operator admin      {base_url}/admin/",
        f"      login           {OPERATOR} / {operator_password}   (superuser, no organisation)",
        f"  OpenAI base URL     {base_url}/api/v1",
        f"  Demo API key        {key}",
    ]


class Command(BaseCommand):
    help = "Create the demo catalog, customer 'demo' (org Demo, with a key) and 'operator'."

    def add_arguments(self, parser):
        parser.add_argument("--emulator-url", default="http://127.0.0.1:8100")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--password", default="demo-password")
        parser.add_argument("--operator-password", default="operator-password")

    def handle(self, *args, emulator_url, base_url, password, operator_password, **options):
        key = seed_demo(
            emulator_url=emulator_url, password=password, operator_password=operator_password
        )
        if options["verbosity"]:
            lines = summary_lines(
                base_url=base_url.rstrip("/"),
                password=password,
                operator_password=operator_password,
                key=key,
            )
            self.stdout.write("\n".join(lines))
