from django.apps import AppConfig


class LabConfig(AppConfig):
    """The lab: the market simulator, benchmarks, load and fault tools, the provider
    emulator and the fleet tools. It may import the product; the product never imports it.
    """

    name = "lab"
    verbose_name = "UberLLM lab"
