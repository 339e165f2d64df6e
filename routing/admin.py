from django.contrib import admin

from .models import HedgeBudgetDay, ProbeResult, SpeedSample


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(HedgeBudgetDay)
class HedgeBudgetDayAdmin(ReadOnlyAdmin):
    """Each UTC day's hedge spend against its budget (R3.4)."""

    list_display = ("day", "spent", "budget", "share_spent", "hedges")

    @admin.display(description="spent (USD)")
    def spent(self, obj: HedgeBudgetDay) -> str:
        return f"{obj.spent_usd:.6f}"

    @admin.display(description="budget (USD)")
    def budget(self, obj: HedgeBudgetDay) -> str:
        return f"{obj.budget_usd:.6f}"

    @admin.display(description="spent")
    def share_spent(self, obj: HedgeBudgetDay) -> str:
        return f"{obj.spent_nanousd / obj.budget_nanousd:.0%}" if obj.budget_nanousd else "-"


@admin.register(ProbeResult)
class ProbeResultAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "endpoint", "prompt_tokens", "status", "ttft_ms", "cost_usd")
    list_filter = ("status", "prompt_tokens", "endpoint__provider")


@admin.register(SpeedSample)
class SpeedSampleAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "endpoint", "bucket", "ttft_ms", "is_probe", "restarts_window")
    list_filter = ("bucket", "is_probe", "endpoint__provider")
