"""Seed a demo: the demo catalog (pointing at the emulator), an organisation, a user, a key."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from billing.keys import parse_key
from billing.models import ApiKey, Organisation
from billing.services import api_key_create, member_add, organisation_create
from providers.services import catalog_import

DEMO_CATALOG = Path(settings.BASE_DIR) / "providers" / "fixtures" / "demo_catalog.json"
# The demo key's plaintext is kept in var/ (git-ignored) so `make run` can print it
# again; the database stores only its hash, like every key.
DEMO_KEY_FILE = Path(settings.VAR_DIR) / "demo_api_key.txt"


class Command(BaseCommand):
    help = "Create the demo catalog, organisation 'Demo', user 'demo' and an API key."

    def add_arguments(self, parser):
        parser.add_argument("--emulator-url", default="http://127.0.0.1:8100")
        parser.add_argument("--password", default="demo-password")

    def handle(self, *args, emulator_url, password, **options):
        import json

        catalog_import(data=json.loads(DEMO_CATALOG.read_text()), base_url_override=emulator_url)
        organisation = Organisation.objects.filter(slug="demo").first()
        if organisation is None:
            organisation = organisation_create(name="Demo")
        user = member_add(organisation=organisation, username="demo", role="owner")
        user.set_password(password)
        user.is_staff = user.is_superuser = True
        user.save()
        key = self._demo_key(organisation)
        self.stdout.write(f"Dashboard: http://127.0.0.1:8000/  login: demo / {password}")
        self.stdout.write(f"Demo API key: {key}")

    def _demo_key(self, organisation) -> str:
        if DEMO_KEY_FILE.exists():
            key = DEMO_KEY_FILE.read_text().strip()
            parsed = parse_key(key)
            if (
                parsed
                and ApiKey.objects.filter(
                    prefix=parsed.prefix, organisation=organisation, revoked_at__isnull=True
                ).exists()
            ):
                return key
        _, key = api_key_create(organisation=organisation, name="demo")
        DEMO_KEY_FILE.write_text(key + "\n")
        DEMO_KEY_FILE.chmod(0o600)
        return key
