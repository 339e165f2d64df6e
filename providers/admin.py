from django.contrib import admin

from .admin_tools import CompactEndpointInlineMixin, EndpointToolsMixin, ModelPriceMixin
from .models import Endpoint, Model, Provider


class EndpointInline(CompactEndpointInlineMixin, admin.TabularInline):
    model = Endpoint
    extra = 0
    fields = (
        "provider", "base_url", "credential_env", "context_length", "price_input",
        "price_cache_read", "price_cache_write", "price_output", "cache_ttl_s", "enabled",
    )  # fmt: skip


@admin.register(Model)
class ModelAdmin(ModelPriceMixin, admin.ModelAdmin):
    list_display = ("slug", "name", "list_price_input", "list_price_output", "context_length")
    search_fields = ("slug", "name")
    inlines = [EndpointInline]


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "enabled")
    search_fields = ("slug", "name")


@admin.register(Endpoint)
class EndpointAdmin(EndpointToolsMixin, admin.ModelAdmin):
    list_display = (
        "model", "provider", "price_input", "price_cache_read", "price_output",
        "context_length", "enabled",
    )  # fmt: skip
    list_filter = ("provider", "model", "enabled")
