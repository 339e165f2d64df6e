"""Tenancy (organisations, members, API keys) and the ledger (Activity, Attempt).

Every model of one organisation's data is ``TenantData``: ``Model.objects`` runs only
when scoped with ``.for_organisation(org)``; ``Model.unscoped_objects`` is the named
way across tenants (billing/tenancy.py, docs/security.md "The tenancy gate")."""

from decimal import Decimal

from django.conf import settings
from django.db import models

from .tenancy import MembershipManager, TenantData


class Organisation(models.Model):
    name = models.CharField(max_length=128)
    slug = models.SlugField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Hard spend limits of the whole organisation (every key's calls count), USD per
    # calendar month / UTC day; None = no limit (docs/security.md, "Spend and rate limits").
    monthly_limit_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    daily_limit_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    # Where spend alerts (80% / 100% of a limit) are POSTed as JSON, besides the owners' email.
    alert_webhook_url = models.URLField(max_length=500, blank=True)
    # Owners and admins create API keys; members too when this is on (docs/dashboard.md).
    members_create_keys = models.BooleanField(default=False)
    # Prepaid (docs/security.md, "Prepaid credits"): calls draw on the balance (credits
    # minus all-time spend) and a request it cannot cover is a 402. Off: post-paid.
    prepaid = models.BooleanField(default=False)
    # The sum of the organisation's CreditEntry amounts, kept in step by
    # billing.services.credit_entry_create: the limit of the credit budget, travels with
    # the key (billing.auth) so the request path reads nothing new.
    credit_total_usd = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal(0))
    # Opt-in body logging (docs/dashboard.md, "Request and response bodies"): the owner
    # switches on keeping each call's request and reply (redacted, capped), for
    # ``body_retention_days`` days. Travels with the key (billing.auth).
    log_bodies = models.BooleanField(default=False)
    body_retention_days = models.PositiveSmallIntegerField(default=7)

    def __str__(self) -> str:
        return self.slug


class Membership(TenantData):
    class Role(models.TextChoices):
        OWNER = "owner"  # everything: members, organisation limits, keys
        ADMIN = "admin"  # API keys (create, edit, revoke)
        MEMBER = "member"  # reads; creates keys if the organisation allows it

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)

    unscoped_objects = models.Manager()  # first: stays the default manager
    objects = MembershipManager()  # the gate, plus .for_user(user)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "user"], name="unique_member")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.organisation} ({self.role})"

    @property
    def manages_keys(self) -> bool:
        """Owners and admins create, edit and revoke the organisation's API keys."""
        return self.role in (self.Role.OWNER, self.Role.ADMIN)

    @property
    def creates_keys(self) -> bool:
        """Members create keys too when the organisation allows it."""
        return self.manages_keys or self.organisation.members_create_keys


