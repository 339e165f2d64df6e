from datetime import timedelta
from decimal import Decimal

from django import forms
from django.contrib import admin

from common.admin import ReadOnlyAdmin, ReportAdmin

from .models import (
    Activity,
    ApiKey,
    Attempt,
    CreditEntry,
    Membership,
    Organisation,
    PriceChange,
    RejectedRequest,
)
from .selectors import month_start, unscoped_organisation_spend
from .services import credit_entry_create, organisation_set_prepaid
from .templatetags.dashboard import usd


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Organisation)
class OrganisationAdmin(ReportAdmin):
    """Organisations with their spend (read-only columns) and a staff spend report."""

    report_url_name = "billing_organisation_spend"
    report_template = "admin/billing/organisation/spend.html"

    list_display = (
        "slug",
        "name",
        "created_at",
        "calls",
        "spend_month_usd",
        "spend_total_usd",
        "last_call_at",
    )
    search_fields = ("slug", "name")
    inlines = [MembershipInline]
    # credit_total_usd: the sum of its credit entries. Body logging is the customer's
    # owner's choice (their consent to keep prompts): the operator sees it, cannot set it.
    readonly_fields = ("credit_total_usd", "log_bodies", "body_retention_days")

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if change and "prepaid" in form.changed_data:  # the keys carry the flag: drop them
            organisation_set_prepaid(organisation=obj, prepaid=obj.prepaid)

    def get_queryset(self, request):
        return unscoped_organisation_spend().order_by("slug")

    @admin.display(description="calls", ordering="calls")
    def calls(self, obj) -> int:
        return obj.calls

    @admin.display(description="spend this month (USD)", ordering="spend_month")
    def spend_month_usd(self, obj) -> str:
        return usd(obj.spend_month)

    @admin.display(description="spend all time (USD)", ordering="spend_total")
    def spend_total_usd(self, obj) -> str:
        return usd(obj.spend_total)

    @admin.display(description="last call", ordering="last_call_at")
    def last_call_at(self, obj):
        return obj.last_call_at

    def report_context(self, request) -> dict:
        """All organisations' spend: this month, last month, all time (UTC months)."""
        rows = list(unscoped_organisation_spend().order_by("-spend_month", "-spend_total", "slug"))
        totals = {
            name: sum((getattr(row, name) for row in rows), Decimal(0))
            for name in ("spend_month", "spend_last_month", "spend_total")
        }
        totals["calls"] = sum(row.calls for row in rows)
        this_month = month_start()
        return {
            "title": "Spend by organisation",
            "rows": rows,
            "totals": totals,
            "this_month": this_month,
            "last_month": month_start(this_month - timedelta(days=1)),
        }


class CreditEntryForm(forms.ModelForm):
    class Meta:
        model = CreditEntry
        fields = ("organisation", "kind", "amount_usd", "note")

    def clean(self) -> dict:
        data = super().clean()
        amount = data.get("amount_usd")
        if data.get("kind") == CreditEntry.Kind.TOPUP and amount is not None and amount <= 0:
            self.add_error("amount_usd", "A top-up is positive (take credit back by adjustment).")
        if amount == 0:
            self.add_error("amount_usd", "Enter a non-zero amount.")
        return data


@admin.register(CreditEntry)
class CreditEntryAdmin(admin.ModelAdmin):
    """The credit ledger: operators add top-ups and adjustments; entries are never edited
    or deleted (a correction is another entry). Saved through the service, which keeps
    the organisation's credit total and the gateway's key caches in step."""

    list_display = ("created_at", "organisation", "kind", "amount", "note", "created_by")
    list_filter = ("kind", "organisation")
    search_fields = ("note", "organisation__slug")
    form = CreditEntryForm

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="amount (USD)", ordering="amount_usd")
    def amount(self, obj: CreditEntry) -> str:
        return usd(obj.amount_usd)

    def save_model(self, request, obj, form, change) -> None:
        saved = credit_entry_create(
            organisation=obj.organisation,
            amount_usd=obj.amount_usd,
            kind=obj.kind,
            note=obj.note,
            created_by=request.user.get_username(),
        )
        obj.pk, obj.created_at = saved.pk, saved.created_at


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
        "request_id",
        "organisation",
        "model_slug",
        "provider_slug",
        "status",
        "cost",
        "ttft_ms",
        "total_ms",
        "created_at",
    )
    list_filter = ("status", "organisation", "provider_slug")
    inlines = [AttemptInline]

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="cost (USD)", ordering="cost_usd")
    def cost(self, obj: Activity) -> str:
        return usd(obj.cost_usd)


@admin.register(RejectedRequest)
class RejectedRequestAdmin(ReadOnlyAdmin):
    """Chat requests refused with a 4xx before any upstream call."""

    list_display = ("created_at", "organisation", "api_key", "http_status", "code", "model_slug")
    list_filter = ("http_status", "code", "organisation")
    search_fields = ("message", "model_slug")


@admin.register(PriceChange)
class PriceChangeAdmin(ReadOnlyAdmin):
    """Every catalog price change (USD per 1M tokens), with who and when."""

    list_display = ("changed_at", "endpoint", "model", "field", "old", "new", "changed_by")
    list_filter = ("field", "endpoint__provider", "endpoint__model", "model")
    list_select_related = ("endpoint__provider", "endpoint__model", "model")

    @admin.display(description="from ($/1M)")
    def old(self, obj: PriceChange) -> str:
        return "—" if obj.old_price is None else f"${obj.old_price.normalize():f}"

    @admin.display(description="to ($/1M)")
    def new(self, obj: PriceChange) -> str:
        return f"${obj.new_price.normalize():f}"
