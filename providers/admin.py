from django import forms
from django.contrib import admin, messages

from .admin_tools import (
    CompactEndpointInlineMixin,
    EndpointForm,
    EndpointToolsMixin,
    ModelPriceMixin,
)
from .credentials import origin_of, seal
from .endpoint_check import endpoint_check
from .models import Endpoint, Model, ModelAlias, Provider

MAX_TESTED = 10  # test calls run in the admin's request, one after the other
KEEP_HELP = "Write-only: never shown again. Leave blank to keep the stored credential."
HOST_CHANGED = (
    "The base URL's host changed: enter the credential again (a credential is only ever "
    "sent to the host it was entered for), or tick 'Remove stored credential'."
)


class EndpointAdminForm(EndpointForm):
    """The endpoint with a write-only credential: stored encrypted, never rendered back."""

    credential = forms.CharField(
        required=False,
        strip=True,
        max_length=4096,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=KEEP_HELP,
    )
    remove_credential = forms.BooleanField(required=False, label="Remove stored credential")

    class Meta:
        model = Endpoint
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        # Runs before the form's data is copied onto the instance: instance.base_url is
        # still the stored one.
        instance, base_url = self.instance, cleaned.get("base_url")
        keeps_stored = not cleaned.get("credential") and not cleaned.get("remove_credential")
        if (
            keeps_stored
            and base_url
            and instance.credential_encrypted
            and origin_of(base_url) != origin_of(instance.base_url or "")
        ):
            self.add_error("credential", HOST_CHANGED)
        return cleaned

    def save(self, commit: bool = True):
        endpoint = super().save(commit=False)
        secret = self.cleaned_data.get("credential")
        if secret:
            endpoint.credential_encrypted = seal(secret=secret, base_url=endpoint.base_url)
        elif self.cleaned_data.get("remove_credential"):
            endpoint.credential_encrypted = ""
        if commit:
            endpoint.save()
            self.save_m2m()
        return endpoint


@admin.display(description="Credential", boolean=True)
def credential_stored(endpoint: Endpoint) -> bool:
    return bool(endpoint.credential_encrypted)


class EndpointInline(CompactEndpointInlineMixin, admin.TabularInline):
    model = Endpoint
    form = EndpointAdminForm
    extra = 0
    # Credentials, the protocol and the usage dialect are entered on the endpoint's own
    # page, whose list shows them; the inline stays narrow enough for a 1366 px screen
    # (an endpoint added here speaks openai_chat, usage dialect openai, until changed there).
    fields = (
        "provider",
        "base_url",
        "credential_env",
        "context_length",
        "price_input",
        "price_cache_read",
        "price_cache_write",
        "price_output",
        "cache_ttl_s",
        "enabled",
    )


class ModelAliasInline(admin.TabularInline):
    """Other names clients send for the model (Claude Code's claude-sonnet-4-5, ...)."""

    model = ModelAlias
    extra = 0
    fields = ("name",)


@admin.register(Model)
class ModelAdmin(ModelPriceMixin, admin.ModelAdmin):
    list_display = (
        "slug",
        "name",
        "alias_names",
        "list_price_input",
        "list_price_output",
        "context_length",
    )
    search_fields = ("slug", "name", "aliases__name")
    inlines = [EndpointInline, ModelAliasInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("aliases")

    @admin.display(description="Aliases")
    def alias_names(self, model: Model) -> str:
        return ", ".join(alias.name for alias in model.aliases.all())


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "enabled")
    search_fields = ("slug", "name")


@admin.register(Endpoint)
class EndpointAdmin(EndpointToolsMixin, admin.ModelAdmin):
    form = EndpointAdminForm
    list_display = (
        "model",
        "provider",
        "protocol",
        "usage_dialect",
        "price_input",
        "price_cache_read",
        "price_output",
        "context_length",
        credential_stored,
        "collects_data",
        "zdr",
        "enabled",
    )
    list_filter = (
        "provider",
        "model",
        "protocol",
        "usage_dialect",
        "collects_data",
        "zdr",
        "enabled",
    )
    readonly_fields = (credential_stored,)
    actions = ["test_endpoints"]

    @admin.action(description="Test endpoint (one 1-token request)")
    def test_endpoints(self, request, queryset):
        chosen = list(queryset.select_related("provider", "model")[:MAX_TESTED])
        for endpoint in chosen:
            result = endpoint_check(endpoint=endpoint)
            level = messages.SUCCESS if result.ok else messages.ERROR
            self.message_user(request, f"{endpoint}: {result.summary()}", level)
        if queryset.count() > len(chosen):
            self.message_user(request, f"Tested the first {MAX_TESTED} only.", messages.WARNING)
