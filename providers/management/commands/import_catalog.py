import json

from django.core.management.base import BaseCommand, CommandError

from providers.services import catalog_import


class Command(BaseCommand):
    help = "Create or update the provider catalog from a JSON file (see export_catalog)."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument(
            "--emulator-url", help="Replaces {emulator} in endpoint base URLs (demo catalog)."
        )

    def handle(self, *args, file, emulator_url=None, **options):
        try:
            with open(file, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"cannot read {file}: {exc}") from exc
        counts = catalog_import(data=data, base_url_override=emulator_url)
        self.stdout.write(self.style.SUCCESS(f"imported {counts}"))
