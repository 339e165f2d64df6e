from django.contrib import admin

from .models import Activity, ApiKey, Attempt, Membership, Organisation


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "created_at")
    inlines = [MembershipInline]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "organisation", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "secret_hash", "created_at", "last_used_at")
    exclude = ()


class AttemptInline(admin.TabularInline):
    model = Attempt
    extra = 0
    can_delete = False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Activity)
class ActivityAdmin(admin.ModelAdmin):
    list_display = (
        "request_id", "organisation", "model_slug", "provider_slug", "status", "cost_usd",
        "ttft_ms", "total_ms", "created_at",
    )  # fmt: skip
    list_filter = ("status", "organisation", "provider_slug")
    inlines = [AttemptInline]

    def has_change_permission(self, request, obj=None) -> bool:
        return False
