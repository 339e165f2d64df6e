"""Catalog admin tools: compact endpoint inline, prices with units, supported parameters
as checkboxes, price history (who and when), and the endpoint health page.

Mixins, so providers/admin.py only names them in its class bases."""

from __future__ import annotations

import copy
from decimal import Decimal, InvalidOperation

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from .models import Endpoint

PRICE_UNIT = "USD / 1M tokens"
# OpenAI chat parameters an endpoint may accept. Routing requires the ones in
# routing.request.FILTERING_PARAMETERS from the endpoint when a request uses them.
KNOWN_PARAMETERS = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "n",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "stream_options",
    "reasoning_effort",
    "user",
)
# What a new endpoint supports unless the operator unticks it: what nearly every
# OpenAI-compatible provider serves (logprobs are rarer, so they are opt-in).
DEFAULT_PARAMETERS = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "stream_options",
    "user",
)
PRICE_FIELDS = {
    "price_input": "input",
    "price_cache_read": "cache read",
    "price_cache_write": "cache write",
    "price_output": "output",
    "list_price_input": "list input",
    "list_price_cache_read": "list cache read",
    "list_price_output": "list output",
}
# Input widths as CSS classes (static/providers/admin_tools.css): the CSP allows no
# inline style attributes.
NARROW = {
    "base_url": "w-12",
    "upstream_model": "w-10",
    "credential_env": "w-7",
    "context_length": "w-5",
    "max_output_tokens": "w-5",
    "cache_ttl_s": "w-3",
}


class PriceInput(forms.NumberInput):
    """A price without the six trailing decimals the column stores (0.1, not 0.100000)."""

    def format_value(self, value):
        if value in (None, ""):
            return super().format_value(value)
        try:
            return f"{Decimal(str(value)).normalize():f}"
        except InvalidOperation:
            return super().format_value(value)


class EndpointForm(forms.ModelForm):
    supported_parameters = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        choices=[(p, p) for p in KNOWN_PARAMETERS],
        help_text="OpenAI parameters this endpoint accepts. A request using tools, "
        "tool_choice, response_format or logprobs is only routed to endpoints ticking them.",
    )

    class Meta:
        model = Endpoint
        fields = "__all__"  # noqa: DJ007 (the admin chooses the fields it shows)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name in ("protocol", "usage_dialect"):
            if name in self.fields:
                # A form posted without it (an older script) keeps the endpoint's value.
                self.fields[name].required = False
        field = self.fields.get("supported_parameters")
        if field is None:
            return
        current = list(self.initial.get("supported_parameters") or [])
        extra = [p for p in current if p not in KNOWN_PARAMETERS]  # keep what we don't know
        field.choices = [*field.choices, *((p, p) for p in extra)]
        if self.instance._state.adding and not self.is_bound:
            self.initial["supported_parameters"] = list(DEFAULT_PARAMETERS)

    def clean_protocol(self) -> str:
        return self.cleaned_data.get("protocol") or self.instance.protocol or "openai_chat"

    def clean_usage_dialect(self) -> str:
        return self.cleaned_data.get("usage_dialect") or self.instance.usage_dialect or "openai"

    def save(self, commit: bool = True):
        if self.instance._state.adding and "supported_parameters" not in self.fields:
            # Added from a form without the checkboxes (the inline): the defaults.
            self.instance.supported_parameters = list(DEFAULT_PARAMETERS)
        return super().save(commit)


class CatalogWidgetsMixin:
    """Prices labelled with their unit and narrow inputs."""

    class Media:
        css = {"all": ("providers/admin_tools.css",)}

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if field is None:
            return field
        if db_field.name in PRICE_FIELDS:
            field.label = f"{PRICE_FIELDS[db_field.name]} ($/1M)"
            field.help_text = PRICE_UNIT
            field.widget = PriceInput(attrs={"class": "w-5", "step": "any"})
        elif db_field.name in NARROW:
            css_class = f"{field.widget.attrs.get('class', '')} {NARROW[db_field.name]}"
            field.widget.attrs["class"] = css_class.strip()
        return field


def _price_column(name: str):
    def column(obj) -> str:
        return f"${getattr(obj, name).normalize():f}"

    column.short_description = f"{PRICE_FIELDS[name]} ($/1M)"
    column.admin_order_field = name
    column.__name__ = f"{name}_per_1m"
    return column


class PriceHistoryMixin:
    """Who changed a price: billing.signals writes the PriceChange rows on save."""

    def get_list_display(self, request):
        columns = super().get_list_display(request)
        return [_price_column(c) if c in PRICE_FIELDS else c for c in columns]

    def save_model(self, request, obj, form, change) -> None:
        obj._price_changed_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    def save_formset(self, request, form, formset, change) -> None:
        for inline_form in formset.forms:
            inline_form.instance._price_changed_by = request.user.get_username()
        super().save_formset(request, form, formset, change)

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return (*fields, "price_history") if obj is not None else fields

    @admin.display(description="price history (newest first)")
    def price_history(self, obj) -> str:
        changes = obj.price_changes.all()[:20]
        if not changes:
            return "No change recorded."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>${}</td><td>{}</td></tr>",
            (
                (
                    c.changed_at.strftime("%Y-%m-%d %H:%M:%S UTC"),
                    PRICE_FIELDS.get(c.field, c.field),
                    "—" if c.old_price is None else f"${c.old_price.normalize():f}",
                    f"{c.new_price.normalize():f}",
                    c.changed_by or "(import or shell)",
                )
                for c in changes
            ),
        )
        return format_html(
            '<table class="price-history"><thead><tr><th>when</th><th>price ($/1M)</th>'
            "<th>from</th><th>to</th><th>by</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )


class CompactEndpointInlineMixin(CatalogWidgetsMixin):
    form = EndpointForm

    class Media:
        css = {"all": ("providers/admin_tools.css",)}

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "provider" and field is not None:
            # No add/change/view icons in each row: they wrap under the select.
            widget = field.widget
            widget.can_add_related = widget.can_change_related = False
            widget.can_view_related = widget.can_delete_related = False
        return field

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        # Copies: the declared fields are shared with the form class the change page uses.
        fields = {name: copy.copy(field) for name, field in formset.form.base_fields.items()}
        for form_field in fields.values():
            form_field.help_text = ""  # the unit is in the label; help rows widen the table
        formset.form.base_fields = fields
        return formset


class ModelPriceMixin(CatalogWidgetsMixin, PriceHistoryMixin):
    """For the Model admin: list prices with units and their history."""


class EndpointToolsMixin(CatalogWidgetsMixin, PriceHistoryMixin):
    """For the Endpoint admin: the form above and price history (routing/admin.py adds
    the health page: the catalog never imports routing)."""

    form = EndpointForm
