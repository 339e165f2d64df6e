import json

from django.core.management.base import BaseCommand

from providers.services import catalog_export


class Command(BaseCommand):
    help = "Print the provider catalog as JSON (import it again with import_catalog)."

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args, output=None, **options):
        text = json.dumps(catalog_export(), indent=2)
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
        else:
            self.stdout.write(text)
