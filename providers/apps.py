from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "Provider catalog"

    def ready(self) -> None:
        from . import checks  # noqa: F401 (registers the system checks)

        # Catalog edits are pushed to every gateway process (docs/operations.md).
        from uberllm import events

        events.connect_signals()