class ApiKey(TenantData):
    """A customer API key: ``ullm_<prefix>_<secret>``; only a hash of the secret is stored."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=128)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    monthly_limit_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    daily_limit_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)  # from then on: 401
    # Model slugs this key may call (empty: every model); another model is a 403.
    allowed_models = models.JSONField(default=list, blank=True)
    # Rate limits (None: none): requests and tokens per minute, calls in flight at once.
    rate_limit_rpm = models.PositiveIntegerField(null=True, blank=True)
    rate_limit_tpm = models.PositiveIntegerField(null=True, blank=True)
    max_concurrent = models.PositiveIntegerField(null=True, blank=True)
    # The create form's one-time token (post/redirect/get): a re-posted form finds its
    # key instead of creating a second one.
    creation_token = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "creation_token"],
                condition=~models.Q(creation_token=""),
                name="unique_key_creation_token",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Activity(TenantData):
    """Exactly one row per chat request, created on acceptance and finished in every outcome."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCESS = "success"
        ERROR = "error"
        CANCELLED = "cancelled"

    request_id = models.CharField(max_length=64, unique=True)
    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="activities"
    )
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True)
    model_slug = models.CharField(max_length=128)
    endpoint = models.ForeignKey(
        "providers.Endpoint", on_delete=models.SET_NULL, null=True, blank=True
    )
    provider_slug = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    stream = models.BooleanField(default=False)
    prompt_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal(0))
    usage_estimated = models.BooleanField(default=False)
    # The serving endpoint's prices (USD per 1M) at the time of the call: history is
    # never rewritten by a later price change.
    prices = models.JSONField(default=dict, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    total_ms = models.PositiveIntegerField(null=True, blank=True)
    attempt_count = models.PositiveSmallIntegerField(default=0)
    # R3: a second provider raced this call; the loser's cost went to the hedge budget.
    hedged = models.BooleanField(default=False)
    hedge_cost_usd = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal(0))
    routing_strategy = models.CharField(max_length=16, blank=True)
    routing_reason = models.CharField(max_length=128, blank=True)
    prompt_bucket = models.CharField(max_length=16, blank=True)
    # Savings (docs/savings.md): what the same tokens would have cost at the model's
    # list prices and at the cheapest-input route, both at the prices in force when the
    # call finished. Null when unknown (no tokens, or rows older than these fields).
    reference_prices = models.JSONField(default=dict, blank=True)
    list_cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    cheapest_cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True)
    created_at = models.DateTimeField(db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A call in flight checkpoints its row every LEDGER_HEARTBEAT_S (with the tokens
    # delivered so far), so the reconciler closes a dead process's rows within minutes,
    # billing what was delivered (docs/security.md "Partial calls").
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The Activity list's first pages and filters (docs/operations.md, "Activity at
        # 10 million rows"): newest first within the organisation, then by filter.
        indexes = [
            models.Index(fields=["organisation", "-created_at", "-id"], name="activity_org_newest"),
            models.Index(
                fields=["organisation", "status", "-created_at"], name="activity_org_status"
            ),
            models.Index(
                fields=["organisation", "model_slug", "provider_slug", "-created_at"],
                name="activity_org_model",
            ),
            models.Index(
                fields=["organisation", "provider_slug", "-created_at"],
                name="activity_org_provider",
            ),
            models.Index(fields=["api_key", "created_at"]),  # a key's monthly spend
            # The reconciler's scan: only the (few) pending rows, whatever the table size.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="pending"),
                name="activity_pending_created",
            ),
        ]
        verbose_name_plural = "activities"

    def __str__(self) -> str:
        return self.request_id

    def prices_decimal(self) -> dict[str, Decimal]:
        """The prices used for this call (USD per 1M), as Decimals."""
        return {name: Decimal(value) for name, value in self.prices.items()}


class Attempt(TenantData):
    """One upstream attempt of a request (retries and hedge legs included)."""

    tenant_field = "activity__organisation_id"

    activity = models.ForeignKey(Activity, on_delete=models.CASCADE, related_name="attempts")
    attempt_no = models.PositiveSmallIntegerField()
    endpoint = models.ForeignKey(
        "providers.Endpoint", on_delete=models.SET_NULL, null=True, blank=True
    )
    provider_slug = models.CharField(max_length=64)
    outcome = models.CharField(max_length=32)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    reason = models.CharField(max_length=128, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    hedge_leg = models.BooleanField(default=False)
    # What this attempt cost the platform (a hedge loser's cost; never billed).
    platform_cost_usd = models.DecimalField(max_digits=20, decimal_places=10, default=Decimal(0))

    class Meta:
        ordering = ["attempt_no"]
        constraints = [
            models.UniqueConstraint(fields=["activity", "attempt_no"], name="unique_attempt_no")
        ]

    def __str__(self) -> str:
        return f"attempt {self.attempt_no} at {self.provider_slug}: {self.outcome}"


class Invitation(TenantData):
    """An owner's invitation to join an organisation: accepted once, before it expires,
    through a signed link (billing/invitations.py); only a hash of its secret is stored."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Membership.Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    secret_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invitation of {self.email} to {self.organisation} ({self.role})"


class RejectedRequest(TenantData):
    """A chat request the gateway refused with a 4xx before any upstream call (bad input,
    unknown model, spend limit...). Shown on Activity under "rejected": no tokens, $0."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, null=True, blank=True, related_name="rejections"
    )
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True)
    http_status = models.PositiveSmallIntegerField()
    code = models.CharField(max_length=64, blank=True)
    message = models.TextField(blank=True)
    model_slug = models.CharField(max_length=128, blank=True)
    # The request field the error is about (the OpenAI error's "param"), if any.
    param = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organisation", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.http_status} {self.code} at {self.created_at:%Y-%m-%d %H:%M:%S}"


