from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "Provider catalog"

    def ready(self) -> None:
        # Catalog edits are pushed to every gateway process (docs/operations.md).
        from common import events

        from . import checks  # noqa: F401 (registers the system checks)
        from .signals import connect_catalog_changed

        connect_catalog_changed()
        events.connect_listener_start()
