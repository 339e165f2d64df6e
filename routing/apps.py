from django.apps import AppConfig


def drop_catalog_snapshot(_payload: dict) -> None:
    """Another process edited the catalog: reload this process's snapshot."""
    from .catalog import catalog_cache

    catalog_cache.invalidate()


class RoutingConfig(AppConfig):
    name = "routing"
    verbose_name = "Routing"

    def ready(self) -> None:
        from common import events

        events.register(events.CATALOG_CHANGED, drop_catalog_snapshot)
