"""The provider catalog: providers, models and endpoints (provider x model) with prices.

Prices are USD per 1M tokens, kept as Decimal so billing is exact.
"""

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from .credentials import validate_credential_env
from .protocols.usage import ANTHROPIC, OPENAI, USAGE_DIALECT_CHOICES
from .validators import validate_upstream_url

PRICE = {
    "max_digits": 14,
    "decimal_places": 6,
    "default": Decimal(0),
    "validators": [MinValueValidator(Decimal(0))],
}


class Provider(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Model(models.Model):
    """An LLM sold by one or more providers, e.g. ``deepseek/deepseek-v4.1-flash``."""

    slug = models.CharField(max_length=128, unique=True)
    name = models.CharField(max_length=128)
    description = models.TextField(blank=True)
    context_length = models.PositiveIntegerField(default=131072)
    # The model maker's official list prices (USD per 1M tokens), used by R2.9.
    list_price_input = models.DecimalField(**PRICE)
    list_price_cache_read = models.DecimalField(**PRICE)
    list_price_output = models.DecimalField(**PRICE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        super().clean()
        if self.slug and ModelAlias.objects.filter(name=self.slug).exists():
            raise ValidationError({"slug": f"'{self.slug}' is already a model alias."})


ALIAS_HELP = (
    "Another name clients may send for this model, e.g. Anthropic's claude-sonnet-4-5 "
    "(what Claude Code sends): the request is routed, billed and listed as this model. "
    "Not another model's id or another alias; no ':' or spaces."
)
validate_alias_name = RegexValidator(
    r"^[^\s:]+$", "An alias has no spaces and no ':' (':' starts a suffix such as :nitro)."
)


class ModelAlias(models.Model):
    """A name that resolves to a catalog model on every protocol (issue 45), so clients
    with built-in model ids (Claude Code's ``claude-sonnet-4-5``) reach the catalog."""

    name = models.CharField(
        max_length=128, unique=True, validators=[validate_alias_name], help_text=ALIAS_HELP
    )
    model = models.ForeignKey(Model, on_delete=models.CASCADE, related_name="aliases")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "model aliases"

    def __str__(self) -> str:
        return f"{self.name} -> {self.model.slug}"

    def clean(self) -> None:
        super().clean()
        if self.name and Model.objects.filter(slug=self.name).exists():
            raise ValidationError({"name": f"'{self.name}' is a model's id: not an alias."})


# What an OpenAI-compatible endpoint almost always takes: a new endpoint (admin, import
# without the field) gets these, so a request with tools is not refused everywhere.
DEFAULT_SUPPORTED_PARAMETERS = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "tools",
    "tool_choice",
    "response_format",
)


def default_supported_parameters() -> list[str]:
    return list(DEFAULT_SUPPORTED_PARAMETERS)


PROTOCOL_CHOICES = [
    ("openai_chat", "OpenAI Chat Completions"),
    ("anthropic_messages", "Anthropic Messages"),
]


class Endpoint(models.Model):
    """One provider serving one model: where to call it and what it charges."""

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="endpoints")
    model = models.ForeignKey(Model, on_delete=models.CASCADE, related_name="endpoints")
    base_url = models.CharField(
        max_length=500,
        validators=[validate_upstream_url],
        help_text="The upstream's API base URL, e.g. https://api.example.com/v1 (the "
        "protocol's path is added: /chat/completions or /messages)",
    )
    protocol = models.CharField(
        max_length=32,
        choices=PROTOCOL_CHOICES,
        default="openai_chat",
        help_text="The wire format the upstream speaks (providers/protocols/).",
    )
    usage_dialect = models.CharField(
        max_length=16,
        choices=USAGE_DIALECT_CHOICES,
        default=OPENAI,
        help_text="How the upstream reports usage (providers/protocols/usage.py): its "
        "cached and cache-written tokens are read in this dialect and billed at their "
        "prices. 'No usage': billed from the gateway's own count, marked estimated. An "
        "Anthropic Messages endpoint always reads Anthropic's.",
    )
    upstream_model = models.CharField(
        max_length=128, blank=True, help_text="Model name upstream, if not the catalog slug."
    )
    credential_env = models.CharField(
        max_length=128,
        blank=True,
        validators=[validate_credential_env],
        help_text="Name of an environment variable UBERLLM_PROVIDER_KEY_<NAME> holding this "
        "endpoint's API key (a stored credential wins).",
    )
    # A Fernet token of the credential bound to base_url's origin (providers/credentials.py);
    # never shown, exported or logged. Written through providers.services only.
    credential_encrypted = models.TextField(blank=True, default="", editable=False)
    context_length = models.PositiveIntegerField(default=131072)
    max_output_tokens = models.PositiveIntegerField(null=True, blank=True)
    supported_parameters = models.JSONField(
        default=default_supported_parameters,
        blank=True,
        help_text="Request parameters this endpoint accepts (OpenRouter's names); requests "
        "using tools, response_format or logprobs only go to endpoints that list them.",
    )
    price_input = models.DecimalField(**PRICE)
    price_cache_read = models.DecimalField(**PRICE)
    price_cache_write = models.DecimalField(**PRICE)
    price_output = models.DecimalField(**PRICE)
    cache_ttl_s = models.PositiveIntegerField(default=300)
    # Data policy (OpenRouter's provider.data_collection and provider.zdr): what the
    # provider's terms say it does with prompts and completions. Unknown counts as
    # keeping data, so a customer who asks for privacy never reaches an unvetted host.
    collects_data = models.BooleanField(
        default=True,
        help_text="The provider may store prompts and completions or train on them. "
        'Requests with provider.data_collection = "deny" never go here. Untick only '
        "when its terms say it keeps nothing beyond the call.",
    )
    zdr = models.BooleanField(
        "zero data retention",
        default=False,
        help_text="The provider keeps no prompt or completion after the call (zero data "
        "retention); requests with provider.zdr = true go only to such endpoints.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["model__slug", "provider__slug"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "model"], name="unique_provider_model")
        ]

    def __str__(self) -> str:
        return f"{self.provider.slug} / {self.model.slug}"

    def clean(self) -> None:
        super().clean()
        if self.protocol == "anthropic_messages":
            self.usage_dialect = ANTHROPIC  # the protocol has one usage form
        if self.zdr and self.collects_data:
            message = "A zero-data-retention endpoint collects no data: untick 'collects data'."
            raise ValidationError({"zdr": message})
