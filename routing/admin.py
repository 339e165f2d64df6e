from decimal import Decimal

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path

from billing.templatetags.dashboard import usd

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

    @admin.display(description="spent")
    def spent(self, obj: HedgeBudgetDay) -> str:
        return usd(obj.spent_usd)

    @admin.display(description="budget")
    def budget(self, obj: HedgeBudgetDay) -> str:
        return usd(obj.budget_usd)

    @admin.display(description="spent")
    def share_spent(self, obj: HedgeBudgetDay) -> str:
        return f"{obj.spent_nanousd / obj.budget_nanousd:.0%}" if obj.budget_nanousd else "-"


@admin.register(ProbeResult)
class ProbeResultAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "endpoint", "prompt_tokens", "status", "ttft_ms", "cost")
    list_filter = ("status", "prompt_tokens", "endpoint__provider", "endpoint__model")

    @admin.display(description="cost (USD)", ordering="cost_usd")
    def cost(self, obj: ProbeResult) -> str:
        return f"${obj.cost_usd.normalize():f}"

    def get_urls(self):
        spend = self.admin_site.admin_view(self.spend_view)
        return [path("spend/", spend, name="routing_proberesult_spend"), *super().get_urls()]

    def spend_view(self, request):
        """Probe spend (platform cost, never billed) per UTC day and model, 30 days."""
        from .health import probe_spend_per_day, probe_spend_today

        if not self.has_view_permission(request):
            raise PermissionDenied
        rows = probe_spend_per_day(days=30)
        context = {
            **self.admin_site.each_context(request),
            "title": "Probe spend per day and model (last 30 days)",
            "opts": self.model._meta,
            "rows": rows,
            "total": sum((row["cost"] for row in rows), Decimal(0)),
            "probes": sum(row["probes"] for row in rows),
            "budget": Decimal(str(settings.UBERLLM.get("PROBE_DAILY_BUDGET_USD", 0) or 0)),
            "today": probe_spend_today(),
        }
        return TemplateResponse(request, "admin/routing/proberesult/spend.html", context)


@admin.register(SpeedSample)
class SpeedSampleAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "endpoint", "bucket", "ttft_ms", "is_probe", "restarts_window")
    list_filter = ("bucket", "is_probe", "endpoint__provider")
