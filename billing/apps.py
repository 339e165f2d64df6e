from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing and tenancy"

    def ready(self) -> None:
        from . import signals

        signals.connect()