def _price_changes_of(to: str) -> models.ForeignKey:
    """A price change's link to the catalog object whose price it is (one of them set)."""
    return models.ForeignKey(
        to, on_delete=models.CASCADE, null=True, blank=True, related_name="price_changes"
    )


class PriceChange(models.Model):
    """One change of a catalog price (USD per 1M tokens): an endpoint's prices or a
    model's list prices, with who made it and when. Written on every save that changes
    a price (admin, import); the first row of an object is its initial price."""

    endpoint = _price_changes_of("providers.Endpoint")
    model = _price_changes_of("providers.Model")
    field = models.CharField(max_length=32)
    old_price = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    new_price = models.DecimalField(max_digits=14, decimal_places=6)
    changed_by = models.CharField(max_length=150, blank=True)
    changed_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    def __str__(self) -> str:
        return f"{self.field}: {self.old_price} -> {self.new_price}"


class SpendAlert(TenantData):
    """A spend limit reached 80% or 100% in one period: one row per (scope, period,
    threshold), so it is sent once; delivered by email and webhook from Celery."""

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="spend_alerts"
    )
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, null=True, blank=True)
    scope = models.CharField(max_length=32)  # "org:<id>" or "key:<id>"
    period = models.CharField(max_length=8)  # "month" or "day"
    period_start = models.DateTimeField()
    threshold = models.PositiveSmallIntegerField()  # 80 or 100 (percent)
    limit_usd = models.DecimalField(max_digits=12, decimal_places=2)
    spent_usd = models.DecimalField(max_digits=20, decimal_places=10)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivery_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "period", "period_start", "threshold"], name="unique_spend_alert"
            )
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.period} {self.threshold}%"


class UsageSums(models.Model):
    """What a rollup row sums: calls, spend, tokens, estimated calls and the savings."""

    calls = models.BigIntegerField()
    cost_usd = models.DecimalField(max_digits=24, decimal_places=10)
    prompt_tokens = models.BigIntegerField()
    cached_tokens = models.BigIntegerField()
    completion_tokens = models.BigIntegerField()
    estimated = models.BigIntegerField()  # calls whose usage was estimated
    # Savings sums, as billing.selectors.common.savings_sums (null when no call knew them).
    list_cost_usd = models.DecimalField(max_digits=24, decimal_places=10, null=True)
    cost_with_list_usd = models.DecimalField(max_digits=24, decimal_places=10, null=True)
    cheapest_cost_usd = models.DecimalField(max_digits=24, decimal_places=10, null=True)
    cost_with_cheapest_usd = models.DecimalField(max_digits=24, decimal_places=10, null=True)

    class Meta:
        abstract = True


