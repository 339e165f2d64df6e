"""Dashboard forms: the Activity filters, key and member management."""

from __future__ import annotations

import difflib
import secrets
from datetime import date

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils import timezone

from providers.models import ModelAlias
from providers.validators import check_upstream_host

from .bodies import RETENTION_DAYS_MAX
from .models import Activity, Membership
from .selectors import ActivityFilters, api_key_choices, catalog_model_slugs, filter_choices
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


class DateRangeForm(forms.Form):
    """A range of days, either end open; 'From' may not be after 'To'."""

    date_from = _date_field("From")
    date_to = _date_field("To")

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("date_from"), cleaned.get("date_to")
        if start and end and start > end:
            raise forms.ValidationError("'From' is after 'To'.")
        return cleaned


class ActivityFilterForm(DateRangeForm):
    """GET filters of the Activity page and its CSV export. Choices come from the
    organisation's own data, so another organisation's key id is simply invalid."""

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


class UsageRangeForm(DateRangeForm):
    MAX_DAYS = 366  # a longer range shows its most recent MAX_DAYS days


def _usd_field(label: str) -> forms.DecimalField:
    return forms.DecimalField(
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=2,
        label=label,
        widget=forms.NumberInput(attrs={"step": "0.01", "min": "0", "placeholder": "none"}),
    )


def _count_field(label: str) -> forms.IntegerField:
    return forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10_000_000,
        label=label,
        widget=forms.NumberInput(attrs={"min": "1", "placeholder": "none"}),
    )


class DateTimeInput(forms.DateTimeInput):
    input_type = "datetime-local"


def _slugs(raw: str) -> list[str]:
    """Model slugs from a comma- (or line-) separated field, in order, without repeats."""
    return list(dict.fromkeys(s.strip() for s in raw.replace("\n", ",").split(",") if s.strip()))


def unknown_model_error(slug: str, catalog: list[str]) -> str:
    """Why ``slug`` is refused, with the catalog's closest slugs as suggestions."""
    close = difflib.get_close_matches(slug, catalog, n=3, cutoff=0.6)
    if close:
        return f"'{slug}' is not in the catalog: did you mean {' or '.join(close)}?"
    return f"'{slug}' is not in the catalog (GET /api/v1/models lists every model)."


