from decimal import Decimal

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from billing.templatetags.dashboard import usd
from common.admin import ReadOnlyAdmin, ReportAdmin
from providers.admin import EndpointAdmin
from providers.models import Endpoint

from .config import live_config
from .health import endpoint_health, probe_spend_per_day, probe_spend_today
from .models import HedgeBudgetDay, ProbeResult, SpeedSample


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
class ProbeResultAdmin(ReadOnlyAdmin, ReportAdmin):
    report_url_name = "routing_proberesult_spend"
    report_template = "admin/routing/proberesult/spend.html"
    list_display = ("created_at", "endpoint", "prompt_tokens", "status", "ttft_ms", "cost")
    list_filter = ("status", "prompt_tokens", "endpoint__provider", "endpoint__model")

    @admin.display(description="cost (USD)", ordering="cost_usd")
    def cost(self, obj: ProbeResult) -> str:
        return f"${obj.cost_usd.normalize():f}"

    def report_context(self, request) -> dict:
        """Probe spend (platform cost, never billed) per UTC day and model, 30 days."""
        rows = probe_spend_per_day(days=30)
        return {
            "title": "Probe spend per day and model (last 30 days)",
            "rows": rows,
            "total": sum((row["cost"] for row in rows), Decimal(0)),
            "probes": sum(row["probes"] for row in rows),
            "budget": Decimal(str(live_config().probe_daily_budget_usd)),
            "today": probe_spend_today(),
        }


@admin.register(SpeedSample)
class SpeedSampleAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "endpoint", "bucket", "ttft_ms", "is_probe", "restarts_window")
    list_filter = ("bucket", "is_probe", "endpoint__provider")


class EndpointHealthAdmin(EndpointAdmin):
    """The catalog's Endpoint admin with routing's health page for each endpoint: routing
    registers it over the catalog's own, so the catalog never imports routing."""

    def get_list_display(self, request):
        return [*super().get_list_display(request), "health_link"]

    @admin.display(description="health")
    def health_link(self, obj: Endpoint) -> str:
        url = reverse("admin:providers_endpoint_health", args=[obj.pk])
        return format_html('<a href="{}">health</a>', url)

    def get_urls(self):
        health = self.admin_site.admin_view(self.health_view)
        extra = [path("<int:endpoint_id>/health/", health, name="providers_endpoint_health")]
        return [*extra, *super().get_urls()]

    def health_view(self, request, endpoint_id: int):
        if not self.has_view_permission(request):
            raise PermissionDenied
        endpoints = Endpoint.objects.select_related("provider", "model")
        endpoint = get_object_or_404(endpoints, pk=endpoint_id)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Health of {endpoint}",
            "opts": self.model._meta,
            "endpoint": endpoint,
            "health": endpoint_health(endpoint.id),
            "price_changes": endpoint.price_changes.all()[:10],
        }
        return TemplateResponse(request, "admin/providers/endpoint/health.html", context)


admin.site.unregister(Endpoint)
admin.site.register(Endpoint, EndpointHealthAdmin)