class UsageDaily(TenantData, UsageSums):
    """Activity pre-aggregated per organisation, UTC day, key, model, provider and status
    (docs/operations.md, "Activity at 10 million rows"). Built by ``billing.rollups`` for
    days that can no longer change; the dashboard reads these for the days up to
    ``UsageRollupState.through_day`` and the Activity rows for the days after."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    api_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, related_name="+")
    model_slug = models.CharField(max_length=128)
    provider_slug = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16)
    # A month's row (``day`` is its first day): the sum of that month's daily rows, read
    # instead of them when a range covers the whole month. For the month in progress,
    # ``day`` is the last day summed (UsageRollupState.month_to_date, "month to date").
    monthly = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["organisation", "monthly", "day"], name="usagedaily_org_day"),
            models.Index(fields=["api_key", "monthly", "day"], name="usagedaily_key_day"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.model_slug} {self.provider_slug} {self.status}: {self.calls}"


class UsageDayTotal(TenantData, UsageSums):
    """An organisation's calls, spend, tokens and savings sums of one UTC day, whatever the
    key, model, provider or status: ``UsageDaily``'s rows of that day added up, for the
    Usage page's per-day chart (one row a day instead of ~hundreds). Built with them by
    ``billing.rollups.rollup_day``; daily only (no monthly rows)."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["organisation", "day"], name="usagedaytotal_org_day")
        ]

    def __str__(self) -> str:
        return f"{self.day}: {self.calls}"


class TtftDaily(TenantData):
    """How many calls of an organisation had each (rounded) time to first token, per UTC
    day, serving provider and prompt bucket: the TTFT percentiles of the Usage page
    without reading every call. ``ttft_ms`` is rounded to two significant digits (values
    under 100 ms exact), so a percentile is within 5 % of the exact one."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    provider_slug = models.CharField(max_length=64)
    prompt_bucket = models.CharField(max_length=16)
    ttft_ms = models.PositiveIntegerField()
    calls = models.BigIntegerField()
    monthly = models.BooleanField(default=False)  # as UsageDaily.monthly

    class Meta:
        indexes = [
            models.Index(fields=["organisation", "monthly", "day"], name="ttftdaily_org_day")
        ]

    def __str__(self) -> str:
        return (
            f"{self.day} {self.provider_slug} {self.prompt_bucket} {self.ttft_ms} ms: {self.calls}"
        )


class UsageRollupState(models.Model):
    """One row: the last UTC day whose rollups are built (null: none yet), the first day
    of the last month whose monthly rows are built (null: none), the last day of the
    month-to-date rows (``monthly=True`` rows whose ``day`` is not a first of month:
    the month in progress up to that day; null: none to read) and the first day whose
    Activity rows are not archived (null: none archived; ``billing.retention``)."""

    through_day = models.DateField(null=True)
    months_through = models.DateField(null=True)
    month_to_date = models.DateField(null=True)
    archived_before = models.DateField(null=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"rolled through {self.through_day}"


class CreditEntry(TenantData):
    """One line of an organisation's credit ledger: an operator's top-up or adjustment
    (negative to take credit back). Append-only: a mistake is corrected by another
    entry, never by editing one (billing/admin.py allows adding only)."""

    class Kind(models.TextChoices):
        TOPUP = "topup", "top-up"
        ADJUSTMENT = "adjustment"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="credit_entries"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.TOPUP)
    amount_usd = models.DecimalField(max_digits=20, decimal_places=10)
    note = models.CharField(max_length=255, blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "credit entries"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.amount_usd} at {self.created_at:%Y-%m-%d}"


class CallBody(TenantData):
    """The request and reply of one call, kept when its organisation opted in
    (``Organisation.log_bodies``): redacted of key-like strings and capped at
    ``BODY_MAX_CHARS`` each (billing.bodies). Written by the gateway's background writer
    after the call; found by the call's request id; deleted after the organisation's
    ``body_retention_days``. Not in the admin: only the organisation's members see it."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE, related_name="+")
    request_id = models.CharField(max_length=64, unique=True)
    request_body = models.TextField(blank=True)
    response_body = models.TextField(blank=True)
    request_truncated = models.BooleanField(default=False)
    response_truncated = models.BooleanField(default=False)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["organisation", "created_at"], name="callbody_org_created")]

    def __str__(self) -> str:
        return f"bodies of {self.request_id}"