class ApiKeySettingsForm(forms.Form):
    """Every setting of a key (billing.services.KEY_LIMIT_FIELDS), at creation and after.
    Allowed models must be catalog slugs: a typo would make every call of the key a 403,
    so it is refused with the closest slugs as suggestions."""

    monthly_limit_usd = _usd_field("Monthly limit (USD)")
    daily_limit_usd = _usd_field("Daily limit (USD)")
    expires_at = forms.DateTimeField(required=False, label="Expires (UTC)", widget=DateTimeInput)
    allowed_models = forms.CharField(
        required=False,
        max_length=2000,
        label="Allowed models",
        widget=forms.TextInput(attrs={"placeholder": "all (or slugs, comma-separated)"}),
    )
    rate_limit_rpm = _count_field("Requests / minute")
    rate_limit_tpm = _count_field("Tokens / minute")
    max_concurrent = _count_field("Calls at once")

    def __init__(self, *args, current_expiry=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.current_expiry = current_expiry  # an edit may keep a past expiry as it is

    def clean_expires_at(self):
        expires = self.cleaned_data.get("expires_at")
        unchanged = expires is not None and expires == _to_minute(self.current_expiry)
        if expires is not None and expires <= timezone.now() and not unchanged:
            raise forms.ValidationError("The expiry must be in the future.")
        return self.current_expiry if unchanged else expires

    def clean_allowed_models(self) -> list[str]:
        slugs = _slugs(self.cleaned_data.get("allowed_models") or "")
        if not slugs:
            return []
        catalog = catalog_model_slugs()
        unknown = [slug for slug in slugs if slug not in catalog]
        aliases = dict(
            ModelAlias.objects.filter(name__in=unknown).values_list("name", "model__slug")
        )
        errors = [
            f"'{slug}' is an alias of {aliases[slug]}: allow {aliases[slug]} (a request "
            "naming the alias is checked as the model it names)."
            if slug in aliases
            else unknown_model_error(slug[:128], catalog)
            for slug in unknown
        ]
        if errors:
            raise forms.ValidationError(errors)
        return slugs

    def limits(self) -> dict:
        """The settings, for ``api_key_create(**limits)`` / ``api_key_update`` (None: none)."""
        data = self.cleaned_data
        limits = {name: data.get(name) for name in KEY_LIMIT_FIELDS}
        limits["allowed_models"] = limits["allowed_models"] or None
        return limits

    @classmethod
    def initial_for(cls, api_key) -> dict:
        """A key's settings as the form's initial values."""
        initial = {name: getattr(api_key, name) for name in KEY_LIMIT_FIELDS}
        initial["allowed_models"] = ", ".join(api_key.allowed_models or [])
        if api_key.expires_at:
            initial["expires_at"] = api_key.expires_at.strftime("%Y-%m-%dT%H:%M")
        return initial


def _to_minute(value):
    """A stored expiry as the datetime-local input round-trips it (minutes, no seconds)."""
    return value.replace(second=0, microsecond=0) if value else None


class ApiKeyCreateForm(ApiKeySettingsForm):
    """A new key's name, its settings, and the page's one-time creation token: the same
    form posted twice (a reload after creating) finds its key instead of a second one."""

    name = forms.CharField(max_length=128, strip=True)
    creation_token = forms.CharField(
        required=False, max_length=64, widget=forms.HiddenInput, label="Creation token"
    )
    field_order = ["name"]

    @classmethod
    def fresh(cls) -> ApiKeyCreateForm:
        return cls(initial={"creation_token": secrets.token_urlsafe(24)})


class MonthlyLimitForm(forms.Form):
    monthly_limit_usd = forms.DecimalField(
        required=False, min_value=0, max_digits=12, decimal_places=2, label="Monthly limit (USD)"
    )


class OrganisationLimitsForm(forms.Form):
    """The organisation's hard spend limits, its spend-alert webhook and whether members
    may create keys (owners)."""

    monthly_limit_usd = _usd_field("Organisation monthly limit (USD)")
    daily_limit_usd = _usd_field("Organisation daily limit (USD)")
    alert_webhook_url = forms.URLField(
        required=False, max_length=500, label="Alert webhook URL", assume_scheme="https"
    )
    members_create_keys = forms.BooleanField(required=False, label="Members may create keys")

    def clean_alert_webhook_url(self) -> str:
        """No internal or metadata address (the upstream URL check: alerts are POSTed
        from the platform's network)."""
        from urllib.parse import urlsplit

        url = self.cleaned_data.get("alert_webhook_url") or ""
        if url:
            check_upstream_host(urlsplit(url).hostname or "")
        return url


class BodyLoggingForm(forms.Form):
    """Whether the organisation keeps its calls' request and reply bodies, and for how
    many days (owners; billing.bodies)."""

    log_bodies = forms.BooleanField(
        required=False, label="Keep request and response bodies of calls"
    )
    retention_days = forms.IntegerField(
        min_value=1, max_value=RETENTION_DAYS_MAX, label="Keep them for (days)"
    )

    @classmethod
    def for_organisation(cls, organisation) -> BodyLoggingForm:
        initial = {
            "log_bodies": organisation.log_bodies,
            "retention_days": organisation.body_retention_days,
        }
        return cls(initial=initial)


class MemberInviteForm(forms.Form):
    email = forms.EmailField(max_length=254)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class InvitationSignupForm(UserCreationForm):
    """The invitee's own account: a username and the password they choose."""

    class Meta(UserCreationForm.Meta):
        fields = ("username",)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)
