import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from providers.openrouter_catalog import import_openrouter, is_endpoints, is_models_list
from providers.services import catalog_import


def _read(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, json.JSONDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc


class Command(BaseCommand):
    help = (
        "Create or update the provider catalog from a JSON file: the export_catalog format, "
        "or OpenRouter's /api/v1/models list (detected, or --openrouter) with optional "
        "/models/{author}/{slug}/endpoints answers (--endpoints, repeatable)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("file")
        parser.add_argument(
            "--emulator-url", help="Replaces {emulator} in endpoint base URLs (demo catalog)."
        )
        parser.add_argument(
            "--openrouter", action="store_true", help="FILE is OpenRouter's /models list."
        )
        parser.add_argument(
            "--endpoints",
            action="append",
            default=[],
            metavar="FILE",
            help="An OpenRouter /models/{author}/{slug}/endpoints answer (repeatable).",
        )

    def handle(self, *args, file, emulator_url=None, openrouter=False, endpoints=(), **options):
        data = _read(file)
        if openrouter or is_models_list(data) or endpoints:
            counts = self._openrouter(data, [_read(path) for path in endpoints])
        else:
            counts = catalog_import(data=data, base_url_override=emulator_url)
        self.stdout.write(self.style.SUCCESS(f"imported {counts}"))

    def _openrouter(self, data: Any, answers: list[Any]) -> dict[str, int]:
        if not is_models_list(data):
            raise CommandError("FILE is not OpenRouter's /models list ({'data': [...]}).")
        if bad := [i for i, answer in enumerate(answers) if not is_endpoints(answer)]:
            raise CommandError(f"--endpoints #{bad[0] + 1} is not an /endpoints answer.")
        return import_openrouter(data, answers)
