"""Dashboard forms: the Activity filters, key and member management."""

from __future__ import annotations

from datetime import date

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone

from providers.validators import check_upstream_host

from .models import Activity, Membership
from .selectors import ActivityFilters, api_key_choices, filter_choices
from .services import KEY_LIMIT_FIELDS


class DateInput(forms.DateInput):
    input_type = "date"


# Dates outside this range are typos (and would overflow date arithmetic at year 9999).
EARLIEST, LATEST = date(2000, 1, 1), date(2999, 12, 31)


def _date_field(label: str) -> forms.DateField:
    return forms.DateField(
        required=False,
        label=label,
        widget=DateInput,
        validators=[MinValueValidator(EARLIEST), MaxValueValidator(LATEST)],
    )


# The "status" that lists refused requests (billing.RejectedRequest) instead of calls.
REJECTED = "rejected"


class ActivityFilterForm(forms.Form):
    """GET filters of the Activity page and its CSV export. Choices come from the
    organisation's own data, so another organisation's key id is simply invalid."""

    date_from = _date_field("From")
    date_to = _date_field("To")
    model = forms.ChoiceField(required=False)
    provider = forms.ChoiceField(required=False)
    api_key = forms.ModelChoiceField(
        queryset=None, required=False, label="API key", empty_label="All keys"
    )
    status = forms.ChoiceField(
        required=False,
        choices=[("", "All statuses"), *Activity.Status.choices, (REJECTED, "Rejected (4xx)")],
    )
    request_id = forms.CharField(
        required=False,
        max_length=64,
        label="Request id",
        widget=forms.TextInput(attrs={"placeholder": "gen-…"}),
    )

    def __init__(self, data=None, *, organisation_id: int):
        super().__init__(data)
        choices = filter_choices(organisation_id=organisation_id)
        self.fields["model"].choices = [("", "All models")] + [(m, m) for m in choices["models"]]
        self.fields["provider"].choices = [("", "All providers")] + [
            (p, p) for p in choices["providers"]
        ]
        self.fields["api_key"].queryset = api_key_choices(organisation_id=organisation_id)

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError("'From' is after 'To'.")
        return cleaned

    @property
    def rejected(self) -> bool:
        """The member asked for refused requests, not calls."""
        return self.is_valid() and self.cleaned_data.get("status") == REJECTED

    def filters(self) -> ActivityFilters:
        data = self.cleaned_data
        return ActivityFilters(
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            model=data.get("model") or "",
            provider=data.get("provider") or "",
            api_key_id=data["api_key"].id if data.get("api_key") else None,
            status="" if data.get("status") == REJECTED else data.get("status") or "",
            request_id=(data.get("request_id") or "").strip(),
        )


class UsageRangeForm(forms.Form):
    date_from = _date_field("From")
    date_to = _date_field("To")

    MAX_DAYS = 366  # a longer range shows its most recent MAX_DAYS days

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError("'From' is after 'To'.")
        return cleaned


def _usd_field(label: str) -> forms.DecimalField:
    return forms.DecimalField(
        required=False, min_value=0, max_digits=12, decimal_places=2, label=label,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0", "placeholder": "none"}),
    )  # fmt: skip


def _count_field(label: str) -> forms.IntegerField:
    return forms.IntegerField(
        required=False, min_value=1, max_value=10_000_000, label=label,
        widget=forms.NumberInput(attrs={"min": "1", "placeholder": "none"}),
    )  # fmt: skip


class DateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"


class ApiKeyCreateForm(forms.Form):
    """A new key's name and, optionally, its limits (billing.services.KEY_LIMIT_FIELDS)."""

    name = forms.CharField(max_length=128, strip=True)
    monthly_limit_usd = _usd_field("Monthly limit (USD)")
    daily_limit_usd = _usd_field("Daily limit (USD)")
    expires_at = forms.DateTimeField(required=False, label="Expires (UTC)", widget=DateTimeInput)
    allowed_models = forms.CharField(
        required=False, max_length=2000, label="Allowed models",
        widget=forms.TextInput(attrs={"placeholder": "all (or slugs, comma-separated)"}),
    )  # fmt: skip
    rate_limit_rpm = _count_field("Requests / minute")
    rate_limit_tpm = _count_field("Tokens / minute")
    max_concurrent = _count_field("Calls at once")

    def clean_expires_at(self):

        expires = self.cleaned_data.get("expires_at")
        if expires is not None and expires <= timezone.now():
            raise forms.ValidationError("The expiry must be in the future.")
        return expires

    def clean_allowed_models(self) -> list[str]:
        raw = self.cleaned_data.get("allowed_models") or ""
        slugs = [s.strip() for s in raw.replace("\n", ",").split(",") if s.strip()]
        for slug in slugs:
            if len(slug) > 128 or " " in slug:
                raise forms.ValidationError(f"'{slug[:40]}' is not a model slug.")
        return list(dict.fromkeys(slugs))

    def limits(self) -> dict:
        """The limit fields, for ``api_key_create(**limits)`` (None: not set)."""

        data = self.cleaned_data
        return {name: data.get(name) if name != "allowed_models" else data.get(name) or None
                for name in KEY_LIMIT_FIELDS}  # fmt: skip


class MonthlyLimitForm(forms.Form):
    monthly_limit_usd = forms.DecimalField(
        required=False, min_value=0, max_digits=12, decimal_places=2, label="Monthly limit (USD)"
    )


class OrganisationLimitsForm(forms.Form):
    """The organisation's hard spend limits and its spend-alert webhook (owners)."""

    monthly_limit_usd = _usd_field("Organisation monthly limit (USD)")
    daily_limit_usd = _usd_field("Organisation daily limit (USD)")
    alert_webhook_url = forms.URLField(
        required=False, max_length=500, label="Alert webhook URL", assume_scheme="https"
    )

    def clean_alert_webhook_url(self) -> str:
        """No internal or metadata address (the upstream URL check: alerts are POSTed
        from the platform's network)."""
        from urllib.parse import urlsplit

        url = self.cleaned_data.get("alert_webhook_url") or ""
        if url:
            check_upstream_host(urlsplit(url).hostname or "")
        return url


class MemberInviteForm(forms.Form):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class InvitationSignupForm(UserCreationForm):
    """The invitee's own account: a username and the password they choose."""

    class Meta(UserCreationForm.Meta):
        fields = ("username",)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)
